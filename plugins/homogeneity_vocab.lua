-- kplab-api: 2
-- Vocabulary-normalised homogeneity (beyond the paper): every predicted keyphrase is first replaced by
-- its nearest phrase in a controlled vocabulary (the run's gold keyphrases, through an HNSW index over
-- their vectors), then Hooper's and Rodgers' CP are computed as in homogeneity. docs/homogeneity.md.
local ipairs, NaN = ipairs, 0 / 0

-- params.top_k: "all" or an integer >= 1 given as text, so that 0, a negative number or a word is an
-- error rather than quietly meaning "no cap". nil for all.
local function cap(v)
  if v == "all" then return nil end
  local k = v:match("^%d+$") and math.tointeger(tonumber(v))
  if not k or k < 1 then
    error(string.format("parameter 'top_k' must be 'all' or an integer >= 1 (got '%s')", v), 2)
  end
  return k
end

return kp.metric {
  name = "homogeneity_vocab",
  version = "2.1.0",
  doc = [[
As homogeneity (pairs with gold Jaccard >= theta; CP of the two prediction lists, each capped to its
first top_k), after mapping each prediction to the gold keyphrase of the run (any document) whose surface
vector is nearest to its own (cosine, HNSW search; a prediction without a vector is kept as it is). This
simulates indexing with a controlled vocabulary: two predictions that normalise to the same vocabulary
entry count as the same keyphrase. Columns all.vcp_hooper, all.vcp_rodgers (per document: mean over the
pairs it opens; the run's: mean over pairs), all.vcp_pairs, all.vcp_identical_pairs (mined pairs with
identical gold sets, left out unless keep_identical).]],
  params = { theta = kp.number { default = 0.5, min = 0, max = 1 }, mine_stem = kp.bool { default = false },
             keep_identical = kp.bool { default = false }, stem = kp.bool { default = true },
             vocabulary = kp.string { default = "gold", one_of = { "gold", "" } },
             denominator = kp.string { default = "union", one_of = { "union", "max", "mean" } },
             top_k = kp.string { default = "all", doc = "'all' or k >= 1: each document's first k predictions" } },
  needs = { "pairs", "embeddings" },
  columns = function(c, p)
    cap(p.top_k)  -- a bad value fails the run before any document is scored
    local s = { hooper = c:column("all.vcp_hooper"), rodgers = c:column("all.vcp_rodgers"),
                n = c:hidden("pairs"), h = c:hidden("hooper_sum"), r = c:hidden("rodgers_sum"),
                identical = c:hidden("identical") }
    c:ratio("all.vcp_hooper", s.h, s.n, NaN)
    c:ratio("all.vcp_rodgers", s.r, s.n, NaN)
    c:sum("all.vcp_pairs", s.n)
    c:sum("all.vcp_identical_pairs", s.identical)
    return s
  end,
  score = function(doc, p, ctx, out)
    local opts, k = { stem = p.stem, denominator = p.denominator }, cap(p.top_k)
    local function preds(d) return k and d.preds:top(k) or d.preds end
    local n, h, r = 0, 0, 0
    local partners, identical = ctx.partners(doc)
    if #partners > 0 then
      local a = ctx.pairs.normalize(preds(doc))
      for _, q in ipairs(partners) do
        local hooper, rodgers = kp.homog.cp(a, ctx.pairs.normalize(preds(q.doc)), opts)
        if hooper == hooper then n, h, r = n + 1, h + hooper, r + rodgers end
      end
    end
    out.pairs, out.hooper_sum, out.rodgers_sum, out.identical = n, h, r, identical
    if n > 0 then out["all.vcp_hooper"], out["all.vcp_rodgers"] = h / n, r / n end  -- else undefined
  end,
}
