-- kplab-api: 2
-- Semantic R-Precision (Venturini et al., seed 002) with its one-to-one (Div) and adaptive-k variants.
local ipairs = ipairs

return kp.metric {
  name = "semrp",
  version = "2.0.0",
  doc = [[
SemR-p (paper Eq. 1-2): R = #references; the top R predictions are scored one by one: 1 if the
prediction's stem key equals a reference's (alternatives included), else the mean of its min(k, R)
largest cosines to the references; SemR-p = sum / R. R = 0 or no predictions: 0. Cosines may be
negative (as the paper); clamp=true clamps them to [0, 1] first.
Profiles: kplab divides by R and embeds surfaces in model order; kpeval (the KPEval-SemR-p fork)
embeds stemmed strings and orders the `all` predictions present-first; semrp-standalone (the
standalone code) divides by min(#predictions, R), keeps repeats and embeds the original case.
dedup: repeated predictions (same stem key) before the top-R cut. "profile" (default) as the profile
built the list (dropped, first wins, except under semrp-standalone); "false" keeps every repeat, each
taking a rank as in the authors' code (so kplab + dedup=false is "/ R, no dedup"); "true" drops them
under any profile. References are always the profile's.
Columns, for <s> in all, present, absent:
  <s>.semrp      k = params.k (default 3).
  <s>.semrp_div  SemR-p-Div (paper section 7): one maximum-weight assignment between the top R
                 predictions and the references, weight 1 for a stem match else the cosine; the sum of
                 the assigned weights / R, so two predictions cannot both take credit for one reference.
  <s>.semrp_ak   adaptive k = ceil(alpha * R), clipped to [1, R] (alpha = params.alpha, default 0.5).
  <s>.semrp_dk   density-adaptive k: d = mean cosine over the R(R-1)/2 pairs of distinct references
                 (0 when R < 2), d+ = max(d, 0), k = floor(1 + d+ (R - 1) + 1/2) clipped to [1, R]:
                 k = 1 for mutually dissimilar references (a prediction is judged against its one closest
                 concept), up to R for a dense, redundant reference set.
  <s>.semrp_k<j> one column per j in params.ks (e.g. ks="1,2,3" for the paper's k ablation).]],
  params = {
    k = kp.int { default = 3, min = 1, doc = "number of largest cosines averaged per prediction" },
    clamp = kp.bool { default = false, doc = "clamp cosines to [0, 1]" },
    alpha = kp.number { default = 0.5, min = 0, doc = "adaptive k = ceil(alpha * R)" },
    ks = kp.string { default = "", doc = "extra k values, comma-separated integers >= 1 (a semrp_k<j> column each)" },
    dedup = kp.string { default = "profile", one_of = { "profile", "true", "false" },
                        doc = "repeated predictions before the top-R cut: as the profile, dropped (true) or kept (false)" },
  },
  check = function(p)
    local ks, message = kp.cutoffs(p.ks == "" and "1" or p.ks)
    if not ks then return "parameter 'ks': " .. message end
    for _, k in ipairs(ks) do
      if type(k) == "string" then return "parameter 'ks' must list integers >= 1 (got '" .. k .. "')" end
    end
  end,
  needs = function(profile)
    return { profile.semrp_embed == "stems" and "embeddings:stems" or "embeddings" }
  end,
  subsets = { "all", "present", "absent" },
  columns = function(c, p)
    for _, name in ipairs { "semrp", "semrp_div", "semrp_ak", "semrp_dk" } do c:column(name, "mean") end
    for _, k in ipairs(p.ks ~= "" and kp.cutoffs(p.ks) or {}) do c:column("semrp_k" .. k, "mean") end
  end,
  score = kp.kernel.semrp,  -- the host's native kernel (engine/semrp_kernel.h); plugins/reference/semrp.lua is its Lua
}
