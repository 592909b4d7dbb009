-- kplab-api: 2
-- Homogeneity of a system across similar documents (Houbre, Boudin & Daille): Hooper's and Rodgers'
-- consistency of a pair (CP) between the predictions for two documents whose gold keyphrase sets have
-- Jaccard >= theta. docs/homogeneity.md.
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
  name = "homogeneity",
  version = "2.1.0",
  doc = [[
The run's gold is mined for every document pair with Jaccard(gold A, gold B) >= theta (exact join;
gold keyphrases compared as normalized strings, or as stem keys with mine_stem = true; pairs with
identical gold sets, in KP20k duplicate records, are left out unless keep_identical = true, and counted
either way in all.cp_identical_pairs). With top_k = k, each document's predictions are capped to their
first k (after the profile's filtering and dedup) before the CP; the paper gives its extractive systems 5.
For each pair, Hooper's CP = |P_A ∩ P_B| / |P_A ∪ P_B| over the two prediction lists' distinct
keyphrases (stem keys when stem = true, else tokens) and Rodgers' CP = the same over their distinct
words; denominator = "max" or "mean" replaces the union by max(|A|, |B|) or (|A| + |B|) / 2. Each pair
is scored by its first document: all.cp_hooper / all.cp_rodgers per document = the mean over the pairs
it opens (undefined when none); the run's values are the means over pairs, all.cp_pairs their number.
Pairs where both lists are empty are left out.]],
  params = { theta = kp.number { default = 0.5, min = 0, max = 1 }, mine_stem = kp.bool { default = false },
             keep_identical = kp.bool { default = false }, stem = kp.bool { default = true },
             denominator = kp.string { default = "union", one_of = { "union", "max", "mean" } },
             top_k = kp.string { default = "all", doc = "'all' or k >= 1: each document's first k predictions" } },
  needs = { "pairs" },
  columns = function(c, p)
    cap(p.top_k)  -- a bad value fails the run before any document is scored
    local s = { hooper = c:column("all.cp_hooper"), rodgers = c:column("all.cp_rodgers"),
                n = c:hidden("pairs"), h = c:hidden("hooper_sum"), r = c:hidden("rodgers_sum"),
                identical = c:hidden("identical") }
    c:ratio("all.cp_hooper", s.h, s.n, NaN)
    c:ratio("all.cp_rodgers", s.r, s.n, NaN)
    c:sum("all.cp_pairs", s.n)
    c:sum("all.cp_identical_pairs", s.identical)
    -- The paper's unit: `kplab eval --ci` resamples pairs (ctx.unit below). The identical-gold pairs
    -- were left out before any pair was scored: their count is the run's, not a statistic of its pairs.
    c:units("pairs", { fixed = { "all.cp_identical_pairs" } })
    return s
  end,
  score = function(doc, p, ctx, out)
    local opts, k = { stem = p.stem, denominator = p.denominator }, cap(p.top_k)
    local function preds(d) return k and d.preds:top(k) or d.preds end
    local n, h, r = 0, 0, 0
    local partners, identical = ctx.partners(doc)
    local a = preds(doc)
    for _, q in ipairs(partners) do
      local hooper, rodgers = kp.homog.cp(a, preds(q.doc), opts)
      if hooper == hooper then  -- NaN: both lists empty
        n, h, r = n + 1, h + hooper, r + rodgers
        ctx.unit(q.index, { [ctx.slots.n] = 1, [ctx.slots.h] = hooper, [ctx.slots.r] = rodgers })
      end
    end
    out.pairs, out.hooper_sum, out.rodgers_sum, out.identical = n, h, r, identical
    if n > 0 then out["all.cp_hooper"], out["all.cp_rodgers"] = h / n, r / n end  -- else undefined
  end,
}
