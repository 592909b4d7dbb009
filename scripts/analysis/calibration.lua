-- Calibration report (seed 001 §4-5: keyphrase perplexity, reliability diagrams, ECE): one system's
-- predictions with token log-probabilities ("tokens" format, docs/calibration.md) on one dataset.
-- Writes calibration.md (ECE and the reliability bins of all/present/absent keyphrases, KPP medians) and
-- three figures: reliability.svg (accuracy per confidence bin against the diagonal, with the share of
-- keyphrases per bin), kpp_hist.svg (KPP of present vs absent keyphrases with their medians, the paper's
-- Figure 1) and token_position.svg (mean conditional probability of the i-th token of a keyphrase,
-- i = 1..5, its Figure 2).
-- kplab run scripts/analysis/calibration.lua --dataset D --predictions P [--out DIR] [--profile kplab]
--   [--bins 10] [--kpp words|tokens] [--system NAME] [--kpp-max X]
local C = kp.include("common.lua")

local o = C.parse_args(arg, { dataset = "", predictions = "", profile = "kplab", bins = "10",
                              kpp = "words", system = "", kpp_max = "", source = "", positions = "tokens" },
  "kplab run scripts/analysis/calibration.lua --dataset D --predictions P [options]\n" ..
  "  --dataset D, --predictions P   a dataset and a predictions file in the \"tokens\" format\n" ..
  "  --source FILE    source texts for a keyphrase-only dataset (KP20k)\n" ..
  "  --profile P      matching and normalisation profile (default kplab)\n" ..
  "  --bins K         equal-width confidence bins (default 10)\n" ..
  "  --kpp words|tokens   KPP-s (Eq. 7, default) or KPP per token (Eq. 2/3)\n" ..
  "  --kpp-max X      upper end of the KPP histogram (default: the largest KPP)\n" ..
  "  --positions tokens|words   token_position.svg by token (default) or by word (the product of a\n" ..
  "                   word's subword probabilities; the paper's Figure 2 uses word-level tokens)\n" ..
  "  --system NAME    name in titles (default: the predictions file name)")
if not o then return end
if o.dataset == "" or o.predictions == "" then error("--dataset and --predictions are required (see --help)", 0) end
local bins = math.tointeger(tonumber(o.bins))
if not bins or bins < 1 then error("--bins must be a positive integer (got '" .. o.bins .. "')", 0) end
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
for d = 1, #corpus do
  local doc = corpus:doc(d)
  local preds = doc.preds
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
rep:add(string.format("Profile `%s`, %s, %d equal-width confidence bins (lo, hi]; confidence = 1/KPP; " ..
  "a keyphrase is accurate when it matches a reference.\n", o.profile,
  o.kpp == "words" and "KPP-s (per word, Eq. 7)" or "KPP (per token, Eq. 2/3)", bins))

local summary, rel = {}, {}
for _, name in ipairs({ "all", "present", "absent" }) do
  local t = S[name]
  if #t.conf > 0 then
    rel[name] = kp.calib.reliability(t.conf, t.correct, bins)
    local hits = 0
    for _, c in ipairs(t.correct) do if c then hits = hits + 1 end end
    summary[#summary + 1] = { name, #t.conf, hits / #t.conf, kp.stats.mean(t.conf), kp.stats.median(t.kpp),
                              kp.stats.mean(t.kpp), rel[name].ece }
  end
end
rep:add(C.md_table({ "keyphrases", "n", "accuracy", "mean confidence", "median KPP", "mean KPP", "ECE" }, summary, 4))

for _, name in ipairs({ "all", "present", "absent" }) do
  if rel[name] then
    local rows = {}
    for i, b in ipairs(rel[name].bins) do
      rows[i] = { string.format("(%.2f, %.2f]", b.lo, b.hi), b.count, b.count > 0 and b.accuracy or nil,
                  b.count > 0 and b.confidence or nil }
    end
    rep:add("### Reliability bins: " .. name .. " keyphrases\n")
    rep:add(C.md_table({ "confidence", "count", "accuracy", "mean confidence" }, rows, 4))
  end
end

-- Reliability diagram: accuracy of each non-empty bin drawn at the bin's centre (as the paper's bars
-- are), with the share of all keyphrases per bin as bars.
local series = {}
local share = { label = "share of keyphrases", x = {}, y = {}, bars = true, bar_width = 0.8 / bins }
for i, b in ipairs(rel.all.bins) do
  share.x[i], share.y[i] = (b.lo + b.hi) / 2, b.count / rel.all.n
end
series[1] = share
for _, name in ipairs({ "all", "present", "absent" }) do
  if rel[name] then
    local s = { label = string.format("%s (ECE %.3f)", name, rel[name].ece), x = {}, y = {} }
    for _, b in ipairs(rel[name].bins) do
      if b.count > 0 then s.x[#s.x + 1], s.y[#s.y + 1] = (b.lo + b.hi) / 2, b.accuracy end
    end
    series[#series + 1] = s
  end
end
rep:figure("reliability.svg", kp.plot.lines { title = "Reliability diagram: " .. system, xlabel = "confidence (1/KPP)",
  ylabel = "accuracy", diagonal = true, xrange = { 0, 1 }, yrange = { 0, 1 }, series = series },
  "Accuracy per confidence bin; dashed: perfect calibration; bars: share of keyphrases per bin.")

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
