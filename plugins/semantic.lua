-- kplab-api: 1
-- KPEval's semantic matching (Wu et al., sem_matching_metric.py): SemP, SemR, SemF1.
local ipairs = ipairs
local SUBSETS = { "all", "present", "absent" }

-- Mean over items: 1 when exactly matched, else the best cosine if above the threshold, else 0.
local function mean_score(best, matched, threshold)
  local n = #best
  local s = 0
  for i = 1, n do
    local b = best[i]
    s = s + ((matched and matched[i] == 1) and 1 or (b > threshold and b or 0))
  end
  return s / n
end

return kp.metric {
  name = "semantic",
  version = "1.0.0",
  doc = [[
SemP = mean over predictions of: 1 if its stem key matches a reference, else its largest cosine to
the references if > threshold (default 0), else 0. SemR = the same over references against the
predictions. SemF1 = 2 P R / (P + R) per document (0 when P R = 0); the run's value is the mean of
the per-document values. No predictions or no references: 0, 0, 0. Under profile kpeval
(semr_exact = "cosine") SemR reproduces KPEval's bug: an exactly matched reference gets its cosine,
not 1. Columns <s>.semp, <s>.semr, <s>.semf1 for <s> in all, present, absent. KPEval embeds
misaligned strings when a reference repeats (a;a;b embeds a, a): not reproduced, each unique
reference is embedded.]],
  params = { threshold = 0 },
  needs = { "embeddings" },
  score = function(doc, p, ctx, out)
    local exact_one = ctx.profile.semr_exact == "one"
    for _, s in ipairs(SUBSETS) do
      local preds, refs = doc:subset(s)
      if preds then
        local P, R = 0, 0
        if #preds > 0 and #refs > 0 then
          local S = ctx.cosine(preds, refs)
          local E = preds:match_pairs(refs)
          local prow = S:row_maxes()
          P = mean_score(prow, E:row_maxes(), p.threshold)
          local rcol = S:col_maxes()
          R = mean_score(rcol, exact_one and E:col_maxes() or nil, p.threshold)
        end
        out[s .. ".semp"], out[s .. ".semr"] = P, R
        out[s .. ".semf1"] = (P * R == 0) and 0 or 2 * P * R / (P + R)
      end
    end
    return out
  end,
}
