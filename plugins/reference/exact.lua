-- kplab-api: 2
-- The formula of plugins/exact.lua, whose score is the native kp.kernel.exact: the same parameters, columns and
-- aggregation, scored in Lua. Run it with `--plugins plugins/reference --metrics exact`; tests/host/kernel_test.cc
-- checks the kernel against this file bit for bit under every profile.
-- Exact matching: P/R/F1 at the cut-offs of params.ks (default 5, 10, M = number of predictions,
-- O = number of references), on all, present and absent keyphrases. A prediction is correct when its
-- stem key equals a reference's.
local ipairs, unpack = ipairs, table.unpack

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
    local slots = {}
    for i, k in ipairs(p.ks) do
      local at = "@" .. k
      local s = { p = c:column("p" .. at), r = c:column("r" .. at), f1 = c:column("f1" .. at),
                  hits = c:hidden("hits" .. at), pden = c:hidden("pden" .. at), rden = c:hidden("rden" .. at) }
      c:mean("p" .. at .. ".macro", s.p)
      c:mean("r" .. at .. ".macro", s.r)
      c:mean("f1" .. at .. ".macro_doc", s.f1)
      c:ratio("p" .. at .. ".micro", s.hits, s.pden, 0)
      c:ratio("r" .. at .. ".micro", s.hits, s.rden, 0)
      c:custom("f1" .. at .. ".micro", function(a) return f1(a["p" .. at .. ".micro"], a["r" .. at .. ".micro"]) end)
      c:custom("f1" .. at .. ".macro_hm", function(a) return f1(a["p" .. at .. ".macro"], a["r" .. at .. ".macro"]) end)
      slots[i] = s
    end
    return slots
  end,
  score = function(preds, refs, _, p, ctx, out)
    local always = ctx.profile.pk_denominator == "k_always"
    local n, r = #preds, #refs
    local cut = {}
    for i, k in ipairs(p.ks) do cut[i] = (k == "M" and n) or (k == "O" and r) or k end
    local hits = { preds:match(refs):hits(unpack(cut)) }
    for i, s in ipairs(ctx.slots) do
      local pden = (n > 0 or always) and cut[i] or 0
      local P = pden > 0 and hits[i] / pden or 0
      local R = r > 0 and hits[i] / r or 0
      out[s.p], out[s.r], out[s.f1] = P, R, f1(P, R)
      out[s.hits], out[s.pden], out[s.rden] = hits[i], pden, r
    end
  end,
}
