-- kplab-api: 2
-- PRMU (Boudin & Gallina 2021): the share of references and of predictions that are Present,
-- Reordered, Mixed or Unseen with respect to the document's source.
local ipairs = ipairs
local CATS = { "P", "R", "M", "U" }

return kp.metric {
  name = "prmu",
  version = "2.0.0",
  doc = [[
Per document, the share of each category among the deduplicated references (refs.prmu_P ...) and
predictions (preds.prmu_P ...). Present: the stemmed phrase occurs contiguously in the title or in
the body (not across); Reordered: every word occurs; Mixed: some do; Unseen: none (an empty phrase
counts as Present). Documents without text or without such phrases are skipped. Aggregates: the
share over all phrases of the corpus (refs.prmu_P ...), and the mean per-document share
(refs.prmu_P.macro ...).]],
  columns = function(c)
    local slots = {}
    for _, side in ipairs { "refs", "preds" } do
      local s = { n = c:hidden(side .. ".n") }
      for _, cat in ipairs(CATS) do
        local share = side .. ".prmu_" .. cat
        s[cat] = { share = c:column(share), count = c:hidden(side .. ".count_" .. cat) }
        c:ratio(share, s[cat].count, s.n)
        c:mean(share .. ".macro", s[cat].share)
      end
      slots[side] = s
    end
    return slots
  end,
  score = function(doc, _, ctx, out)
    if not doc.has_text then return end
    for side, s in pairs(ctx.slots) do
      local list = doc[side]
      local n = #list
      if n > 0 then
        local counts = { P = 0, R = 0, M = 0, U = 0 }
        for _, cat in ipairs(list:prmu()) do counts[cat] = counts[cat] + 1 end
        out[s.n] = n
        for _, cat in ipairs(CATS) do out[s[cat].share], out[s[cat].count] = counts[cat] / n, counts[cat] end
      end
    end
  end,
}
