-- kplab-api: 2
-- ROUGE-1, ROUGE-2 and ROUGE-L (Lin 2004) of a document's keyphrases, as KPEval's rouge_metric.py reports
-- them (present, absent, all; precision, recall, F). kp.textmetrics counts n-grams and LCS hits; the
-- scores are computed here.
local ipairs = ipairs

local function append(a, b)
  local out = table.move(a, 1, #a, 1, {})
  return table.move(b, 1, #b, #out + 1, out)
end

-- KPEval's guard: ' '.join(list).strip() == "" (surfaces are stripped, so: every surface empty).
local function blank(list)
  for _, s in ipairs(list) do
    if s ~= "" then return false end
  end
  return true
end

-- KPEval's strings for one subset: present ones joined by ' ', absent and all by ', '; all = present
-- predictions first, then absent ones, against present then absent references.
local function kpeval_strings(preds, doc, subset)
  -- KPEval's reference lists: the line's references zipped with the deduplicated ones' presence flags
  -- (doc:kpeval_references, docs/plugins.md).
  local present, absent = doc:kpeval_references()
  local ref_present, ref_absent = present:surfaces(), absent:surfaces()
  if subset == "present" then return preds:surfaces(), ref_present, " " end
  if subset == "absent" then return preds:surfaces(), ref_absent, ", " end
  local hyp = doc.has_text and preds:present_first():surfaces() or preds:surfaces()
  return hyp, append(ref_present, ref_absent), ", "
end

local NAMES = { "rouge1", "rouge2", "rougel" }

return kp.metric {
  name = "rouge",
  version = "1.0.0",
  doc = [[
ROUGE-1, ROUGE-2 and ROUGE-L per document and subset: <s>.rouge1_p, _r, _f1, <s>.rouge2_*, <s>.rougel_*
(KPEval's <s>_rouge-1_p, _r, _f ...). The run's value is the mean over documents.
Profile kplab (text_overlap = kplab): each keyphrase is a unit of its tokens (predictions after the
profile's filtering and dedup, references deduplicated); ROUGE-N counts n-grams inside units with clipped
counts, P = hits / hypothesis n-grams, R = hits / reference n-grams; ROUGE-L is summary-level (union
LCS per reference keyphrase, hits clipped as ROUGE-1.5.5), P = hits / hypothesis tokens, R = hits /
reference tokens; F1 = 2PR/(P+R); 0 when a side has nothing.
Profile kpeval (text_overlap = kpeval): KPEval's strings scored by pltrdy/rouge 1.0.1: present
keyphrases joined by ' ', absent and all by ', ' (all: present first); references are the line's first
U references with the U unique references' flags; the text is cut at '.', words between spaces,
distinct n-grams across the whole text; ROUGE-L counts distinct words on the traced LCSs;
F = 2*((P*R)/(P+R+1e-8)); all zero when either side is blank. docs/metrics.md, docs/profiles.md.]],
  subsets = { "all", "present", "absent" },
  columns = { "rouge1_p", "rouge1_r", "rouge1_f1", "rouge2_p", "rouge2_r", "rouge2_f1",
              "rougel_p", "rougel_r", "rougel_f1" },
  score = function(preds, refs, doc, _, ctx, out)
    local pltrdy = ctx.profile.text_overlap == "kpeval"
    local h, r
    if pltrdy then
      local hyp, ref, sep = kpeval_strings(preds, doc, ctx.subset)
      if blank(hyp) or blank(ref) then
        for _, name in ipairs(NAMES) do out[name .. "_p"], out[name .. "_r"], out[name .. "_f1"] = 0, 0, 0 end
        return
      end
      h, r = table.concat(hyp, sep), table.concat(ref, sep)
    else
      h, r = preds, refs
    end
    local style = pltrdy and "pltrdy" or "lin"
    for k, name in ipairs(NAMES) do
      local hits, n_hyp, n_ref
      if k < 3 then
        hits, n_hyp, n_ref = kp.textmetrics.rouge_n(h, r, k, style)
      else
        hits, n_hyp, n_ref = kp.textmetrics.rouge_l(h, r, style)
      end
      local P = n_hyp > 0 and hits / n_hyp or 0
      local R = n_ref > 0 and hits / n_ref or 0
      local F
      if pltrdy then
        F = 2.0 * ((P * R) / (P + R + 1e-8))  -- pltrdy/rouge's f_r_p_rouge_n and rouge_l_summary_level
      else
        F = P + R > 0 and 2 * P * R / (P + R) or 0
      end
      out[name .. "_p"], out[name .. "_r"], out[name .. "_f1"] = P, R, F
    end
  end,
}
