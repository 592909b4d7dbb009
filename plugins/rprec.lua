-- kplab-api: 1
-- R-precision with approximate matching, two kinds:
--   rprec_substr: KPEval's character-substring matching on stemmed, joined strings;
--   rprec_zg: word-level matching after Zesch & Gurevych (2009): MORPH, INCLUDES, PARTOF.
local ipairs = ipairs
local SUBSETS = { "all", "present", "absent" }
local N = {}
for _, s in ipairs(SUBSETS) do N[s] = { substr = s .. ".rprec_substr", zg = s .. ".rprec_zg" } end

return kp.metric {
  name = "rprec",
  version = "1.0.0",
  doc = [[
R-precision = (number of the first R predictions that match some reference) / R, with R the number
of (deduplicated) references; 0 when R = 0. For subset `all` the predictions are taken in model order,
or present-first when the profile's rprec_order is "present_first" (KPEval).
substr: a prediction matches when its stemmed string is a substring of a reference's or vice versa
(an empty prediction matches everything under KPEval's profile). zg: its stem sequence equals a
reference's (MORPH), contains it contiguously (INCLUDES) or is contained in it (PARTOF).]],
  score = function(doc, _, ctx, out)
    local present_first = ctx.profile.rprec_order == "present_first"
    for _, s in ipairs(SUBSETS) do
      local preds, refs = doc:subset(s)  -- nothing for present/absent of a document without text
      if preds then
        if s == "all" and doc.has_text and present_first then preds = preds:present_first() end
        local R = #refs
        if R > 0 then
          local top = preds:top(R)
          out[N[s].substr] = top:match(refs, "substr"):hits() / R
          out[N[s].zg] = top:match(refs, "zg"):hits() / R
        else
          out[N[s].substr], out[N[s].zg] = 0, 0
        end
      end
    end
    return out
  end,
}
