-- kplab-api: 2
-- The formula of plugins/semrp.lua, whose score is the native kp.kernel.semrp: the same parameters, columns and
-- aggregation, scored in Lua. Run it with `--plugins plugins/reference --metrics semrp`; tests/host/kernel_test.cc
-- checks the kernel against this file bit for bit under every profile.
-- Semantic R-Precision (Venturini et al., seed 002) with its one-to-one (Div) and adaptive-k variants.
local ipairs, min, max, ceil, floor = ipairs, math.min, math.max, math.ceil, math.floor

-- Sum over the top predictions: 1 for a stem match, else the mean of its k largest cosines.
local function semrp_sum(means, flags)
  local s = 0
  for i = 1, #flags do s = s + (flags[i] and 1 or means[i]) end
  return s
end

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
    local s = { semrp = c:column("semrp", "mean"), div = c:column("semrp_div", "mean"), k = {},
                ak = c:column("semrp_ak", "mean"), dk = c:column("semrp_dk", "mean") }
    for i, k in ipairs(p.ks ~= "" and kp.cutoffs(p.ks) or {}) do
      s.k[i] = { k = k, slot = c:column("semrp_k" .. k, "mean") }
    end
    return s
  end,
  score = function(preds, refs, doc, p, ctx, out)
    local prof, s = ctx.profile, ctx.slots
    if p.dedup == "false" and prof.dedup then
      preds = doc.preds_with_duplicates
      if ctx.subset ~= "all" then preds = preds:subset(ctx.subset) end
    elseif p.dedup == "true" and not prof.dedup then
      preds = preds:unique()
    end
    if ctx.subset == "all" and doc.has_text and prof.rprec_order == "present_first" then
      preds = preds:present_first()
    end
    local R = #refs
    local top = preds:top(R)
    local n = #top
    if n == 0 then
      out[s.semrp], out[s.div], out[s.ak], out[s.dk] = 0, 0, 0, 0
      for _, e in ipairs(s.k) do out[e.slot] = 0 end
      return
    end
    local form = prof.semrp_embed
    local den = prof.semrp_denominator == "min_preds_refs" and min(n, R) or R
    local S = ctx.cosine(top, refs, form)
    if p.clamp then S = S:clamp(0, 1) end
    local flags = top:match(refs):flags()
    out[s.semrp] = semrp_sum(S:row_topk_means(p.k), flags) / den
    out[s.div] = S:maximum(top:match_pairs(refs)):assign() / den
    local ak = max(1, min(R, ceil(p.alpha * R)))
    out[s.ak] = semrp_sum(S:row_topk_means(ak), flags) / den
    local d = 0
    if R >= 2 then
      local RR = ctx.cosine(refs, refs, form)
      if p.clamp then RR = RR:clamp(0, 1) end
      d = RR:mean_upper()
    end
    local dk = max(1, min(R, floor(1 + max(d, 0) * (R - 1) + 0.5)))
    out[s.dk] = semrp_sum(S:row_topk_means(dk), flags) / den
    for _, e in ipairs(s.k) do out[e.slot] = semrp_sum(S:row_topk_means(e.k), flags) / den end
  end,
}
