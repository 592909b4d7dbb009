-- Calibration report (seed 001 §4-5: keyphrase perplexity, reliability diagrams, ECE): one system's
-- predictions with token log-probabilities ("tokens" format, docs/calibration.md) on one dataset.
-- Writes calibration.md (ECE and the reliability bins of all/present/absent keyphrases, KPP medians) and
-- three figures: reliability.svg (accuracy per confidence bin against the diagonal, with the share of
-- keyphrases per bin), kpp_hist.svg (KPP of present vs absent keyphrases with their medians, the paper's
-- Figure 1) and token_position.svg (mean conditional probability of the i-th token of a keyphrase,
-- i = 1..5, its Figure 2); with the paper's next steps (§6): MCE, Brier score, equal-mass bins
-- (--binning mass), the risk-coverage curve of selective prediction with its AURC (risk_coverage.svg),
-- whole-sequence perplexity (Eq. 1) and the predictions the profile dropped.
-- kplab run scripts/analysis/calibration.lua --dataset D --predictions P [--out DIR] [--profile kplab]
--   [--bins 10] [--binning width|mass] [--kpp words|tokens] [--system NAME] [--kpp-max X]
local C = kp.include("common.lua")

local o = C.parse_args(arg, { dataset = "", predictions = "", profile = "kplab", bins = "10",
                              kpp = "words", system = "", kpp_max = "", source = "", positions = "tokens",
                              binning = "width" },
  "kplab run scripts/analysis/calibration.lua --dataset D --predictions P [options]\n" ..
  "  --dataset D, --predictions P   a dataset and a predictions file in the \"tokens\" format\n" ..
  "  --source FILE    source texts for a keyphrase-only dataset (KP20k)\n" ..
  "  --profile P      matching and normalisation profile (default kplab)\n" ..
  "  --bins K         confidence bins (default 10)\n" ..
  "  --binning width|mass   equal-width bins of [0, 1] (default) or equal-mass bins (each holding\n" ..
  "                   the same number of keyphrases, sorted by confidence)\n" ..
  "  --kpp words|tokens   KPP-s (Eq. 7, default) or KPP per token (Eq. 2/3)\n" ..
  "  --kpp-max X      upper end of the KPP histogram (default: the largest KPP)\n" ..
  "  --positions tokens|words   token_position.svg by token (default) or by word (the product of a\n" ..
  "                   word's subword probabilities; the paper's Figure 2 uses word-level tokens)\n" ..
  "  --system NAME    name in titles (default: the predictions file name)")
if not o then return end
if o.dataset == "" or o.predictions == "" then error("--dataset and --predictions are required (see --help)", 0) end
local bins = math.tointeger(tonumber(o.bins))
if not bins or bins < 1 then error("--bins must be a positive integer (got '" .. o.bins .. "')", 0) end
if o.binning ~= "width" and o.binning ~= "mass" then
  error("--binning must be 'width' (equal-width bins) or 'mass' (equal-mass bins) (got '" .. o.binning .. "')", 0)
end
if o.kpp ~= "words" and o.kpp ~= "tokens" then error("--kpp must be 'words' or 'tokens' (got '" .. o.kpp .. "')", 0) end
if o.positions ~= "words" and o.positions ~= "tokens" then
  error("--positions must be 'tokens' or 'words' (got '" .. o.positions .. "')", 0)
end
local system = o.system ~= "" and o.system or o.predictions:match("([^/]+)$")

local corpus = kp.load { dataset = o.dataset, predictions = o.predictions, profile = o.profile,
                         source = o.source ~= "" and o.source or nil }

-- Every kept prediction: its KPP, confidence, correctness, and its token probabilities.
local S = { all = { conf = {}, correct = {}, kpp = {} }, present = { conf = {}, correct = {}, kpp = {} },
            absent = { conf = {}, correct = {}, kpp = {} } }
