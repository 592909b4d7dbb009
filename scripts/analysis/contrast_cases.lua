-- Contrast cases (the SemR-p paper's section 5.5): the documents where two metrics disagree most,
-- printed with their references and top predictions, for qualitative reading. Disagreement is the
-- difference of the two per-document scores (both in [0, 1] for the shipped metrics).
-- kplab run scripts/analysis/contrast_cases.lua [--db FILE] [--runs LIST] [--out DIR]
--   [--a all.semrp] [--b all.f1@M] [--top 3] [--show 10]
local C = kp.include("common.lua")

local o = C.parse_args(arg, { a = "all.semrp", b = "all.f1@M", top = "3", show = "10" },
  "kplab run scripts/analysis/contrast_cases.lua [options]\n" ..
  "  --a M, --b M     the two metrics (default all.semrp and all.f1@M)\n" ..
  "  --top N          cases per direction and run (default 3)\n" ..
  "  --show N         predictions printed per case (default 10)")
if not o then return end
local top, show = tonumber(o.top), tonumber(o.show)
local runs = C.load_runs(o, { o.a, o.b })
local rep = C.report(o, "contrast_cases", "Where " .. o.a .. " and " .. o.b .. " disagree most")

local function case_text(doc, a, b)
  local refs = doc.refs:surfaces()
  local preds = doc.preds:top(show):surfaces()
  local flags = doc.preds:top(show):match(doc.refs):flags()
  for i = 1, #preds do if flags[i] then preds[i] = "**" .. preds[i] .. "**" end end
  return string.format("- document `%s`: %s = %s, %s = %s, R = %d\n  - references: %s\n  - predictions (exact matches in bold): %s\n",
    doc.id, o.a, C.fmt(a), o.b, C.fmt(b), #refs, table.concat(refs, "; "), table.concat(preds, "; "))
end

for _, r in ipairs(runs) do
  local A, B = r.scores[o.a], r.scores[o.b]
  if not A or not B then error("run " .. r.id .. " lacks " .. (A and o.b or o.a), 0) end
  local idx = {}
  for d = 1, #A do if C.finite(A[d]) and C.finite(B[d]) then idx[#idx + 1] = d end end
  table.sort(idx, function(x, y)
    local dx, dy = A[x] - B[x], A[y] - B[y]
    if dx ~= dy then return dx > dy end
    return x < y
  end)
  local corpus = kp.load { dataset = r.dataset_path, dataset_format = r.dataset_format,
                           predictions = r.predictions_path, profile = r.profile }
  rep:add("## run " .. r.id .. ": " .. r.system .. " on " .. r.dataset .. "\n")
  rep:add("### " .. o.a .. " much higher than " .. o.b .. "\n")
  for i = 1, math.min(top, #idx) do rep:add(case_text(corpus:doc(idx[i]), A[idx[i]], B[idx[i]])) end
  rep:add("### " .. o.b .. " much higher than " .. o.a .. "\n")
  for i = #idx, math.max(#idx - top + 1, 1), -1 do rep:add(case_text(corpus:doc(idx[i]), A[idx[i]], B[idx[i]])) end
end
rep:finish()
