-- kplab-api: 1
-- Vocabulary-normalised homogeneity (beyond the paper): every predicted keyphrase is first replaced by
-- its nearest phrase in a controlled vocabulary (the run's gold keyphrases, through an HNSW index over
-- their vectors), then Hooper's and Rodgers' CP are computed as in homogeneity. docs/homogeneity.md.
local ipairs = ipairs
local NaN = 0 / 0

return kp.metric {
  name = "homogeneity_vocab",
  version = "1.0.0",
  doc = [[
As homogeneity (pairs with gold Jaccard >= theta; CP of the two prediction lists), after mapping each
prediction to the gold keyphrase of the run (any document) whose surface vector is nearest to its own
(cosine, HNSW search; a prediction without a vector is kept as it is). This simulates indexing with a
controlled vocabulary: two predictions that normalise to the same vocabulary entry count as the same
keyphrase. Columns all.vcp_hooper, all.vcp_rodgers (per document: mean over the pairs it opens; the
run's: mean over pairs), all.vcp_pairs.]],
  params = { theta = 0.5, mine_stem = false, keep_identical = false, vocabulary = "gold", stem = true, denominator = "union" },
  needs = { "pairs", "embeddings" },
  score = function(doc, p, ctx, out)
    local opts = { stem = p.stem, denominator = p.denominator }
    local n, h, r = 0, 0, 0
    local partners = ctx.partners(doc)
    if #partners > 0 then
      local a = ctx.pairs.normalize(doc.preds)
      for _, q in ipairs(partners) do
        local hooper, rodgers = kp.homog.cp(a, ctx.pairs.normalize(q.doc.preds), opts)
        if hooper == hooper then
          n, h, r = n + 1, h + hooper, r + rodgers
        end
      end
    end
    out["_vcp.n"], out["_vcp.hooper"], out["_vcp.rodgers"] = n, h, r
    out["all.vcp_hooper"] = n > 0 and h / n or NaN
    out["all.vcp_rodgers"] = n > 0 and r / n or NaN
    return out
  end,
  aggregate = function(cols, p, ctx)
    local n = cols["_vcp.n"]:sum()
    return {
      ["all.vcp_hooper"] = n > 0 and cols["_vcp.hooper"]:sum() / n or NaN,
      ["all.vcp_rodgers"] = n > 0 and cols["_vcp.rodgers"]:sum() / n or NaN,
      ["all.vcp_pairs"] = n,
    }
  end,
}
