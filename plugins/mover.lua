-- kplab-api: 2
-- MoverScore (Zhao et al., EMNLP 2019) of a document's keyphrases as KPEval uses it (uclanlp/KPEval
-- metrics/mover_score_metric.py over AIPHES/emnlp19-moverscore moverscore.py, version 1, and
-- moverscore_v2.py, version 2): one prediction string against one reference string per document and
-- subset, an earth mover's distance between their contextual token embeddings weighted by idf.

-- The list in the order its string joins it: KPEval joins result['present'] + result['absent'] (present
-- first) under a profile whose `all` order is present first (kpeval); otherwise the profile's order.
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

-- Python's string.punctuation: MoverScore drops a token equal to one of these characters.
local PUNCT = {}
for c in ("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"):gmatch(".") do PUNCT[c] = true end

-- The idf of every token id over N strings (MoverScore's get_idf_dict): ln((N + 1) / (df + 1)), where
-- df counts the strings whose tokens ([CLS] ... [SEP], cut as embedded) contain the id; an id in none
-- gets ln(N + 1) (its defaultdict's default). [CLS] and [SEP] are in every string: their idf is 0.
local BATCH = 64
local function idf_of(strings, ctx)
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
  return { w = w, unseen = math.log(n + 1) }
end

local function f32(x) return (string.unpack("f", string.pack("f", x))) end

-- Which tokens of string i of T take part, and their idf weights. moverscore.py drops punctuation
-- (and subwords "##..." when remove_subwords, and stop words); moverscore_v2.py always drops
-- subwords.
local function tokens_of(T, i, idf, p, stop)
  local keep, w = {}, {}
  local ids = T:ids(i)
  for k, tok in ipairs(T:tokens(i)) do
    local subword = tok:find("##", 1, true) ~= nil
    keep[k] = not PUNCT[tok] and not stop[tok] and not (subword and (p.remove_subwords or p.version == 2))
    w[k] = idf.w[ids[k]] or idf.unseen
  end
  return keep, w
end

-- c / (sum c + eps), the first histogram's masses on the first bins, the second's on the last ones.
local function histograms(m1, m2, eps)
  local s1, s2 = 0, 0
  for _, x in ipairs(m1) do s1 = s1 + x end
  for _, x in ipairs(m2) do s2 = s2 + x end
  local c1, c2 = {}, {}
  for k = 1, #m1 + #m2 do
    c1[k] = k <= #m1 and m1[k] / (s1 + eps) or 0
    c2[k] = k > #m1 and m2[k - #m1] / (s2 + eps) or 0
  end
  return c1, c2
end

-- Version 1 (moverscore.py word_mover_score): per token, the min, mean and max over the last five
-- layers of the layer vectors divided by their norms; n-grams of the kept tokens (load_ngram: vector
-- sum_k w_k / (sum w + 1e-5) e_k, mass sum w); each n-gram vector divided by (norm + 1e-6); cost =
-- squared Euclidean distance; score = 1 - EMD.
local function score_v1(a, b, wa, wb, p, ctx, stop)
  local L = ctx.token_layers()
  local T = ctx.token_embeddings({ a, b }, { L - 4, L - 3, L - 2, L - 1, L }, { "min", "mean", "max" })
  local ka, xa = tokens_of(T, 1, wa, p, stop)
  local kb, xb = tokens_of(T, 2, wb, p, stop)
  local G1, m1 = T:ngrams(1, ka, xa, p.n_gram, 1e-5)
  local G2, m2 = T:ngrams(2, kb, xb, p.n_gram, 1e-5)
  local c1, c2 = histograms(m1, m2, 1e-5)
  local emd = kp.emd(c1, c2, kp.token_distances(G1, G2, "sqeuclidean", 1e-6))
  return 1 - emd, m1, m2
end

-- Version 2 (moverscore_v2.py): the last layer; dropped tokens keep their place as zero vectors of
-- weight 0; vectors divided by (norm + 1e-30); cost = Euclidean distance; masses c / (sum c + 1e-30);
-- score = 1 / (1 + the cost of pyemd's optimal flow).
local function score_v2(a, b, wa, wb, p, ctx, stop)
  local T = ctx.token_embeddings({ a, b }, ctx.token_layers())
  local ka, xa = tokens_of(T, 1, wa, p, stop)
  local kb, xb = tokens_of(T, 2, wb, p, stop)
  local m1, m2 = {}, {}
  for k = 1, #ka do m1[k] = ka[k] and f32(xa[k]) or 0 end
  for k = 1, #kb do m2[k] = kb[k] and f32(xb[k]) or 0 end
  local c1, c2 = histograms(m1, m2, 1e-30)
  local _, cost = kp.emd(c1, c2, kp.token_distances(T:select(1, ka), T:select(2, kb), "euclidean", 1e-30))
  return 1 / (1 + cost), m1, m2
end

local function has_mass(m)
  for _, x in ipairs(m) do
    if x > 0 then return true end
  end
  return false
end

local SUBSETS = { "all", "present", "absent" }

return kp.metric {
  name = "mover",
  version = "1.0.0",
  doc = [[
MoverScore per document and subset (<s>.moverscore for <s> in all, present, absent; KPEval's
mover_score_<s>); the run's value is the mean over documents. Predictions string = the subset's
predictions (after the profile's filtering and dedup) joined by ", ", references string likewise;
under profile kpeval "all" joins present ones first, then absent ones (KPEval's strings). version 1
(KPEval's configuration; moverscore.py, its BERT-base MNLI model): tokens embedded by the run's model
(--model, a transformer), the last five layers' unit vectors pooled by min, mean and max; version 2
(moverscore_v2.py, DistilBERT): the last layer. Tokens weighted by idf over the corpus's "all"
strings (ln((N+1)/(df+1))), punctuation dropped (subwords too in version 2 or with remove_subwords,
stop words when stop_words lists them); the earth mover's distance between the two strings' weighted
n-gram (version 1) or token (version 2) vectors, exact as pyemd computes it; score = 1 - EMD (version 1)
or 1 / (1 + the optimal flow's cost) (version 2). idf_swap: KPEval passes the predictions where
MoverScore expects references, so each side is weighted by the other side's idf; profile = swapped
under kpeval, each side's own under kplab. Under kplab a subset where either string has no weighted
token scores 0; under kpeval what MoverScore computes there. See docs/metrics.md and docs/profiles.md.]],
  params = {
    version = kp.int { default = 1, min = 1, max = 2, doc = "1: moverscore.py (KPEval's configuration), 2: moverscore_v2.py" },
    n_gram = kp.int { default = 1, min = 1, max = 512, doc = "n-gram size (version 1; KPEval: 1)" },
    remove_subwords = kp.bool { default = false, doc = "drop '##' tokens in version 1 (KPEval: false; version 2 always does)" },
    stop_words = kp.string { default = "", doc = "space-separated stop words to drop (KPEval's remove_stop_words: scikit-learn's list)" },
    idf_swap = kp.string { default = "profile", one_of = { "profile", "true", "false" },
                           doc = "weigh each side by the other side's idf (KPEval's argument order): as the profile, or true / false" },
  },
  needs = { "tokens" },
  subsets = SUBSETS,
  columns = { "moverscore" },
  -- Once per run over the whole corpus (shards see all of it): the idf of the predictions' and the
  -- references' "all" strings, as KPEval's get_idf_dict(allkp_preds) / get_idf_dict(allkp_refs).
  prepare = function(corpus, p, ctx)
    local preds, refs = {}, {}
    for i = 1, #corpus do
      local doc = corpus:doc(i)
      preds[i] = joined(ordered(doc.preds, "all", doc, ctx.profile))
      refs[i] = reference_string(doc.refs, "all", doc, ctx.profile)
    end
    local stop = {}
    for w in p.stop_words:gmatch("%S+") do stop[w] = true end
    local swap = p.idf_swap == "true" or (p.idf_swap == "profile" and ctx.profile.name == "kpeval")
    return { preds = idf_of(preds, ctx), refs = idf_of(refs, ctx), swap = swap, stop = stop,
             kpeval = ctx.profile.name == "kpeval" }
  end,
  score = function(preds, refs, doc, p, ctx, out)
    local prep = ctx.prepared
    local a = joined(ordered(preds, ctx.subset, doc, ctx.profile))
    local b = reference_string(refs, ctx.subset, doc, ctx.profile)
    -- KPEval calls word_mover_score(preds, refs, idf_refs, idf_preds): MoverScore's "references" are
    -- the predictions, weighted by the references' idf, and the other way round.
    local wa, wb = prep.preds, prep.refs
    if prep.swap then wa, wb = prep.refs, prep.preds end
    local score, m1, m2 = (p.version == 1 and score_v1 or score_v2)(a, b, wa, wb, p, ctx, prep.stop)
    if not prep.kpeval and not (has_mass(m1) and has_mass(m2)) then score = 0 end
    out.moverscore = score
  end,
}
