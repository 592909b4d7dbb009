-- kplab-api: 1
-- Rank-aware metrics: AP@k (MAP), NDCG@k, alpha-NDCG@k for k in {5, 10, M}, and MRR.
local ipairs, min, ideal_dcg = ipairs, math.min, kp.ideal_dcg
local SUBSETS = { "all", "present", "absent" }
local KS = { 5, 10, "M" }
local N = {}
for _, s in ipairs(SUBSETS) do
  N[s] = { mrr = s .. ".mrr" }
  for _, k in ipairs(KS) do
    N[s][k] = { ap = s .. ".ap@" .. k, ndcg = s .. ".ndcg@" .. k, andcg = s .. ".alpha_ndcg@" .. k,
                map = s .. ".map@" .. k }
  end
end

return kp.metric {
  name = "rank",
  version = "1.0.0",
  doc = [[
AP@k = sum over hits at rank i <= k of P@i, divided by min(#refs, k) (profile knob ap_denominator
"min_refs_k"; "refs" divides by #refs as KPEval does). NDCG@k with binary relevance and a log2(i+1)
discount; the ideal is min(#refs, k) hits at the top ("standard"), or the document's own relevance
vector sorted ("own", KPEval: missed references do not lower it). alpha-NDCG@k with alpha = params.alpha and
the references as subtopics: "word_pool" (kplab) covers a reference when the phrase's stems occur
contiguously in it and builds the greedy ideal from the references and the predictions, so missed
references count; "substring" (KPEval) covers by character substring and builds the ideal from the
predictions only. MRR = 1/rank of
the first correct prediction (0 if none). Aggregates are means over documents: <s>.map@k, <s>.ndcg@k,
<s>.alpha_ndcg@k, <s>.mrr.]],
  params = { alpha = 0.5 },
  score = function(doc, p, ctx, out)
    local prof = ctx.profile
    local own_ideal, ap_refs = prof.ndcg_ideal == "own", prof.ap_denominator == "refs"
    for _, s in ipairs(SUBSETS) do
      local preds, refs = doc:subset(s)  -- nothing for present/absent of a document without text
      if preds then
        local m = preds:match(refs)
        local n, r = #preds, #refs
        local psum = { m:precision_sum(5, 10, n) }
        local dcg = { m:dcg(5, 10, n) }
        local ideal = own_ideal and { m:own_ideal_dcg(5, 10, n) } or { ideal_dcg(r, 5, 10, n) }
        local alpha = { preds:alpha_ndcg(refs, { 5, 10, n }, p.alpha, prof.alpha_ndcg) }
        for i, k in ipairs(KS) do
          local kk = (k == "M") and n or k
          local nm = N[s][k]
          local den = ap_refs and r or min(r, kk)
          out[nm.ap] = den > 0 and psum[i] / den or 0
          out[nm.ndcg] = ideal[i] > 0 and dcg[i] / ideal[i] or 0
          out[nm.andcg] = alpha[i]
        end
        local first = m:first_hit()
        out[N[s].mrr] = first and 1 / first or 0
      end
    end
    return out
  end,
  aggregate = function(cols)
    local agg = {}
    for _, s in ipairs(SUBSETS) do
      for _, k in ipairs(KS) do
        local nm = N[s][k]
        if cols[nm.ap] and cols[nm.ap]:count() > 0 then
          agg[nm.map] = cols[nm.ap]:mean()
          agg[nm.ndcg] = cols[nm.ndcg]:mean()
          agg[nm.andcg] = cols[nm.andcg]:mean()
        end
      end
      if cols[N[s].mrr] and cols[N[s].mrr]:count() > 0 then agg[N[s].mrr] = cols[N[s].mrr]:mean() end
    end
    return agg
  end,
}
