-- kplab-api: 2
-- Homogeneity of a system across similar documents (Houbre, Boudin & Daille): Hooper's and Rodgers'
-- consistency of a pair (CP) between the predictions for two documents whose gold keyphrase sets have
-- Jaccard >= theta. docs/homogeneity.md.
local ipairs, NaN = ipairs, 0 / 0

return kp.metric {
  name = "homogeneity",
  version = "2.0.0",
  doc = [[
The run's gold is mined for every document pair with Jaccard(gold A, gold B) >= theta (exact join;
gold keyphrases compared as normalized strings, or as stem keys with mine_stem = true; pairs with
identical gold sets, in KP20k duplicate records, are left out unless keep_identical = true).
For each pair, Hooper's CP = |P_A ∩ P_B| / |P_A ∪ P_B| over the two prediction lists' distinct
keyphrases (stem keys when stem = true, else tokens) and Rodgers' CP = the same over their distinct
words; denominator = "max" or "mean" replaces the union by max(|A|, |B|) or (|A| + |B|) / 2. Each pair
is scored by its first document: all.cp_hooper / all.cp_rodgers per document = the mean over the pairs
it opens (undefined when none); the run's values are the means over pairs, all.cp_pairs their number.
Pairs where both lists are empty are left out.]],
  params = { theta = kp.number { default = 0.5, min = 0, max = 1 }, mine_stem = kp.bool { default = false },
             keep_identical = kp.bool { default = false }, stem = kp.bool { default = true },
             denominator = kp.string { default = "union", one_of = { "union", "max", "mean" } } },
  needs = { "pairs" },
  columns = function(c)
    local s = { hooper = c:column("all.cp_hooper"), rodgers = c:column("all.cp_rodgers"),
                n = c:hidden("pairs"), h = c:hidden("hooper_sum"), r = c:hidden("rodgers_sum") }
    c:ratio("all.cp_hooper", s.h, s.n, NaN)
    c:ratio("all.cp_rodgers", s.r, s.n, NaN)
    c:sum("all.cp_pairs", s.n)
    c:units("pairs")  -- the paper's unit: `kplab eval --ci` resamples pairs (ctx.unit below)
    return s
  end,
  score = function(doc, p, ctx, out)
    local opts = { stem = p.stem, denominator = p.denominator }
    local n, h, r = 0, 0, 0
    for _, q in ipairs(ctx.partners(doc)) do
      local hooper, rodgers = kp.homog.cp(doc.preds, q.doc.preds, opts)
      if hooper == hooper then  -- NaN: both lists empty
        n, h, r = n + 1, h + hooper, r + rodgers
        ctx.unit(q.index, { [ctx.slots.n] = 1, [ctx.slots.h] = hooper, [ctx.slots.r] = rodgers })
      end
    end
    out.pairs, out.hooper_sum, out.rodgers_sum = n, h, r
    if n > 0 then out["all.cp_hooper"], out["all.cp_rodgers"] = h / n, r / n end  -- else undefined
  end,
}
