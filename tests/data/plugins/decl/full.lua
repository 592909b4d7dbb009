-- kplab-api: 1
-- Every optional field, well-formed.
local function mean(values)
  local sum = 0
  for _, v in ipairs(values) do sum = sum + v end
  return #values > 0 and sum / #values or 0
end

return kp.metric {
  name = "full",
  version = "1.2.3",
  doc = "Counts predictions.",
  params = { k = 5, mode = "exact", strict = true },
  needs = { "source", "embeddings", "source" },
  score = function(doc, p, ctx)
    kp.log("k is", p.k)
    return { n = p.k * 2 }
  end,
  aggregate = function(columns, p, ctx) return { n = mean(columns.n) } end,
}
