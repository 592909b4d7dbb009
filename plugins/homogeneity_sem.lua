-- kplab-api: 2
-- Semantic homogeneity (beyond the paper): Hooper's CP with keyphrases of the two documents matched
-- one to one when their cosine >= tau (an exact stem-key match always counts). docs/homogeneity.md.
local ipairs, floor, min, NaN = ipairs, math.floor, math.min, 0 / 0

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

-- Number of distinct stem keys of a list.
local function distinct(list)
  local seen, n = {}, 0
  for _, k in ipairs(list:keys()) do
    if not seen[k] then seen[k], n = true, n + 1 end
  end
  return n
end

-- The largest number of one-to-one matches (i, j) with similarity >= tau: a maximum assignment on the
-- 0/1 matrix of admissible matches (its total is the matching's size).
local function matches(a, b, ctx, tau)
  if #a == 0 or #b == 0 then return 0 end
  local S, E = ctx.cosine(a, b), a:match_pairs(b)
  for i = 1, S:rows() do
    for j = 1, S:cols() do
      S:set(i, j, (E:get(i, j) == 1 or S:get(i, j) >= tau) and 1 or 0)
    end
  end
  return floor(S:assign() + 0.5)
end

return kp.metric {
  name = "homogeneity_sem",
  version = "2.1.0",
  doc = [[
Soft Hooper's CP over the pairs of documents whose gold keyphrase sets have Jaccard >= theta: m / (|A| +
|B| - m), where |A|, |B| are the numbers of distinct predicted stem keys (of each document's first top_k
predictions) and m the size of the largest one-to-one matching of the two prediction lists in which a
matched pair has cosine >= tau (surface vectors of the run's model) or equal stem keys. With tau > 1 only
exact matches count and the value is Hooper's CP (plugin homogeneity with stem = true). Columns as in
homogeneity: all.semcp_hooper per document (mean over the pairs it opens), the run's value the mean over
pairs, all.semcp_pairs, all.semcp_identical_pairs.]],
  params = { theta = kp.number { default = 0.5, min = 0, max = 1 }, mine_stem = kp.bool { default = false },
             keep_identical = kp.bool { default = false }, tau = kp.number { default = 0.8 },
             top_k = kp.string { default = "all", doc = "'all' or k >= 1: each document's first k predictions" } },
  needs = { "pairs", "embeddings" },
  columns = function(c, p)
    cap(p.top_k)  -- a bad value fails the run before any document is scored
    local s = { hooper = c:column("all.semcp_hooper"), n = c:hidden("pairs"), h = c:hidden("hooper_sum"),
                identical = c:hidden("identical") }
    c:ratio("all.semcp_hooper", s.h, s.n, NaN)
    c:sum("all.semcp_pairs", s.n)
    c:sum("all.semcp_identical_pairs", s.identical)
    return s
  end,
  score = function(doc, p, ctx, out)
    local k = cap(p.top_k)
    local function preds(d) return k and d.preds:top(k) or d.preds end
    local n, h = 0, 0
    local a = preds(doc)
    local na = distinct(a)
    local partners, identical = ctx.partners(doc)
    for _, q in ipairs(partners) do
      local b = preds(q.doc)
      local nb = distinct(b)
      if na + nb > 0 then
        local m = min(matches(a, b, ctx, p.tau), na, nb)  -- a repeated key matches once
        n, h = n + 1, h + m / (na + nb - m)
      end
    end
    out.pairs, out.hooper_sum, out.identical = n, h, identical
    if n > 0 then out["all.semcp_hooper"] = h / n end  -- else undefined
  end,
}
