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
  score = function(doc, _, ctx)
    local out = {}
    for _, s in ipairs(SUBSETS) do
      if s == "all" or doc.has_text then
        local preds, refs = doc.preds:subset(s), doc.refs:subset(s)
        if s == "all" and doc.has_text and ctx.profile.rprec_order == "present_first" then
          preds = preds:present_first()
        end
        local R = #refs
        local top = preds:top(R)
        out[N[s].substr] = R > 0 and top:match(refs, "substr"):hits() / R or 0
        out[N[s].zg] = R > 0 and top:match(refs, "zg"):hits() / R or 0
      end
    end
    return out
  end,
}
