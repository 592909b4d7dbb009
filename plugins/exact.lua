-- kplab-api: 2
-- Exact matching: P/R/F1 at the cut-offs of params.ks (default 5, 10, M = number of predictions,
-- O = number of references), on all, present and absent keyphrases. A prediction is correct when its
-- stem key equals a reference's.
local ipairs = ipairs

local function f1(p, r) return p + r > 0 and 2 * p * r / (p + r) or 0 end

return kp.metric {
  name = "exact",
  version = "2.0.0",
  doc = [[
Exact-match precision, recall and F1 at each k of params.ks on subsets all/present/absent.
P@k = hits in the first min(k, n) predictions / k; a document without predictions has P = R = F1 = 0
and adds nothing to the micro P denominator (profile knob pk_denominator "k"), or k (ExHiRD's
"k_always"). For M the denominator is n, for O the number of references. R@k = hits / number of
references (0 without references).
Aggregates: <s>.p@k.micro / .macro, <s>.r@k.micro / .macro, <s>.f1@k.micro (harmonic mean of micro P
and R), <s>.f1@k.macro_hm (harmonic mean of macro P and macro R, as KPEval and kenchan0226 report),
<s>.f1@k.macro_doc (mean of per-document F1).]],
  params = {
    ks = kp.cutoffs { default = "5,10,M,O", doc = "integers >= 1, M (#predictions), O (#references)" },
  },
  subsets = { "all", "present", "absent" },
  columns = function(c, p)
    for _, k in ipairs(p.ks) do
      local at = "@" .. k
      local P, R, F1 = c:column("p" .. at), c:column("r" .. at), c:column("f1" .. at)
      local hits, pden, rden = c:hidden("hits" .. at), c:hidden("pden" .. at), c:hidden("rden" .. at)
      c:mean("p" .. at .. ".macro", P)
      c:mean("r" .. at .. ".macro", R)
      c:mean("f1" .. at .. ".macro_doc", F1)
      c:ratio("p" .. at .. ".micro", hits, pden, 0)
      c:ratio("r" .. at .. ".micro", hits, rden, 0)
      c:custom("f1" .. at .. ".micro", function(a) return f1(a["p" .. at .. ".micro"], a["r" .. at .. ".micro"]) end)
      c:custom("f1" .. at .. ".macro_hm", function(a) return f1(a["p" .. at .. ".macro"], a["r" .. at .. ".macro"]) end)
    end
  end,
  score = kp.kernel.exact,  -- the host's native kernel (kplab/kernels.h); plugins/reference/exact.lua is its Lua
}
