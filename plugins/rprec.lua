-- kplab-api: 1
-- Approximate matching: R-precision of two kinds, and KPEval's substring precision, recall and F1.
--   substr: KPEval's character-substring matching on stemmed, joined strings;
--   zg: word-level matching after Zesch & Gurevych (2009): MORPH, INCLUDES, PARTOF.
local ipairs = ipairs
local SUBSETS = { "all", "present", "absent" }
local N = {}
for _, s in ipairs(SUBSETS) do
  N[s] = { substr = s .. ".rprec_substr", zg = s .. ".rprec_zg", sp = s .. ".substr_precision",
           sr = s .. ".substr_recall", sf = s .. ".substr_f1" }
end

return kp.metric {
  name = "rprec",
  version = "1.1.0",
  doc = [[
R-precision = (number of the first R predictions that match some reference) / R, with R the number
of (deduplicated) references; 0 when R = 0. For subset `all` the predictions are taken in model order,
or present-first when the profile's rprec_order is "present_first" (KPEval).
substr: a prediction matches when its stemmed string is a substring of a reference's or vice versa
(an empty prediction matches everything under KPEval's profile). zg: its stem sequence equals a
reference's (MORPH), contains it contiguously (INCLUDES) or is contained in it (PARTOF).
KPEval's approximate matching (approx_matching_metric.py): substr_precision = predictions that
substr-match some reference / number of predictions (0 without predictions), substr_recall = references
substr-matched by some prediction / number of references (0 without references), substr_f1 = 2PR/(P+R)
(0 when P or R is 0); every aggregate is the mean over documents (substr_f1: of per-document F1).]],
  score = function(doc, _, ctx, out)
    local present_first = ctx.profile.rprec_order == "present_first"
    for _, s in ipairs(SUBSETS) do
      local preds, refs = doc:subset(s)  -- nothing for present/absent of a document without text
      if preds then
        local n, R = #preds, #refs
        local P = n > 0 and preds:match(refs, "substr"):hits() / n or 0
        local Rc = R > 0 and refs:match(preds, "substr"):hits() / R or 0
        out[N[s].sp], out[N[s].sr] = P, Rc
        out[N[s].sf] = P * Rc ~= 0 and 2 * P * Rc / (P + Rc) or 0
        if s == "all" and doc.has_text and present_first then preds = preds:present_first() end
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
