-- kplab-api: 2
-- Diversity of a prediction list, repeats included (KPEval's diversity_metric.py; Bahuleyan & El Asri 2020).
local ipairs = ipairs

return kp.metric {
  name = "diversity",
  version = "2.0.0",
  doc = [[
Over the predictions as generated, before dedup (doc.preds_with_duplicates), n of them:
  all.unique_phrase_ratio  distinct stem keys / n
  all.unique_token_ratio   distinct stemmed tokens / number of tokens
  all.dup_token_ratio      1 - unique_token_ratio
  all.self_embed_sim       mean cosine over the n(n-1)/2 pairs (1 for one phrase)
  all.sem_diversity_index  Frobenius norm of the off-diagonal cosine matrix (phrases without a vector
                           contribute nothing, as KPEval drops zero embeddings); grows with n and with
                           redundancy: lower is more diverse.
No predictions (or no tokens): ratios 0, dup_token_ratio 1, self_embed_sim 0, index 0 (KPEval's conventions).]],
  needs = { "embeddings" },
  columns = { "all.unique_phrase_ratio", "all.unique_token_ratio", "all.dup_token_ratio", "all.self_embed_sim",
              "all.sem_diversity_index" },
  score = function(doc, _, ctx, out)
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
    if n == 0 or n_tokens == 0 then
      out["all.unique_phrase_ratio"], out["all.unique_token_ratio"], out["all.dup_token_ratio"] = 0, 0, 1
      out["all.self_embed_sim"], out["all.sem_diversity_index"] = 0, 0
      return
    end
    local S = ctx.cosine(list)
    out["all.unique_phrase_ratio"] = n_keys / n
    out["all.unique_token_ratio"] = n_stems / n_tokens
    out["all.dup_token_ratio"] = 1 - n_stems / n_tokens
    out["all.self_embed_sim"] = n == 1 and 1 or S:mean_upper()
    out["all.sem_diversity_index"] = S:norm(true)
  end,
}
