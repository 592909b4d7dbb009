-- kplab-api: 2
-- BERTScore (Zhang et al., ICLR 2020) of a document's keyphrases as KPEval uses it
-- (uclanlp/KPEval metrics/bert_score_metric.py over Tiiiger/bert_score): one candidate string against
-- one reference string per document and subset, greedy matching of contextual token embeddings.

-- The list in the order its string joins it: under a profile whose `all` order is present first
-- (kpeval: KPEval joins result['present'] + result['absent'], and the references likewise), present
-- keyphrases then absent ones; otherwise the profile's order (model order, file order).
local function ordered(list, subset, doc, profile)
  if subset == "all" and doc.has_text and profile.rprec_order == "present_first" then
    return list:present_first()
  end
  return list
end

-- KPEval's string: ', '.join of the keyphrases (their surfaces as the profile normalized them).
local function joined(list)
  return table.concat(list:surfaces(), ", ")
end

-- KPEval's reference string of a subset: its present or absent references (doc:kpeval_references: the
-- line's references zipped with the deduplicated ones' presence flags, as rouge_metric.py builds its
-- lists) joined by ', '; `all` is the present ones, then the absent ones.
local function kpeval_reference_string(doc, subset)
  local present, absent = doc:kpeval_references()
  if subset == "present" then return table.concat(present:surfaces(), ", ") end
  if subset == "absent" then return table.concat(absent:surfaces(), ", ") end
  local all = present:surfaces()
  return table.concat(table.move(absent:surfaces(), 1, #absent, #all + 1, all), ", ")
end

-- The references' string of a subset: KPEval's zip under kpeval, each unique reference once otherwise.
local function reference_string(refs, subset, doc, profile)
  if profile.name == "kpeval" then return kpeval_reference_string(doc, subset) end
  return joined(ordered(refs, subset, doc, profile))
end

-- Token weights of string i of T: BERTScore without idf weighs every token 1 and [CLS]/[SEP] (the
-- post-processor's specials, by id) 0; with idf, idf.w[id], or ln(N + 1) for an id no reference has.
-- bert_score zeroes [CLS] and [SEP] by id, so the same token written in the text weighs 0 too.
local function weights(T, i, idf)
  local ids, special, w, zero = T:ids(i), T:special(i), {}, {}
  for k = 1, #ids do
    if special[k] == 1 then zero[ids[k]] = true end
  end
  for k = 1, #ids do
    if idf then
      w[k] = idf.w[ids[k]] or idf.unseen
    else
      w[k] = zero[ids[k]] and 0 or 1
    end
  end
  return w
end

local SUBSETS = { "all", "present", "absent" }
local BATCH = 64  -- reference strings per ctx.token_embeddings call while counting document frequencies

return kp.metric {
  name = "bertscore",
  version = "1.0.0",
  doc = [[
BERTScore P, R, F1 per document and subset (<s>.bertscore_p, _r, _f1 for <s> in all, present,
absent); the run's value is the mean over documents. Candidate = the subset's predictions (after the
profile's filtering and dedup) joined by ", "; reference = the subset's references joined by ", ";
under profile kpeval "all" joins present ones first, then absent ones, and the references are
KPEval's: every reference of the line, repeats included, zipped with the unique ones' presence flags
(KPEval's strings), elsewhere model / file order. Each string is embedded by the run's model (a transformer: --model NAME) at
hidden layer `layer`; P = mean over candidate tokens of the best cosine with any reference token
([CLS]/[SEP] included as matches), weighted 1 per token and 0 for [CLS]/[SEP] (or by idf, idf = true:
ln((N+1)/(df+1)) over the N reference strings of the subset in the whole corpus); R likewise;
F1 = 2PR/(P+R). An empty side gives 0, 0, 0. baseline = a bert_score baseline CSV (LAYER,P,R,F):
each value x becomes (x - b)/(1 - b) with b from the row of `layer`. KPEval's bert-base-uncased at
layer 8 without idf or rescaling is the default set-up; see docs/profiles.md for what is not
reproduced (batch padding).]],
  params = {
    layer = kp.int { default = 8, min = 0, doc = "hidden layer (0 = the embedding layer's output; KPEval: 8)" },
    idf = kp.bool { default = false, doc = "weigh tokens by idf over the subset's reference strings" },
    baseline = kp.string { default = "", doc = "bert_score baseline CSV (LAYER,P,R,F) to rescale with" },
  },
  needs = { "tokens" },
  subsets = SUBSETS,
  columns = { "bertscore_p", "bertscore_r", "bertscore_f1" },
  -- Once per run over the whole corpus (every shard sees all of it, so shards merge): the baseline row
  -- and, with idf, each subset's document frequencies of token ids over its reference strings.
  prepare = function(corpus, p, ctx)
    local prep = {}
    if p.baseline ~= "" then prep.baseline = kp.bertscore_baseline(p.baseline, p.layer) end
    if not p.idf then return prep end
    prep.idf = {}
    for _, s in ipairs(SUBSETS) do
      local strings = {}
      for i = 1, #corpus do
        local doc = corpus:doc(i)
        local _, refs = doc:subset(s)
        if refs then strings[#strings + 1] = reference_string(refs, s, doc, ctx.profile) end
      end
      local df, n = {}, #strings
      for b = 1, n, BATCH do
        local T = ctx.token_embeddings(table.move(strings, b, math.min(n, b + BATCH - 1), 1, {}), 0)
        for k = 1, #T do
          local seen = {}
          for _, id in ipairs(T:ids(k)) do
            if not seen[id] then
              seen[id] = true
              df[id] = (df[id] or 0) + 1
            end
          end
        end
      end
      local w = {}
      for id, c in pairs(df) do w[id] = math.log((n + 1) / (c + 1)) end
      prep.idf[s] = { w = w, unseen = math.log(n + 1), n = n }
    end
    return prep
  end,
  score = function(preds, refs, doc, p, ctx, out)
    local cand = joined(ordered(preds, ctx.subset, doc, ctx.profile))
    local ref = reference_string(refs, ctx.subset, doc, ctx.profile)
    local T = ctx.token_embeddings({ cand, ref }, p.layer)
    local idf = p.idf and ctx.prepared.idf[ctx.subset] or nil
    local P, R, F = kp.greedy_match(T:cosine(1, T, 2), weights(T, 1, idf), weights(T, 2, idf))
    local b = ctx.prepared.baseline
    if b then
      P, R, F = (P - b.p) / (1 - b.p), (R - b.r) / (1 - b.r), (F - b.f) / (1 - b.f)
    end
    out.bertscore_p, out.bertscore_r, out.bertscore_f1 = P, R, F
  end,
}
