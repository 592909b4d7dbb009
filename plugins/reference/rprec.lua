-- kplab-api: 2
-- The formula of plugins/rprec.lua, whose score is the native kp.kernel.rprec: the same parameters, columns and
-- aggregation, scored in Lua. Run it with `--plugins plugins/reference --metrics rprec`; tests/host/kernel_test.cc
-- checks the kernel against this file bit for bit under every profile.
-- Approximate matching: R-precision of two kinds, and KPEval's substring precision, recall and F1.
--   substr: KPEval's character-substring matching on stemmed, joined strings;
--   zg: word-level matching after Zesch & Gurevych (2009): MORPH, INCLUDES, PARTOF.

return kp.metric {
  name = "rprec",
  version = "2.0.0",
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
  subsets = { "all", "present", "absent" },
  columns = { "rprec_substr", "rprec_zg", "substr_precision", "substr_recall", "substr_f1" },
  score = function(preds, refs, doc, _, ctx, out)
    local n, R = #preds, #refs
    local P = n > 0 and preds:match(refs, "substr"):hits() / n or 0
    local Rc = R > 0 and refs:match(preds, "substr"):hits() / R or 0
    out.substr_precision, out.substr_recall = P, Rc
    out.substr_f1 = P * Rc ~= 0 and 2 * P * Rc / (P + Rc) or 0
    if ctx.subset == "all" and doc.has_text and ctx.profile.rprec_order == "present_first" then
      preds = preds:present_first()
    end
    local top = preds:top(R)
    out.rprec_substr = R > 0 and top:match(refs, "substr"):hits() / R or 0
    out.rprec_zg = R > 0 and top:match(refs, "zg"):hits() / R or 0
  end,
}
