-- kplab-api: 1
-- Rank-aware metrics: AP@k (MAP), NDCG@k, alpha-NDCG@k for the cut-offs of params.ks (default 5, 10, M;
-- O = number of references, as KPEval reports), and MRR.
local ipairs, min, ideal_dcg, cutoffs = ipairs, math.min, kp.ideal_dcg, kp.cutoffs
local SUBSETS = { "all", "present", "absent" }

-- Names for one ks string, built once per lane (depends on params only).
local cached_spec, cached_ks, cached_names
local function names_for(spec)
  if spec ~= cached_spec then
    local ks = assert(cutoffs(spec))
    local names = {}
    for _, s in ipairs(SUBSETS) do
      names[s] = { mrr = s .. ".mrr" }
      for i, k in ipairs(ks) do
        names[s][i] = { ap = s .. ".ap@" .. k, ndcg = s .. ".ndcg@" .. k, andcg = s .. ".alpha_ndcg@" .. k,
                        map = s .. ".map@" .. k }
      end
    end
    cached_spec, cached_ks, cached_names = spec, ks, names
  end
  return cached_ks, cached_names
end

return kp.metric {
  name = "rank",
  version = "1.1.0",
  doc = [[
At each k of params.ks (default 5,10,M; any integer >= 1, M = number of predictions, O = number of
references): AP@k = sum over hits at rank i <= k of P@i, divided by min(#refs, k) (profile knob
ap_denominator "min_refs_k"; "refs" divides by #refs as KPEval does). NDCG@k with binary relevance and a
log2(i+1) discount; the ideal is min(#refs, k) hits at the top ("standard"), or the document's own
relevance vector sorted ("own", KPEval: missed references do not lower it). alpha-NDCG@k with alpha =
params.alpha and the references as subtopics: "word_pool" (kplab) covers a reference when the phrase's
stems occur contiguously in it and builds the greedy ideal from the references and the predictions, so
missed references count; "substring" (KPEval) covers by character substring and builds the ideal from the
predictions only. A cut-off beyond the list is the whole list. MRR = 1/rank of the first correct
prediction (0 if none). Aggregates are means over documents: <s>.map@k, <s>.ndcg@k, <s>.alpha_ndcg@k,
<s>.mrr.]],
  params = { alpha = 0.5, ks = "5,10,M" },
  check = function(p)
    local ok, message = cutoffs(p.ks)
    if not ok then return "parameter 'ks': " .. message end
  end,
  score = function(doc, p, ctx, out)
    local prof = ctx.profile
    local own_ideal, ap_refs = prof.ndcg_ideal == "own", prof.ap_denominator == "refs"
    local ks, names = names_for(p.ks)
    local nk, cut = #ks, {}
    for _, s in ipairs(SUBSETS) do
      local preds, refs = doc:subset(s)  -- nothing for present/absent of a document without text
      if preds then
        local m = preds:match(refs)
        local n, r = #preds, #refs
        for i, k in ipairs(ks) do cut[i] = (k == "M" and n) or (k == "O" and r) or k end
        local psum = { m:precision_sum(table.unpack(cut, 1, nk)) }
        local dcg = { m:dcg(table.unpack(cut, 1, nk)) }
        local ideal = own_ideal and { m:own_ideal_dcg(table.unpack(cut, 1, nk)) }
                                or { ideal_dcg(r, table.unpack(cut, 1, nk)) }
        local alpha = { preds:alpha_ndcg(refs, cut, p.alpha, prof.alpha_ndcg) }
        for i = 1, nk do
          local nm = names[s][i]
          local den = ap_refs and r or min(r, cut[i])
          out[nm.ap] = den > 0 and psum[i] / den or 0
          out[nm.ndcg] = ideal[i] > 0 and dcg[i] / ideal[i] or 0
          out[nm.andcg] = alpha[i]
        end
        local first = m:first_hit()
        out[names[s].mrr] = first and 1 / first or 0
      end
    end
    return out
  end,
  aggregate = function(cols, p)
    local ks, names = names_for(p.ks)
    local agg = {}
    for _, s in ipairs(SUBSETS) do
      for i = 1, #ks do
        local nm = names[s][i]
        if cols[nm.ap] and cols[nm.ap]:count() > 0 then
          agg[nm.map] = cols[nm.ap]:mean()
          agg[nm.ndcg] = cols[nm.ndcg]:mean()
          agg[nm.andcg] = cols[nm.andcg]:mean()
        end
      end
      local mrr = names[s].mrr
      if cols[mrr] and cols[mrr]:count() > 0 then agg[mrr] = cols[mrr]:mean() end
    end
    return agg
  end,
}
