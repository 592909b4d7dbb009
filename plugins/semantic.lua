-- kplab-api: 2
-- KPEval's semantic matching (Wu et al., sem_matching_metric.py): SemP, SemR, SemF1.

-- Mean over items: 1 when exactly matched, else the best cosine if above the threshold, else 0.
local function mean_score(best, matched, threshold)
  local s = 0
  for i = 1, #best do
    local b = best[i]
    s = s + ((matched and matched[i] == 1) and 1 or (b > threshold and b or 0))
  end
  return s / #best
end

return kp.metric {
  name = "semantic",
  version = "2.0.0",
  doc = [[
SemP = mean over predictions of: 1 if its stem key matches a reference, else its largest cosine to
the references if > threshold (default 0), else 0. SemR = the same over references against the
predictions. SemF1 = 2 P R / (P + R) per document (0 when P R = 0); the run's value is the mean of
the per-document values. No predictions or no references: 0, 0, 0. Under profile kpeval
(semr_exact = "cosine") SemR reproduces KPEval's bug: an exactly matched reference gets its cosine,
not 1. Columns <s>.semp, <s>.semr, <s>.semf1 for <s> in all, present, absent. KPEval embeds
misaligned strings when a reference repeats (a;a;b embeds a, a): not reproduced, each unique
reference is embedded.]],
  params = { threshold = kp.number { default = 0, doc = "cosines at or below it count 0" } },
  needs = { "embeddings" },
  subsets = { "all", "present", "absent" },
  columns = { "semp", "semr", "semf1" },
  score = function(preds, refs, _, p, ctx, out)
    local P, R = 0, 0
    if #preds > 0 and #refs > 0 then
      local S, E = ctx.cosine(preds, refs), preds:match_pairs(refs)
      P = mean_score(S:row_maxes(), E:row_maxes(), p.threshold)
      R = mean_score(S:col_maxes(), ctx.profile.semr_exact == "one" and E:col_maxes() or nil, p.threshold)
    end
    out.semp, out.semr, out.semf1 = P, R, P * R == 0 and 0 or 2 * P * R / (P + R)
  end,
}
