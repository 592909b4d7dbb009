-- kplab-api: 1
-- PRMU (Boudin & Gallina 2021): the share of references and of predictions that are Present,
-- Reordered, Mixed or Unseen with respect to the document's source.
local ipairs = ipairs
local CATS = { "P", "R", "M", "U" }
local SIDES = { "refs", "preds" }
local N = {}
for _, side in ipairs(SIDES) do
  N[side] = { n = "_" .. side .. ".n" }
  for _, c in ipairs(CATS) do
    N[side][c] = { share = side .. ".prmu_" .. c, count = "_" .. side .. ".count_" .. c }
  end
end

return kp.metric {
  name = "prmu",
  version = "1.0.0",
  doc = [[
Per document, the share of each category among the deduplicated references (refs.prmu_P ...) and
predictions (preds.prmu_P ...). Present: the stemmed phrase occurs contiguously in the title or in
the body (not across); Reordered: every word occurs; Mixed: some do; Unseen: none (an empty phrase
counts as Present). Documents without text or without such phrases are skipped. Aggregates: the
share over all phrases of the corpus (refs.prmu_P ...), and the mean per-document share
(refs.prmu_P.macro ...).]],
  score = function(doc, _, _, out)
    if not doc.has_text then return out end
    for _, side in ipairs(SIDES) do
      local list = doc[side]
      local n = #list
      if n > 0 then
        local counts = { P = 0, R = 0, M = 0, U = 0 }
        for _, c in ipairs(list:prmu()) do counts[c] = counts[c] + 1 end
        out[N[side].n] = n
        for _, c in ipairs(CATS) do
          out[N[side][c].share] = counts[c] / n
          out[N[side][c].count] = counts[c]
        end
      end
    end
    return out
  end,
  aggregate = function(cols)
    local agg = {}
    for _, side in ipairs(SIDES) do
      local total = cols[N[side].n] and cols[N[side].n]:sum() or 0
      if total > 0 then
        for _, c in ipairs(CATS) do
          agg[N[side][c].share] = cols[N[side][c].count]:sum() / total
          agg[N[side][c].share .. ".macro"] = cols[N[side][c].share]:mean()
        end
      end
    end
    return agg
  end,
}
