-- kplab-api: 1
-- Semantic R-Precision (Venturini et al., seed 002) with its one-to-one (Div) and adaptive-k variants.
local ipairs, min, max, ceil, floor = ipairs, math.min, math.max, math.ceil, math.floor
local tonumber, gmatch = tonumber, string.gmatch
local SUBSETS = { "all", "present", "absent" }

-- "1,2,3" -> {1, 2, 3}, parsed once per distinct text (a pure memo, not state between documents)
local parsed = {}
local function parse_ks(text)
  if parsed[text] then return parsed[text] end
  local ks = {}
  for d in gmatch(text, "[^,%s]+") do
    local k = tonumber(d)
    if not k or k < 1 or k ~= floor(k) then error("parameter 'ks' must list integers >= 1 (got '" .. d .. "')") end
    ks[#ks + 1] = k
  end
  parsed[text] = ks
  return ks
end

-- Sum over the top predictions: 1 for a stem match, else the mean of its k largest cosines.
local function semrp_sum(means, flags)
  local s = 0
  for i = 1, #flags do s = s + (flags[i] and 1 or means[i]) end
  return s
end

return kp.metric {
  name = "semrp",
  version = "1.0.0",
  doc = [[
SemR-p (paper Eq. 1-2): R = #references; the top R predictions are scored one by one: 1 if the
prediction's stem key equals a reference's (alternatives included), else the mean of its min(k, R)
largest cosines to the references; SemR-p = sum / R. R = 0 or no predictions: 0. Cosines may be
negative (as the paper); clamp=true clamps them to [0, 1] first.
Profiles: kplab divides by R and embeds surfaces in model order; kpeval (the KPEval-SemR-p fork)
embeds stemmed strings and orders the `all` predictions present-first; semrp-standalone (the
standalone code) divides by min(#predictions, R), keeps repeats and embeds the original case.
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
  params = { k = 3, clamp = false, alpha = 0.5, ks = "" },
  needs = function(profile)
    return { profile.semrp_embed == "stems" and "embeddings:stems" or "embeddings" }
  end,
  score = function(doc, p, ctx, out)
    local prof = ctx.profile
    local form = prof.semrp_embed
    local by_min = prof.semrp_denominator == "min_preds_refs"
    local present_first = prof.rprec_order == "present_first"
    if p.k < 1 or p.k ~= floor(p.k) then error("parameter 'k' must be an integer >= 1 (got " .. p.k .. ")") end
    local ks = parse_ks(p.ks)
    for _, s in ipairs(SUBSETS) do
      local preds, refs = doc:subset(s)  -- nothing for present/absent of a document without text
      if preds then
        if s == "all" and doc.has_text and present_first then preds = preds:present_first() end
        local R = #refs
        local top = preds:top(R)
        local n = #top
        local pre = s .. ".semrp"
        if R == 0 or n == 0 then
          out[pre], out[pre .. "_div"], out[pre .. "_ak"], out[pre .. "_dk"] = 0, 0, 0, 0
          for _, k in ipairs(ks) do out[pre .. "_k" .. k] = 0 end
        else
          local den = by_min and min(n, R) or R
          local S = ctx.cosine(top, refs, form)
          if p.clamp then S = S:clamp(0, 1) end
          local flags = top:match(refs):flags()
          out[pre] = semrp_sum(S:row_topk_means(p.k), flags) / den
          out[pre .. "_div"] = S:maximum(top:match_pairs(refs)):assign() / den
          local ak = max(1, min(R, ceil(p.alpha * R)))
          out[pre .. "_ak"] = semrp_sum(S:row_topk_means(ak), flags) / den
          local d = 0
          if R >= 2 then
            local RR = ctx.cosine(refs, refs, form)
            if p.clamp then RR = RR:clamp(0, 1) end
            d = RR:mean_upper()
          end
          local dk = max(1, min(R, floor(1 + max(d, 0) * (R - 1) + 0.5)))
          out[pre .. "_dk"] = semrp_sum(S:row_topk_means(dk), flags) / den
          for _, k in ipairs(ks) do out[pre .. "_k" .. k] = semrp_sum(S:row_topk_means(k), flags) / den end
        end
      end
    end
    return out
  end,
}
