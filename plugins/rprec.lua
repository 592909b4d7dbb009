-- kplab-api: 2
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
  score = kp.kernel.rprec,  -- the host's native kernel (kplab/kernels.h); plugins/reference/rprec.lua is its Lua
}