local POS = 5
local pos_sum = { present = {}, absent = {}, all = {} }
local pos_n = { present = {}, absent = {}, all = {} }
for _, s in pairs(pos_sum) do for i = 1, POS do s[i] = 0 end end
for _, s in pairs(pos_n) do for i = 1, POS do s[i] = 0 end end
local without_probs = 0
local excluded_dups, excluded_invalid = 0, 0
local seq_lp, seq_n, seq_ppl_sum, seq_docs = 0, 0, 0, 0
for d = 1, #corpus do
  local doc = corpus:doc(d)
  local preds = doc.preds
  local dups, invalid = kp.calib.excluded(preds)
  excluded_dups, excluded_invalid = excluded_dups + dups, excluded_invalid + invalid
  local seq = kp.calib.sequence_logprobs(preds)
  if #seq > 0 then
    local lp = 0
    for i = 1, #seq do lp = lp + seq[i] end
    seq_lp, seq_n, seq_ppl_sum, seq_docs = seq_lp + lp, seq_n + #seq, seq_ppl_sum + math.exp(-lp / #seq), seq_docs + 1
  end
  if #preds > 0 then
    if kp.calib.count_probs(preds) < #preds then without_probs = without_probs + 1 end
    local kpps = kp.calib.kpps(preds, o.kpp)
    local flags = preds:match(doc.refs):flags()
    local probs = o.positions == "words" and kp.calib.word_probs(preds) or kp.calib.token_probs(preds)
    for i = 1, #preds do
      local k = kpps[i]
      if k == k then
        local item = preds[i]
        local sub = doc.has_text and (item.present and "present" or "absent") or nil
        for _, name in ipairs({ "all", sub }) do
          local t = S[name]
          t.conf[#t.conf + 1], t.correct[#t.correct + 1], t.kpp[#t.kpp + 1] = 1 / k, flags[i], k
          for j = 1, math.min(POS, #probs[i]) do
            pos_sum[name][j] = pos_sum[name][j] + probs[i][j]
            pos_n[name][j] = pos_n[name][j] + 1
          end
        end
      end
    end
  end
end
if without_probs > 0 then
  error(string.format("%s: %d documents have predictions without token probabilities (expected a predictions " ..
    "file in the \"tokens\" format, docs/calibration.md)", o.predictions, without_probs), 0)
end
if #S.all.conf == 0 then error(o.predictions .. ": no predictions to analyse", 0) end

local rep = C.report(o, "calibration", "Calibration of " .. system .. " on " .. o.dataset)
rep:add(string.format("Profile `%s`, %s, %d %s confidence bins%s; confidence = 1/KPP; " ..
  "a keyphrase is accurate when it matches a reference.\n", o.profile,
  o.kpp == "words" and "KPP-s (per word, Eq. 7)" or "KPP (per token, Eq. 2/3)", bins,
  o.binning == "width" and "equal-width" or "equal-mass", o.binning == "width" and " (lo, hi]" or ""))

local summary, rel, rc = {}, {}, {}
for _, name in ipairs({ "all", "present", "absent" }) do
  local t = S[name]
  if #t.conf > 0 then
    rel[name] = kp.calib.reliability(t.conf, t.correct, bins, o.binning)
    rc[name] = kp.calib.risk_coverage(t.conf, t.correct)
    local hits = 0
    for _, c in ipairs(t.correct) do if c then hits = hits + 1 end end
    summary[#summary + 1] = { name, #t.conf, hits / #t.conf, kp.stats.mean(t.conf), kp.stats.median(t.kpp),
                              kp.stats.mean(t.kpp), rel[name].ece, rel[name].mce,
                              kp.calib.brier(t.conf, t.correct), rc[name].aurc }
  end
end
rep:add(C.md_table({ "keyphrases", "n", "accuracy", "mean confidence", "median KPP", "mean KPP", "ECE", "MCE",
                     "Brier", "AURC" }, summary, 4))
rep:add(string.format("Predictions the profile dropped (not counted above): %d duplicates, %d with an invalid " ..
  "token (`<unk>`).\n", excluded_dups, excluded_invalid))
if seq_n > 0 then
  rep:add(string.format("Whole-sequence perplexity (Eq. 1, every generated token including delimiters and the end " ..
    "token, padding left out): %.4f over %d tokens (micro); %.4f as the mean of %d documents' (macro).\n",
    math.exp(-seq_lp / seq_n), seq_n, seq_ppl_sum / seq_docs, seq_docs))
end

for _, name in ipairs({ "all", "present", "absent" }) do
  if rel[name] then
    local rows = {}
    for i, b in ipairs(rel[name].bins) do
      -- Equal-mass bins are named by the confidences they hold (none when empty).
      local label = o.binning == "width" and string.format("(%.2f, %.2f]", b.lo, b.hi)
        or b.count > 0 and string.format("[%.4f, %.4f]", b.lo, b.hi) or "(empty)"
      rows[i] = { label, b.count, b.count > 0 and b.accuracy or nil, b.count > 0 and b.confidence or nil }
    end
    rep:add("### Reliability bins: " .. name .. " keyphrases\n")
    rep:add(C.md_table({ "confidence", "count", "accuracy", "mean confidence" }, rows, 4))
  end
end

-- Reliability diagram: accuracy of each non-empty bin drawn at the bin's centre (as the paper's bars
-- are), with the share of all keyphrases per bin as bars.
-- Equal-mass bins have no fixed centre: their accuracy is drawn at their mean confidence, and no share
-- bars (every bin holds the same share).
local series = {}
if o.binning == "width" then
  local share = { label = "share of keyphrases", x = {}, y = {}, bars = true, bar_width = 0.8 / bins }
  for i, b in ipairs(rel.all.bins) do
    share.x[i], share.y[i] = (b.lo + b.hi) / 2, b.count / rel.all.n
  end
  series[1] = share
end
for _, name in ipairs({ "all", "present", "absent" }) do
  if rel[name] then
    local s = { label = string.format("%s (ECE %.3f)", name, rel[name].ece), x = {}, y = {} }
    for _, b in ipairs(rel[name].bins) do
      if b.count > 0 then
        s.x[#s.x + 1], s.y[#s.y + 1] = o.binning == "width" and (b.lo + b.hi) / 2 or b.confidence, b.accuracy
      end
    end
    series[#series + 1] = s
  end
end
rep:figure("reliability.svg", kp.plot.lines { title = "Reliability diagram: " .. system, xlabel = "confidence (1/KPP)",
  ylabel = "accuracy", diagonal = true, xrange = { 0, 1 }, yrange = { 0, 1 }, series = series },
  o.binning == "width" and "Accuracy per confidence bin; dashed: perfect calibration; bars: share of keyphrases per bin."
    or "Accuracy per equal-mass bin at its mean confidence; dashed: perfect calibration.")

-- Risk-coverage (selective prediction): keep the most confident keyphrases first; risk = share of the
-- kept ones that match no reference.
local rseries, rrows = {}, {}
for _, name in ipairs({ "all", "present", "absent" }) do
  if rc[name] then
    rseries[#rseries + 1] = { label = string.format("%s (AURC %.3f)", name, rc[name].aurc), x = rc[name].coverage,
                              y = rc[name].risk }
  end
end
for step = 1, 10 do
  local row = { string.format("%d%%", step * 10) }
  for j, name in ipairs({ "all", "present", "absent" }) do
    local r = rc[name]
    if r then
      -- The last point whose coverage does not exceed step/10 (at least the first).
      local i = math.max(1, math.floor(step * #r.risk / 10 + 1e-9))
      row[j + 1] = r.risk[i]
    end
  end
  rrows[#rrows + 1] = row
end
rep:add("### Risk by coverage (most confident keyphrases kept first)\n")
rep:add(C.md_table({ "coverage", "all", "present", "absent" }, rrows, 4))
rep:figure("risk_coverage.svg", kp.plot.lines { title = "Risk-coverage: " .. system, xlabel = "coverage",
  ylabel = "risk (error rate of the kept keyphrases)", xrange = { 0, 1 }, yrange = { 0, 1 }, series = rseries },
  "Error rate among the kept keyphrases when keeping the most confident share; AURC is the area under the curve.")

-- KPP histograms, present vs absent, with medians.
local groups = {}
local hi = 0
for _, name in ipairs({ "present", "absent" }) do
  if #S[name].kpp > 0 then
    groups[#groups + 1] = { label = name, values = S[name].kpp }
    for _, k in ipairs(S[name].kpp) do if k > hi then hi = k end end
  end
end
if #groups == 0 then groups[1] = { label = "all", values = S.all.kpp } hi = math.max(table.unpack(S.all.kpp)) end
local kpp_max = o.kpp_max ~= "" and tonumber(o.kpp_max) or hi
if not kpp_max or kpp_max <= 1 then error("--kpp-max must be a number > 1 (KPP is at least 1)", 0) end
rep:figure("kpp_hist.svg", kp.plot.histogram { title = "Keyphrase perplexity: " .. system, xlabel = "KPP",
  groups = groups, bins = 20, range = { 1, kpp_max }, mark_median = true },
  "KPP of present and absent keyphrases; dashed lines: medians.")

-- Mean conditional probability by token position within a keyphrase.
local pseries = {}
for _, name in ipairs({ "present", "absent", "all" }) do
  local s = { label = name, x = {}, y = {} }
  for j = 1, POS do
    if pos_n[name][j] > 0 then s.x[#s.x + 1], s.y[#s.y + 1] = j, pos_sum[name][j] / pos_n[name][j] end
  end
  if #s.x > 0 and (name ~= "all" or #pseries == 0) then pseries[#pseries + 1] = s end
end
local prow = {}
for j = 1, POS do
  prow[j] = { j, pos_n.all[j], pos_n.all[j] > 0 and pos_sum.all[j] / pos_n.all[j] or nil,
              pos_n.present[j] > 0 and pos_sum.present[j] / pos_n.present[j] or nil,
              pos_n.absent[j] > 0 and pos_sum.absent[j] / pos_n.absent[j] or nil }
end
local unit = o.positions == "words" and "word" or "token"
rep:add("### Mean conditional " .. unit .. " probability by position in the keyphrase\n")
rep:add(C.md_table({ unit, "keyphrases", "all", "present", "absent" }, prow, 4))
rep:figure("token_position.svg", kp.plot.lines { title = "Conditional " .. unit .. " probability by position: " .. system,
  xlabel = unit .. " position in the keyphrase", ylabel = "mean p(" .. unit .. " | prefix)", xrange = { 0.5, POS + 0.5 },
  yrange = { 0, 1 }, series = pseries },
  "Mean conditional probability of the i-th " .. unit .. " of a keyphrase (keyphrases with at least i " .. unit .. "s).")
rep:finish()
