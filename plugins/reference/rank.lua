-- kplab-api: 2
-- The formula of plugins/rank.lua, whose score is the native kp.kernel.rank: the same parameters, columns and
-- aggregation, scored in Lua. Run it with `--plugins plugins/reference --metrics rank`; tests/host/kernel_test.cc
-- checks the kernel against this file bit for bit under every profile.
-- Rank-aware metrics: AP@k (MAP), NDCG@k, alpha-NDCG@k for the cut-offs of params.ks (default 5, 10, M;
-- O = number of references, as KPEval reports), and MRR.
local ipairs, min, unpack, ideal_dcg = ipairs, math.min, table.unpack, kp.ideal_dcg

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
    local slots = { mrr = c:column("mrr") }
    c:mean("mrr", slots.mrr)
    for i, k in ipairs(p.ks) do
      local at = "@" .. k
      local s = { ap = c:column("ap" .. at), ndcg = c:column("ndcg" .. at), andcg = c:column("alpha_ndcg" .. at) }
      c:mean("map" .. at, s.ap)
      c:mean("ndcg" .. at, s.ndcg)
      c:mean("alpha_ndcg" .. at, s.andcg)
      slots[i] = s
    end
    return slots
  end,
  score = function(preds, refs, _, p, ctx, out)
    local prof, slots = ctx.profile, ctx.slots
    local m = preds:match(refs)
    local n, r = #preds, #refs
    local cut = {}
    for i, k in ipairs(p.ks) do cut[i] = (k == "M" and n) or (k == "O" and r) or k end
    local psum = { m:precision_sum(unpack(cut)) }
    local dcg = { m:dcg(unpack(cut)) }
    local ideal = prof.ndcg_ideal == "own" and { m:own_ideal_dcg(unpack(cut)) } or { ideal_dcg(r, unpack(cut)) }
    local alpha = { preds:alpha_ndcg(refs, cut, p.alpha, prof.alpha_ndcg) }
    for i, s in ipairs(slots) do
      local den = prof.ap_denominator == "refs" and r or min(r, cut[i])
      out[s.ap] = den > 0 and psum[i] / den or 0
      out[s.ndcg] = ideal[i] > 0 and dcg[i] / ideal[i] or 0
      out[s.andcg] = alpha[i]
    end
    local first = m:first_hit()
    out[slots.mrr] = first and 1 / first or 0
  end,
}
