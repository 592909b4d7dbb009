-- kplab-api: 2
-- Vocabulary-normalised homogeneity (beyond the paper): every predicted keyphrase is first replaced by
-- its nearest phrase in a controlled vocabulary (the run's gold keyphrases, through an HNSW index over
-- their vectors), then Hooper's and Rodgers' CP are computed as in homogeneity. docs/homogeneity.md.
local ipairs, NaN = ipairs, 0 / 0

return kp.metric {
  name = "homogeneity_vocab",
  version = "2.0.0",
  doc = [[
As homogeneity (pairs with gold Jaccard >= theta; CP of the two prediction lists), after mapping each
prediction to the gold keyphrase of the run (any document) whose surface vector is nearest to its own
(cosine, HNSW search; a prediction without a vector is kept as it is). This simulates indexing with a
controlled vocabulary: two predictions that normalise to the same vocabulary entry count as the same
keyphrase. Columns all.vcp_hooper, all.vcp_rodgers (per document: mean over the pairs it opens; the
run's: mean over pairs), all.vcp_pairs.]],
  params = { theta = kp.number { default = 0.5, min = 0, max = 1 }, mine_stem = kp.bool { default = false },
             keep_identical = kp.bool { default = false }, stem = kp.bool { default = true },
             vocabulary = kp.string { default = "gold", one_of = { "gold", "" } },
             denominator = kp.string { default = "union", one_of = { "union", "max", "mean" } } },
  needs = { "pairs", "embeddings" },
  columns = function(c)
    local s = { hooper = c:column("all.vcp_hooper"), rodgers = c:column("all.vcp_rodgers"),
                n = c:hidden("pairs"), h = c:hidden("hooper_sum"), r = c:hidden("rodgers_sum") }
    c:ratio("all.vcp_hooper", s.h, s.n, NaN)
    c:ratio("all.vcp_rodgers", s.r, s.n, NaN)
    c:sum("all.vcp_pairs", s.n)
    return s
  end,
  score = function(doc, p, ctx, out)
    local opts = { stem = p.stem, denominator = p.denominator }
    local n, h, r = 0, 0, 0
    local partners = ctx.partners(doc)
    if #partners > 0 then
      local a = ctx.pairs.normalize(doc.preds)
      for _, q in ipairs(partners) do
        local hooper, rodgers = kp.homog.cp(a, ctx.pairs.normalize(q.doc.preds), opts)
        if hooper == hooper then n, h, r = n + 1, h + hooper, r + rodgers end
      end
    end
    out.pairs, out.hooper_sum, out.rodgers_sum = n, h, r
    if n > 0 then out["all.vcp_hooper"], out["all.vcp_rodgers"] = h / n, r / n end  -- else undefined
  end,
}
