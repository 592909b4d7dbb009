-- kplab-api: 1
-- Calibration of a generator (seed 001, "Deep Seq2Seq Keyphrase Generation: Model Calibration and
-- Uncertainty"): keyphrase perplexity, confidence = 1/KPP and the expected calibration error over
-- equal-width confidence bins, on all, present and absent predictions. Needs a predictions file in the
-- "tokens" format (docs/calibration.md). ECE is a corpus-level quantity: each document reports, per bin,
-- how many of its keyphrases fall there, how many are correct and the sum of their confidences ('_'
-- columns), and `aggregate` sums them over the corpus before applying Eq. 9.
local ipairs = ipairs
local SUBSETS = { "all", "present", "absent" }

-- Column names, built once per bin count.
local NAMES = {}
local function names(bins)
  if NAMES[bins] then return NAMES[bins] end
  local N = {}
  for _, s in ipairs(SUBSETS) do
    local b = { n = {}, hits = {}, conf = {}, count = {}, acc = {}, mean_conf = {} }
    for i = 1, bins do
      b.n[i], b.hits[i], b.conf[i] = "_" .. s .. ".ece_n@" .. i, "_" .. s .. ".ece_hits@" .. i, "_" .. s .. ".ece_conf@" .. i
      local bin = s .. ".ece_bin@" .. i
      b.count[i], b.acc[i], b.mean_conf[i] = bin .. ".count", bin .. ".accuracy", bin .. ".confidence"
    end
    N[s] = {
      kpp = s .. ".kpp", confidence = s .. ".confidence", accuracy = s .. ".accuracy", ece = s .. ".ece",
      n = "_" .. s .. ".n", hits = "_" .. s .. ".hits", kpp_sum = "_" .. s .. ".kpp_sum",
      conf_sum = "_" .. s .. ".conf_sum", bins = b,
    }
  end
  NAMES[bins] = N
  return N
end

return kp.metric {
  name = "calibration",
  version = "1.0.0",
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
<s>.ece_bin@i.accuracy and <s>.ece_bin@i.confidence (the last two only for non-empty bins).
Predictions dropped by the profile (duplicates, <unk>, empty) are not counted.]],
  params = { bins = 10, kpp = "words" },
  score = function(doc, p, ctx, out)
    local N = names(p.bins)
    local npred = #doc.preds
    if npred > 0 and kp.calib.count_probs(doc.preds) < npred then
      error(string.format("document '%s' has predictions without token probabilities (expected a predictions " ..
        "file in the \"tokens\" format, docs/calibration.md)", doc.id), 0)
    end
    for _, s in ipairs(SUBSETS) do
      local preds, refs = doc:subset(s)  -- nothing for present/absent of a document without text
      if preds and #preds > 0 then
        local nm = N[s]
        local kpps = kp.calib.kpps(preds, p.kpp)
        local flags = preds:match(refs):flags()
        local hits, kpp_sum, conf_sum = 0, 0, 0
        for i = 1, #preds do
          local conf = 1 / kpps[i]
          local b = kp.calib.bin(conf, p.bins)
          local hit = flags[i] and 1 or 0
          out[nm.bins.n[b]] = (out[nm.bins.n[b]] or 0) + 1
          out[nm.bins.hits[b]] = (out[nm.bins.hits[b]] or 0) + hit
          out[nm.bins.conf[b]] = (out[nm.bins.conf[b]] or 0) + conf
          hits, kpp_sum, conf_sum = hits + hit, kpp_sum + kpps[i], conf_sum + conf
        end
        local n = #preds
        out[nm.kpp], out[nm.confidence], out[nm.accuracy] = kpp_sum / n, conf_sum / n, hits / n
        out[nm.n], out[nm.hits], out[nm.kpp_sum], out[nm.conf_sum] = n, hits, kpp_sum, conf_sum
      end
    end
    return out
  end,
  aggregate = function(cols, p)
    local N = names(p.bins)
    local agg = {}
    local function sum(name) return cols[name] and cols[name]:sum() or 0 end
    for _, s in ipairs(SUBSETS) do
      local nm = N[s]
      local n = sum(nm.n)
      if n > 0 then
        agg[nm.kpp .. ".micro"] = sum(nm.kpp_sum) / n
        agg[nm.kpp .. ".macro"] = cols[nm.kpp]:mean()
        agg[nm.confidence .. ".micro"] = sum(nm.conf_sum) / n
        agg[nm.accuracy .. ".micro"] = sum(nm.hits) / n
        local ece = 0
        for i = 1, p.bins do
          local count = sum(nm.bins.n[i])
          agg[nm.bins.count[i]] = count
          if count > 0 then
            local acc, conf = sum(nm.bins.hits[i]) / count, sum(nm.bins.conf[i]) / count
            agg[nm.bins.acc[i]], agg[nm.bins.mean_conf[i]] = acc, conf
            ece = ece + count / n * math.abs(acc - conf)
          end
        end
        agg[nm.ece] = ece
      end
    end
    return agg
  end,
}
