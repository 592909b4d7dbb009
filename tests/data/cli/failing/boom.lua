-- kplab-api: 1
local function explode(doc)
  if doc.id == "3" then
    error("no luck with document " .. doc.id)
  end
  return { ["all.ok"] = 1 }
end

return kp.metric {
  name = "boom",
  version = "0.1.0",
  score = function(doc) return explode(doc) end,
}
