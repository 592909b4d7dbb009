-- kplab-api: 2
-- METEOR (Banerjee and Lavie 2005; Lavie and Agarwal 2007) of a document's keyphrases, as KPEval's
-- meteor_metric.py reports it through Hugging Face evaluate 0.4.0, i.e. nltk 3.8's single_meteor_score.
-- kp.textmetrics.meteor aligns the words (exact, Porter stem, WordNet synonym); the score is computed here.

-- nltk 3.8 meteor_score.single_meteor_score from the alignment: a division by zero (no match, or an
-- empty side) gives 0, as nltk's ZeroDivisionError branch does.
local function score_of(a, p)
  if a.matches == 0 or a.hyp_len == 0 or a.ref_len == 0 then return 0 end
  local precision, recall = a.matches / a.hyp_len, a.matches / a.ref_len
  local fmean = (precision * recall) / (p.alpha * precision + (1 - p.alpha) * recall)
  local penalty = p.gamma * (a.chunks / a.matches) ^ p.beta
  return (1 - penalty) * fmean
end

local function append(a, b)
  local out = table.move(a, 1, #a, 1, {})
  return table.move(b, 1, #b, #out + 1, out)
end

-- KPEval's strings (meteor_metric.py): the stemmed keyphrases (stems joined by ' ') joined by ', ';
-- present and absent against their own references; `all` = present then absent predictions against
-- the present *predictions* followed by the absent references. Without text every keyphrase is absent.
local function kpeval_strings(preds, refs, doc, subset)
  if subset ~= "all" then return table.concat(preds:keys(), ", "), table.concat(refs:keys(), ", ") end
  local pp, pr, ap, ar = {}, {}, preds:keys(), refs:keys()
  if doc.has_text then
    local present_preds, _ = doc:subset("present")
    local absent_preds, absent_refs = doc:subset("absent")
    pp, ap, ar = present_preds:keys(), absent_preds:keys(), absent_refs:keys()
    pr = pp
  end
  return table.concat(append(pp, ap), ", "), table.concat(append(pr, ar), ", ")
end

return kp.metric {
  name = "meteor",
  version = "1.0.0",
  doc = [[
METEOR per document and subset: <s>.meteor (KPEval's <s>_kp_meteor); the run's value is the mean over
documents. P = m / hypothesis words, R = m / reference words, Fmean = PR / (alpha P + (1 - alpha) R),
penalty = gamma (chunks / m)^beta, METEOR = (1 - penalty) Fmean (0 when m = 0); m and chunks from nltk
3.8's alignment (exact, then Porter stems, then WordNet synonyms of the stems; docs/metrics.md).
Profile kplab (text_overlap = kplab): the subset's predictions (after filtering and dedup, model order)
against its references (file order), each side the keyphrases' tokens in order, no separators.
Profile kpeval: KPEval's strings -- stemmed keyphrases joined by ', ', tokenized by the word
tokenizer (the commas are words); `all` compares present-then-absent predictions with the present
predictions followed by the absent references (KPEval's bug, kept). WordNet: Debian's wordnet-base
(scripts/setup.sh --extra wordnet); synonyms = false scores without the synonym stage.]],
  params = {
    alpha = kp.number { default = 0.9, min = 0, max = 1, doc = "weight of precision against recall (KPEval: 0.9)" },
    beta = kp.number { default = 3, min = 0, doc = "shape of the fragmentation penalty (KPEval: 3)" },
    gamma = kp.number { default = 0.5, min = 0, max = 1, doc = "weight of the fragmentation penalty (KPEval: 0.5)" },
    synonyms = kp.bool { default = true, doc = "WordNet synonym stage (needs Debian's wordnet-base)" },
  },
  -- WordNet is read before any document is scored: a missing database is a usage error naming what to
  -- install, not a failure at the first document.
  check = function(p)
    if not p.synonyms then return nil end
    local ok, why = kp.textmetrics.wordnet()
    if ok then return nil end
    return why .. "; or run without the synonym stage: --param meteor.synonyms=false"
  end,
  subsets = { "all", "present", "absent" },
  columns = { "meteor" },
  score = function(preds, refs, doc, p, ctx, out)
    local h, r = preds, refs
    if ctx.profile.text_overlap == "kpeval" then h, r = kpeval_strings(preds, refs, doc, ctx.subset) end
    out.meteor = score_of(kp.textmetrics.meteor(h, r, { synonyms = p.synonyms }), p)
  end,
}
