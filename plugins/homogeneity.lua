-- kplab-api: 1
-- Homogeneity of a system across similar documents (Houbre, Boudin & Daille): Hooper's and Rodgers'
-- consistency of a pair (CP) between the predictions for two documents whose gold keyphrase sets have
-- Jaccard >= theta. docs/homogeneity.md.
local ipairs = ipairs
local NaN = 0 / 0

return kp.metric {
  name = "homogeneity",
  version = "1.0.0",
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
  params = { theta = 0.5, mine_stem = false, keep_identical = false, stem = true, denominator = "union" },
  needs = { "pairs" },
  score = function(doc, p, ctx, out)
    local opts = { stem = p.stem, denominator = p.denominator }
    local n, h, r = 0, 0, 0
    for _, q in ipairs(ctx.partners(doc)) do
      local hooper, rodgers = kp.homog.cp(doc.preds, q.doc.preds, opts)
      if hooper == hooper then  -- NaN: both lists empty
        n, h, r = n + 1, h + hooper, r + rodgers
      end
    end
    out["_cp.n"], out["_cp.hooper"], out["_cp.rodgers"] = n, h, r
    out["all.cp_hooper"] = n > 0 and h / n or NaN
    out["all.cp_rodgers"] = n > 0 and r / n or NaN
    return out
  end,
  aggregate = function(cols, p, ctx)
    local n = cols["_cp.n"]:sum()
    return {
      ["all.cp_hooper"] = n > 0 and cols["_cp.hooper"]:sum() / n or NaN,
      ["all.cp_rodgers"] = n > 0 and cols["_cp.rodgers"]:sum() / n or NaN,
      ["all.cp_pairs"] = n,
    }
  end,
}
