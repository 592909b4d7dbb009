-- kplab-api: 2
-- Rank-aware metrics: AP@k (MAP), NDCG@k, alpha-NDCG@k for the cut-offs of params.ks (default 5, 10, M;
-- O = number of references, as KPEval reports), and MRR.
local ipairs = ipairs

return kp.metric {
  name = "rank",
  version = "2.0.0",
  doc = [[
At each k of params.ks (any integer >= 1, M = number of predictions, O = number of references):
AP@k = sum over hits at rank i <= k of P@i, divided by min(#refs, k) (profile knob ap_denominator
"min_refs_k"; "refs" divides by #refs as KPEval does). NDCG@k with binary relevance and a log2(i+1)
discount; the ideal is min(#refs, k) hits at the top ("standard"), or the document's own relevance
vector sorted ("own", KPEval: missed references do not lower it). alpha-NDCG@k with alpha =
params.alpha and the references as subtopics: "word_pool" (kplab) covers a reference when the phrase's
stems occur contiguously in it and builds the greedy ideal from the references and the predictions, so
missed references count; "substring" (KPEval) covers by character substring and builds the ideal from
the predictions only. A cut-off beyond the list is the whole list. MRR = 1/rank of the first correct
prediction (0 if none). Aggregates are means over documents: <s>.map@k, <s>.ndcg@k, <s>.alpha_ndcg@k,
<s>.mrr.]],
  params = {
    alpha = kp.number { default = 0.5, min = 0, max = 1, doc = "alpha of alpha-NDCG (redundancy penalty)" },
    ks = kp.cutoffs { default = "5,10,M", doc = "integers >= 1, M (#predictions), O (#references)" },
  },
  subsets = { "all", "present", "absent" },
  columns = function(c, p)
    c:mean("mrr", c:column("mrr"))
    for _, k in ipairs(p.ks) do
      local at = "@" .. k
      c:mean("map" .. at, c:column("ap" .. at))
      c:mean("ndcg" .. at, c:column("ndcg" .. at))
      c:mean("alpha_ndcg" .. at, c:column("alpha_ndcg" .. at))
    end
  end,
  score = kp.kernel.rank,  -- the host's native kernel (kplab/kernels.h); plugins/reference/rank.lua is its Lua
}
