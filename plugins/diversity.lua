-- kplab-api: 2
-- Diversity of a prediction list, repeats included (KPEval's diversity_metric.py; Bahuleyan & El Asri 2020).
local ipairs = ipairs

-- nltk 3.8 sentence_bleu with uniform weights 1/n and SmoothingFunction().method1 (a zero count becomes
-- 0.1 / its denominator), from the counts of kp.textmetrics.self_bleu; 0 without a unigram match.
local function sentence_bleu(c, n)
  if c.num[1] == 0 then return 0 end
  local bp  -- brevity penalty
  if c.hyp_len > c.ref_len then
    bp = 1
  elseif c.hyp_len == 0 then
    bp = 0
  else
    bp = math.exp(1 - c.ref_len / c.hyp_len)
  end
  local terms = {}
  for k = 1, n do
    local p = c.num[k] == 0 and 0.1 / c.den[k] or c.num[k] / c.den[k]
    terms[k] = (1 / n) * math.log(p)
  end
  -- nltk sums the weighted log precisions with math.fsum; a plain left-to-right sum differs from it in
  -- the last bits (tests/host/textmetrics_test.cc, SelfBleuSumsLikeNltk).
  return bp * math.exp(kp.stats.fsum(terms))
end

local function mean(t)
  local s = 0
  for _, v in ipairs(t) do s = s + v end
  return s / #t
end

return kp.metric {
  name = "diversity",
  version = "2.1.1",
  doc = [[
Over the predictions as generated, before dedup (doc.preds_with_duplicates), n of them:
  all.unique_phrase_ratio  distinct stem keys / n
  all.unique_token_ratio   distinct stemmed tokens / number of tokens
  all.dup_token_ratio      1 - unique_token_ratio
  all.self_embed_sim       mean cosine over the n(n-1)/2 pairs (1 for one phrase)
  all.sem_diversity_index  Frobenius norm of the off-diagonal cosine matrix (phrases without a vector
                           contribute nothing, as KPEval drops zero embeddings); grows with n and with
                           redundancy: lower is more diverse.
  all.self_bleu            Self-BLEU: mean over phrases of the BLEU of the phrase (its stems) against
                           all the others (nltk sentence_bleu, weights 1/bleu_n, smoothing method1)
  all.self_edit_distance   kplab: mean over phrases of the mean normalized Indel distance
                           d/(len_i+len_j) of its stem string to the others' (0 = all equal);
                           kpeval: KPEval's value, the mean of rapidfuzz fuzz.ratio -- a similarity
                           from 0 to 100, despite the name
No predictions (or no tokens): ratios 0, dup_token_ratio 1, self_embed_sim 0, index 0 (KPEval's conventions).
Self-BLEU and self edit distance of fewer than two phrases: no value under kplab (nothing to compare),
0 under kpeval (KPEval's). Under kpeval each stem string is tokenized by the word tokenizer
(KPEval's word_tokenize); under kplab its stems are the tokens.]],
  params = {
    bleu_n = kp.int { default = 3, min = 1, max = 10, doc = "Self-BLEU's largest n-gram order (KPEval: ngram = 3)" },
    embeddings = kp.bool { default = true, doc = "the embedding columns (false: no model needed, those left empty)" },
  },
  needs = function(_, p) return p.embeddings and { "embeddings" } or {} end,
  columns = { "all.unique_phrase_ratio", "all.unique_token_ratio", "all.dup_token_ratio", "all.self_embed_sim",
              "all.sem_diversity_index", "all.self_bleu", "all.self_edit_distance" },
  score = function(doc, p, ctx, out)
    local list, n = doc.preds_with_duplicates, #doc.preds_with_duplicates
    local keys, stems, n_tokens, n_keys, n_stems = {}, {}, 0, 0, 0
    for i = 1, n do
      local kp_i = list[i]
      if not keys[kp_i.key] then keys[kp_i.key], n_keys = true, n_keys + 1 end
      for _, st in ipairs(kp_i.stems) do
        n_tokens = n_tokens + 1
        if not stems[st] then stems[st], n_stems = true, n_stems + 1 end
      end
    end
    local kpeval = ctx.profile.text_overlap == "kpeval"
    if n == 0 or n_tokens == 0 then
      out["all.unique_phrase_ratio"], out["all.unique_token_ratio"], out["all.dup_token_ratio"] = 0, 0, 1
      if p.embeddings then out["all.self_embed_sim"], out["all.sem_diversity_index"] = 0, 0 end
      if kpeval then out["all.self_bleu"], out["all.self_edit_distance"] = 0, 0 end
      return
    end
    if n >= 2 then
      local strings = list:keys()  -- each phrase's stems joined by ' '
      local bleu = {}
      for i, c in ipairs(kp.textmetrics.self_bleu(strings, p.bleu_n, kpeval and "words" or "whitespace")) do
        bleu[i] = sentence_bleu(c, p.bleu_n)
      end
      out["all.self_bleu"] = mean(bleu)
      local sim = mean(kp.textmetrics.self_indel(strings))  -- fuzz.ratio / 100, per phrase then over phrases
      out["all.self_edit_distance"] = kpeval and sim * 100 or 1 - sim
    elseif kpeval then
      out["all.self_bleu"], out["all.self_edit_distance"] = 0, 0
    end
    out["all.unique_phrase_ratio"] = n_keys / n
    out["all.unique_token_ratio"] = n_stems / n_tokens
    out["all.dup_token_ratio"] = 1 - n_stems / n_tokens
    if p.embeddings then
      local S = ctx.cosine(list)
      out["all.self_embed_sim"] = n == 1 and 1 or S:mean_upper()
      out["all.sem_diversity_index"] = S:norm(true)
    end
  end,
}
