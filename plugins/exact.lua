-- kplab-api: 1
-- Exact matching: P/R/F1 at the cut-offs of params.ks (default 5, 10, M = number of predictions,
-- O = number of references), on all, present and absent keyphrases. A prediction is correct when its
-- stem key equals a reference's.
local ipairs, cutoffs = ipairs, kp.cutoffs
local SUBSETS = { "all", "present", "absent" }

-- Metric names for one ks string, built once per lane: names[s][i].p = "all.p@5", ...; '_' names are
-- internal (micro sums). Depends on params only, so no state crosses documents.
local cached_spec, cached_ks, cached_names
local function names_for(spec)
  if spec ~= cached_spec then
    local ks = assert(cutoffs(spec))
    local names = {}
    for _, s in ipairs(SUBSETS) do
      names[s] = {}
      for i, k in ipairs(ks) do
        local at = "@" .. k
        names[s][i] = {
          p = s .. ".p" .. at, r = s .. ".r" .. at, f1 = s .. ".f1" .. at,
          hits = "_" .. s .. ".hits" .. at, pden = "_" .. s .. ".pden" .. at, rden = "_" .. s .. ".rden" .. at,
        }
      end
    end
    cached_spec, cached_ks, cached_names = spec, ks, names
  end
  return cached_ks, cached_names
end

local function f1(p, r)
  if p + r == 0 then return 0 end
  return 2 * p * r / (p + r)
end

return kp.metric {
  name = "exact",
  version = "1.1.0",
  doc = [[
Exact-match precision, recall and F1 at each k of params.ks (default 5,10,M,O; any integer >= 1, M, O)
on subsets all/present/absent. P@k = hits in the first min(k, n) predictions / k; a document without
predictions has P = R = F1 = 0 and adds nothing to the micro P denominator (profile knob pk_denominator
"k"), or k (ExHiRD's "k_always"). For M the denominator is n, for O the number of references.
R@k = hits / number of references (0 without references).
Aggregates: <s>.p@k.micro / .macro, <s>.r@k.micro / .macro, <s>.f1@k.micro (harmonic mean of micro P
and R), <s>.f1@k.macro_hm (harmonic mean of macro P and macro R, as KPEval and kenchan0226 report),
<s>.f1@k.macro_doc (mean of per-document F1).]],
  params = { ks = "5,10,M,O" },
  check = function(p)
    local ok, message = cutoffs(p.ks)
    if not ok then return "parameter 'ks': " .. message end
  end,
  score = function(doc, p, ctx, out)
    local always = ctx.profile.pk_denominator == "k_always"
    local ks, names = names_for(p.ks)
    local cut = {}
    for _, s in ipairs(SUBSETS) do
      local preds, refs = doc:subset(s)  -- nothing for present/absent of a document without text
      if preds then
        local n, r = #preds, #refs
        for i, k in ipairs(ks) do cut[i] = (k == "M" and n) or (k == "O" and r) or k end
        local hits = { preds:match(refs):hits(table.unpack(cut, 1, #ks)) }
        for i = 1, #ks do
          local pden = (n > 0 or always) and cut[i] or 0
          local P = pden > 0 and hits[i] / pden or 0
          local R = r > 0 and hits[i] / r or 0
          local nm = names[s][i]
          out[nm.p], out[nm.r], out[nm.f1] = P, R, f1(P, R)
          out[nm.hits], out[nm.pden], out[nm.rden] = hits[i], pden, r
        end
      end
    end
    return out
  end,
  aggregate = function(cols, p)
    local ks, names = names_for(p.ks)
    local agg = {}
    for _, s in ipairs(SUBSETS) do
      for i = 1, #ks do
        local nm = names[s][i]
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
