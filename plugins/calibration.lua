-- kplab-api: 2
-- Calibration of a generator (seed 001, "Deep Seq2Seq Keyphrase Generation: Model Calibration and
-- Uncertainty"): keyphrase perplexity, confidence = 1/KPP and the expected calibration error over
-- equal-width confidence bins, with its maximum (MCE) and the Brier score, on all, present and absent
-- predictions; the whole-sequence perplexity (Eq. 1) and the predictions the profile dropped, per
-- document. Needs a predictions file in the "tokens" format (docs/calibration.md). ECE is a
-- corpus-level quantity: each document reports, per bin, how many of its keyphrases fall there, how many
-- are correct and the sum of their confidences (hidden columns); the aggregates sum them over the corpus
-- before applying Eq. 9. Equal-mass bins and the risk-coverage curve are not here: their bin edges and
-- ranking depend on every keyphrase of the corpus, which no per-document slot can carry through a shard
-- merge (docs/plugins.md); scripts/analysis/calibration.lua computes them.
local abs, exp, max = math.abs, math.exp, math.max

return kp.metric {
  name = "calibration",
  version = "2.1.0",
  doc = [[
Keyphrase perplexity and calibration (seed 001, Eq. 2-3, 7, 9) on subsets all/present/absent.
KPP of a keyphrase = (product of its tokens' conditional probabilities)^(-1/m): m = its number of tokens
with kpp="tokens" (Eq. 2; Eq. 3 for One2Set), its number of words (the detokenized keyphrase split on
spaces) with kpp="words" (KPP-s, Eq. 7; the default: for word-level models both are equal).
Confidence = 1/KPP. A keyphrase is accurate when it matches a reference under the profile's matching
(stem keys, as `exact`). Per document: <s>.kpp, <s>.confidence and <s>.accuracy (means over the
document's keyphrases). Aggregates over every keyphrase of the corpus: <s>.kpp.micro,
<s>.confidence.micro, <s>.accuracy.micro, <s>.kpp.macro (mean of the per-document means), <s>.ece
(Eq. 9 with `bins` equal-width bins (lo, hi] of [0, 1]) and per bin i: <s>.ece_bin@i.count,
<s>.ece_bin@i.accuracy and <s>.ece_bin@i.confidence (the last two only for non-empty bins), <s>.mce (the
largest |accuracy - confidence| of a non-empty bin) and <s>.brier (mean of (confidence - accuracy)^2).
Predictions dropped by the profile (duplicates, <unk>, empty) are not counted; per document
all.excluded_dups and all.excluded_invalid say how many there were (run level: all.excluded_dups.total,
all.excluded_invalid.total).
Whole-sequence perplexity (Eq. 1, every generated token including delimiters and the end token, padding
left out): per document all.seq_ppl; run level all.seq_ppl.macro (mean over documents) and
all.seq_ppl.micro (exp of minus the mean log-probability over every token of the corpus).]],
  params = {
    bins = kp.int { default = 10, min = 1, max = 10000, doc = "number of equal-width confidence bins" },
    kpp = kp.string { default = "words", one_of = { "words", "tokens" }, doc = "KPP per word (KPP-s) or per token" },
  },
  subsets = { "all", "present", "absent" },
  columns = function(c, p)
    local s = {
      kpp = c:column("kpp"), confidence = c:column("confidence"), accuracy = c:column("accuracy"),
      n = c:hidden("n"), hits = c:hidden("hits"), kpp_sum = c:hidden("kpp_sum"), conf_sum = c:hidden("conf_sum"),
      sq_sum = c:hidden("brier_sum"), bins = {},
      -- Document-level quantities, written in subset "all" only.
      seq_ppl = c:column("seq_ppl"), seq_lp = c:hidden("seq_logprob_sum"), seq_n = c:hidden("seq_tokens"),
      dups = c:column("excluded_dups"), invalid = c:column("excluded_invalid"),
    }
    -- Totals only where documents wrote counts (subset all): a plain sum would print 0 for present/absent.
    for _, name in ipairs({ "excluded_dups", "excluded_invalid" }) do
      c:custom(name .. ".total", function(_, cols)
        if cols[name]:count() > 0 then return cols[name]:sum() end
      end)
    end
    c:mean("seq_ppl.macro", s.seq_ppl)
    c:custom("seq_ppl.micro", function(_, cols)
      local t = cols.seq_tokens:sum()
      if t > 0 then return exp(-cols.seq_logprob_sum:sum() / t) end
    end)
    c:ratio("brier", s.sq_sum, s.n)
    c:ratio("kpp.micro", s.kpp_sum, s.n)
    c:mean("kpp.macro", s.kpp)
    c:ratio("confidence.micro", s.conf_sum, s.n)
    c:ratio("accuracy.micro", s.hits, s.n)
    for i = 1, p.bins do
      local b = { n = c:hidden("ece_n@" .. i), hits = c:hidden("ece_hits@" .. i), conf = c:hidden("ece_conf@" .. i) }
      local bin = "ece_bin@" .. i
      c:sum(bin .. ".count", b.n)
      c:ratio(bin .. ".accuracy", b.hits, b.n)
      c:ratio(bin .. ".confidence", b.conf, b.n)
      s.bins[i] = b
    end
    -- Eq. 9: sum over non-empty bins of |B_i| / N * |accuracy_i - confidence_i|.
    c:custom("ece", function(a, cols)
      local n, ece = cols.n:sum(), 0
      for i = 1, p.bins do
        local bin = "ece_bin@" .. i
        local count = a[bin .. ".count"]
        if count > 0 then ece = ece + count / n * abs(a[bin .. ".accuracy"] - a[bin .. ".confidence"]) end
      end
      return ece
    end)
    c:custom("mce", function(a)
      local mce
      for i = 1, p.bins do
        local bin = "ece_bin@" .. i
        if a[bin .. ".count"] > 0 then mce = max(mce or 0, abs(a[bin .. ".accuracy"] - a[bin .. ".confidence"])) end
      end
      return mce
    end)
    return s
  end,
  score = function(preds, refs, doc, p, ctx, out)
    local s = ctx.slots
    if ctx.subset == "all" then
      if kp.calib.count_probs(doc.preds) < #doc.preds then
        error(string.format("document '%s' has predictions without token probabilities (expected a predictions " ..
          "file in the \"tokens\" format, docs/calibration.md)", doc.id), 0)
      end
      out[s.dups], out[s.invalid] = kp.calib.excluded(doc.preds)
      local seq = kp.calib.sequence_logprobs(doc.preds)
      if #seq > 0 then
        local lp = 0
        for i = 1, #seq do lp = lp + seq[i] end
        out[s.seq_ppl], out[s.seq_lp], out[s.seq_n] = exp(-lp / #seq), lp, #seq
      end
    end
    local n = #preds
    if n == 0 then return end
    local kpps = kp.calib.kpps(preds, p.kpp)
    local flags = preds:match(refs):flags()
    local hits, kpp_sum, conf_sum, sq_sum = 0, 0, 0, 0
    for i = 1, n do
      local conf = 1 / kpps[i]
      local b = s.bins[kp.calib.bin(conf, p.bins)]
      local hit = flags[i] and 1 or 0
      out[b.n], out[b.hits], out[b.conf] = (out[b.n] or 0) + 1, (out[b.hits] or 0) + hit, (out[b.conf] or 0) + conf
      hits, kpp_sum, conf_sum = hits + hit, kpp_sum + kpps[i], conf_sum + conf
      sq_sum = sq_sum + (conf - hit) ^ 2
    end
    out[s.kpp], out[s.confidence], out[s.accuracy] = kpp_sum / n, conf_sum / n, hits / n
    out[s.n], out[s.hits], out[s.kpp_sum], out[s.conf_sum], out[s.sq_sum] = n, hits, kpp_sum, conf_sum, sq_sum
  end,
}
