-- kplab-api: 1
-- Exact matching: P/R/F1 at 5, 10, M (= number of predictions) and O (= number of references), on
-- all, present and absent keyphrases. A prediction is correct when its stem key equals a reference's.
local ipairs = ipairs
local SUBSETS = { "all", "present", "absent" }
local KS = { 5, 10, "M", "O" }

-- Metric names, built once: N[subset][k].p = "all.p@5", ...; '_' names are internal (micro sums).
local N = {}
for _, s in ipairs(SUBSETS) do
  N[s] = {}
  for _, k in ipairs(KS) do
    local at = "@" .. k
    N[s][k] = {
      p = s .. ".p" .. at, r = s .. ".r" .. at, f1 = s .. ".f1" .. at,
      hits = "_" .. s .. ".hits" .. at, pden = "_" .. s .. ".pden" .. at, rden = "_" .. s .. ".rden" .. at,
    }
  end
end

local function f1(p, r)
  if p + r == 0 then return 0 end
  return 2 * p * r / (p + r)
end

return kp.metric {
  name = "exact",
  version = "1.0.0",
  doc = [[
Exact-match precision, recall and F1 at k in {5, 10, M, O} on subsets all/present/absent.
P@k = hits in the first min(k, n) predictions / k; a document without predictions has P = R = F1 = 0
and adds nothing to the micro P denominator (profile knob pk_denominator "k"), or k (ExHiRD's
"k_always"). For M the denominator is n, for O the number of references. R@k = hits / number of references (0 without references).
Aggregates: <s>.p@k.micro / .macro, <s>.r@k.micro / .macro, <s>.f1@k.micro (harmonic mean of micro P
and R), <s>.f1@k.macro_hm (harmonic mean of macro P and macro R, as KPEval and kenchan0226 report),
<s>.f1@k.macro_doc (mean of per-document F1).]],
  score = function(doc, _, ctx, out)
    local always = ctx.profile.pk_denominator == "k_always"
    for _, s in ipairs(SUBSETS) do
      local preds, refs = doc:subset(s)  -- nothing for present/absent of a document without text
      if preds then
        local n, r = #preds, #refs
        local hits = { preds:match(refs):hits(5, 10, n, r) }
        for i, k in ipairs(KS) do
          local kk = (k == "M" and n) or (k == "O" and r) or k
          local pden = (n > 0 or always) and kk or 0
          local P = pden > 0 and hits[i] / pden or 0
          local R = r > 0 and hits[i] / r or 0
          local nm = N[s][k]
          out[nm.p], out[nm.r], out[nm.f1] = P, R, f1(P, R)
          out[nm.hits], out[nm.pden], out[nm.rden] = hits[i], pden, r
        end
      end
    end
    return out
  end,
  aggregate = function(cols)
    local agg = {}
    for _, s in ipairs(SUBSETS) do
      for _, k in ipairs(KS) do
        local nm = N[s][k]
        if cols[nm.p] and cols[nm.p]:count() > 0 then
          local mp, mr = cols[nm.p]:mean(), cols[nm.r]:mean()
          agg[nm.p .. ".macro"], agg[nm.r .. ".macro"] = mp, mr
          agg[nm.f1 .. ".macro_hm"] = f1(mp, mr)
          agg[nm.f1 .. ".macro_doc"] = cols[nm.f1]:mean()
          local hits, pden, rden = cols[nm.hits]:sum(), cols[nm.pden]:sum(), cols[nm.rden]:sum()
          local up = pden > 0 and hits / pden or 0
          local ur = rden > 0 and hits / rden or 0
          agg[nm.p .. ".micro"], agg[nm.r .. ".micro"], agg[nm.f1 .. ".micro"] = up, ur, f1(up, ur)
        end
      end
    end
    return agg
  end,
}
