-- Meta-evaluation against human judgments (the SemR-p paper's section 7, the human study of KPEval):
-- how well each metric of the chosen runs agrees with human scores, at the document level and at the
-- system level, with Kendall's tau-b, Spearman's rho and Pearson's r, percentile bootstrap intervals
-- over documents, and Williams' test between two metrics' correlations. docs/meta-eval.md describes
-- every step; tests/reference/gen_meta_eval.py recomputes them with scipy.
-- kplab run scripts/analysis/meta_eval.lua --judgments FILE [--labels L=V,...] [--db FILE] [--runs LIST]
--   [--metrics LIST] [--pairs A:B,...] [--n 1000] [--seed 0] [--confidence 0.95] [--out DIR]
local C = kp.include("common.lua")
local J = kp.include("judgments.lua")
local S = kp.stats

local DEFAULT = "all.f1@5,all.f1@M,all.ndcg@M,all.ap@M,all.mrr,all.rprec_substr,all.semp,all.semr,all.semf1,all.semrp"
local USAGE = "kplab run scripts/analysis/meta_eval.lua --judgments FILE [options]\n" ..
  "  --judgments FILE human judgments, CSV or JSONL (docs/formats.md#human-judgments)\n" ..
  "  --format F       csv or jsonl (default: from the file's extension)\n" ..
  "  --labels L=V,... numeric value of each label, for files with a label column\n" ..
  "  --metrics LIST   per-document metrics to correlate (default: those of\n" ..
  "                   " .. DEFAULT .. "\n" ..
  "                   present in every run; 'all' = every all.* metric)\n" ..
  "  --pairs A:B,...  metric pairs for Williams' test (default: every pair)\n" ..
  "  --n N            bootstrap resamples of documents (default 1000)\n" ..
  "  --seed S         bootstrap seed (default 0)\n" ..
  "  --confidence C   interval level (default 0.95)"
-- "" = not given (a default of false would make parse_args read the option as a flag).
local o = C.parse_args(arg, { judgments = "", format = "", labels = "", metrics = DEFAULT, pairs = "",
                              n = "1000", seed = "0", confidence = "0.95" }, USAGE)
if not o then return end
for _, k in ipairs({ "format", "labels", "pairs" }) do
  if o[k] == "" then o[k] = nil end
end
if o.judgments == "" then error("--judgments FILE is required\n" .. USAGE, 0) end
local B = math.tointeger(tonumber(o.n))
if not B or B < 1 or B > 1000000 then
  error("--n: expected a positive integer of at most 1000000 (got '" .. o.n .. "')", 0)
end
local SEED = math.tointeger(tonumber(o.seed))
if not SEED or SEED < 0 then error("--seed: expected an integer >= 0 (got '" .. o.seed .. "')", 0) end
local CONF = tonumber(o.confidence)
if not CONF or not (CONF > 0 and CONF < 1) then error("--confidence: expected a number in (0, 1) (got '" .. o.confidence .. "')", 0) end

local judgments = J.read(o.judgments, { labels = o.labels and J.parse_labels(o.labels) or nil,
                                        format = o.format })

-- Means through the correctly rounded sum (kp.stats.fsum, Python's math.fsum): it depends only on the
-- values, not on their order, so two systems whose scores are equal up to order get bit-identical means,
-- and a tie stays a tie whatever order a resample lists items in (a near-tie broken by rounding would
-- change the ranks that tau and rho see).
local function mean(xs) return kp.stats.fsum(xs) / #xs end

-- ---- Runs: one per system ----------------------------------------------------------------------------
local runs = C.load_runs(o)
local run_of = {}
for _, r in ipairs(runs) do
  if run_of[r.system] and run_of[r.system].id == r.id then
    error(string.format("--runs: run %d is given twice (expected one run per system)", r.id), 0)
  end
  if run_of[r.system] then
    error(string.format("runs %d and %d are both system '%s' (choose one run per system with --runs)",
                        run_of[r.system].id, r.id, r.system), 0)
  end
  run_of[r.system] = r
end
local metrics
if o.metrics == "all" then
  metrics = C.common_metrics(runs, function(m) return m:match("^all%.") ~= nil end)
else
  local wanted, order = {}, {}
  for m in o.metrics:gmatch("[^,]+") do
    m = m:match("^%s*(.-)%s*$")
    if not wanted[m] then wanted[m], order[#order + 1] = true, m end
  end
  local present = {}
  for _, m in ipairs(C.common_metrics(runs)) do present[m] = true end
  metrics = {}
  for _, m in ipairs(order) do
    if present[m] then
      metrics[#metrics + 1] = m
    elseif o.metrics ~= DEFAULT then
      error("metric " .. m .. " is not in every selected run", 0)
    end
  end
end
if #metrics == 0 then error("no metric to correlate (none of --metrics is in every selected run)", 0) end

-- ---- Items: the judged (document, system) pairs, human score = mean of their judgments ---------------
local doc_index = {}  -- system -> doc_id -> index in its run
for sys, r in pairs(run_of) do
  doc_index[sys] = {}
  for i, d in ipairs(r.doc_ids) do doc_index[sys][d] = i end
end
local systems_listed = {}
for _, r in ipairs(runs) do systems_listed[#systems_listed + 1] = r.system end
local items, item_of = {}, {}
for _, row in ipairs(judgments) do
  local r = run_of[row.system]
  if not r then
    error(string.format("%s:%d: system '%s' has no run among the selected runs (expected one of: %s)",
                        o.judgments, row.line, row.system, table.concat(systems_listed, ", ")), 0)
  end
  local d = doc_index[row.system][row.doc_id]
  if not d then
    error(string.format("%s:%d: document '%s' is not in run %d (system '%s', dataset %s)", o.judgments,
                        row.line, row.doc_id, r.id, row.system, r.dataset), 0)
  end
  local key = row.doc_id .. "\0" .. row.system
  local it = item_of[key]
  if not it then
    it = { doc_id = row.doc_id, system = row.system, doc = d, scores = {} }
    item_of[key] = it
    items[#items + 1] = it
  end
  it.scores[#it.scores + 1] = row.score
end
-- Items where some metric is undefined (NaN) are left out for every metric, so that all correlations,
-- and Williams' test between any two of them, use the same observations.
local kept, dropped = {}, {}
for _, it in ipairs(items) do
  it.human = mean(it.scores)
  it.values = {}
  local good = true
  for j, m in ipairs(metrics) do
    local v = run_of[it.system].scores[m][it.doc]
    it.values[j] = v
    if not C.finite(v) then good = false end
  end
  if good then kept[#kept + 1] = it else dropped[#dropped + 1] = it end
end
if #kept < 3 then error(string.format("only %d judged (document, system) pairs with every metric defined (expected at least 3)", #kept), 0) end

-- Documents (the bootstrap's clusters) in first-seen order, with their kept items; a document is known
-- by dataset and id, in case the runs of different systems are on different datasets.
local docs, doc_items = {}, {}
local systems, system_pos = {}, {}
for k, it in ipairs(kept) do
  local dk = run_of[it.system].dataset .. "\0" .. it.doc_id
  if not doc_items[dk] then docs[#docs + 1], doc_items[dk] = dk, {} end
  table.insert(doc_items[dk], k)
  if not system_pos[it.system] then systems[#systems + 1], system_pos[it.system] = it.system, #systems + 1 end
end

-- ---- Statistics ------------------------------------------------------------------------------------------
-- Columns for a list of item indices (repeats allowed): level "document" has one value per item, level
-- "system" the mean per system (systems in `systems` order; nil when a system has no item).
local function columns(idx, level)
  local h, v = {}, {}
  for j = 1, #metrics do v[j] = {} end
  if level == "document" then
    for n, k in ipairs(idx) do
      local it = kept[k]
      h[n] = it.human
      for j = 1, #metrics do v[j][n] = it.values[j] end
    end
    return h, v
  end
  local sh, sv = {}, {}
  for s = 1, #systems do sh[s], sv[s] = {}, {} for j = 1, #metrics do sv[s][j] = {} end end
  for _, k in ipairs(idx) do
    local it = kept[k]
    local s = system_pos[it.system]
    sh[s][#sh[s] + 1] = it.human
    for j = 1, #metrics do sv[s][j][#sv[s][j] + 1] = it.values[j] end
  end
  for s = 1, #systems do
    if #sh[s] == 0 then return nil end
    h[s] = mean(sh[s])
    for j = 1, #metrics do v[j][s] = mean(sv[s][j]) end
  end
  return h, v
end

local COEFS = { { key = "tau_b", fn = S.kendall, label = "Kendall τ-b" }, { key = "rho", fn = S.spearman, label = "Spearman ρ" },
                { key = "r", fn = S.pearson, label = "Pearson r" } }

local all_idx = {}
for k = 1, #kept do all_idx[k] = k end

local LEVELS = { "document", "system" }
local result = { levels = {} }
local draws = S.draw_indices(#docs, #docs * B, { seed = SEED })
for _, level in ipairs(LEVELS) do
  local h, v = columns(all_idx, level)
  local n = #h
  local L = { n = n, metrics = {}, williams = {} }
  result.levels[level] = L
  if n >= 3 then
    for j, m in ipairs(metrics) do
      local e = { metric = m }
      for _, c in ipairs(COEFS) do e[c.key], e[c.key .. "_p"] = c.fn(v[j], h) end
      L.metrics[j] = e
    end
    -- Percentile bootstrap over documents: resample b takes documents draws[(b-1)D + 1 .. bD] (with
    -- repeats) and all their judged items; a resample whose statistic is undefined (a constant column,
    -- or a system with no item) is left out of that statistic's interval and counted.
    -- boot[j][coef][b]: the statistic on resample b (NaN when undefined), kept aligned across metrics so
    -- that the difference between two metrics is taken on the same resamples.
    local boot = {}
    for j = 1, #metrics do boot[j] = { tau_b = {}, rho = {}, r = {} } end
    local D = #docs
    for b = 1, B do
      local idx = {}
      for t = (b - 1) * D + 1, b * D do
        for _, k in ipairs(doc_items[docs[draws[t]]]) do idx[#idx + 1] = k end
      end
      local bh, bv = columns(idx, level)
      for j = 1, #metrics do
        for _, c in ipairs(COEFS) do
          local x = bh and #bh >= 3 and (c.fn(bv[j], bh)) or 0 / 0
          boot[j][c.key][b] = C.finite(x) and x or 0 / 0
        end
      end
    end
    -- Percentile interval of the finite values of xs, and how many were not finite.
    local function interval(xs)
      local ok = {}
      for _, x in ipairs(xs) do if x == x then ok[#ok + 1] = x end end
      if #ok == 0 then return { 0 / 0, 0 / 0 }, #xs end
      local q = S.quantile(ok, { (1 - CONF) / 2, (1 + CONF) / 2 })
      return { q[1], q[2] }, #xs - #ok
    end
    for j = 1, #metrics do
      for _, c in ipairs(COEFS) do
        L.metrics[j][c.key .. "_ci"], L.metrics[j][c.key .. "_undefined"] = interval(boot[j][c.key])
      end
    end
    -- Williams' test on Pearson's r and on Spearman's rho (Pearson's r of the ranks).
    local pairs_list = {}
    if o.pairs then
      local pos = {}
      for j, m in ipairs(metrics) do pos[m] = j end
      for p in o.pairs:gmatch("[^,]+") do
        local a, bb = p:match("^%s*(.-)%s*:%s*(.-)%s*$")
        if not a or not pos[a] or not pos[bb] or a == bb then
          error("--pairs: '" .. p .. "' is not two different metrics A:B among " .. table.concat(metrics, ", "), 0)
        end
        pairs_list[#pairs_list + 1] = { pos[a], pos[bb] }
      end
    else
      for a = 1, #metrics do for bb = a + 1, #metrics do pairs_list[#pairs_list + 1] = { a, bb } end end
    end
    if n >= 4 then
      for _, p in ipairs(pairs_list) do
        local a, bb = p[1], p[2]
        local w = { a = metrics[a], b = metrics[bb], diff = {} }
        -- The paired bootstrap of the difference a - b of each coefficient (tau-b included, for which
        -- Williams' test does not apply): resamples where both are defined.
        for _, c in ipairs(COEFS) do
          local d = {}
          for t = 1, B do d[t] = boot[a][c.key][t] - boot[bb][c.key][t] end
          local ci, undefined = interval(d)
          w.diff[c.key] = { value = L.metrics[a][c.key] - L.metrics[bb][c.key], ci = ci, undefined = undefined }
        end
        for _, c in ipairs({ { key = "r", fn = S.pearson }, { key = "rho", fn = S.spearman } }) do
          local r12, r13, r23 = c.fn(h, v[a]), c.fn(h, v[bb]), c.fn(v[a], v[bb])
          if C.finite(r12) and C.finite(r13) and C.finite(r23) then
            local t, pv, df = S.williams(r12, r13, r23, n)
            w[c.key] = { r_ab = r23, t = t, df = df, p = pv }
          else
            w[c.key] = { r_ab = r23, t = 0 / 0, df = n - 3, p = 0 / 0 }
          end
        end
        L.williams[#L.williams + 1] = w
      end
    end
  end
end

-- ---- Report ------------------------------------------------------------------------------------------------
local function ci_text(ci) return "[" .. C.fmt(ci[1]) .. ", " .. C.fmt(ci[2]) .. "]" end
local rep = C.report(o, "meta_eval", "Meta-evaluation against human judgments")
rep:add("Judgments: `" .. o.judgments .. "`: " .. #judgments .. " rows, " .. #items ..
        " judged (document, system) pairs, " .. #docs .. " documents, " .. #systems .. " systems.\n\nRuns:\n\n" ..
        C.runs_table(runs))
if #dropped > 0 then
  local names = {}
  for i, it in ipairs(dropped) do if i <= 20 then names[#names + 1] = it.doc_id .. "/" .. it.system end end
  rep:add(#dropped .. " pairs left out because a metric is undefined there: " .. table.concat(names, ", ") ..
          (#dropped > 20 and ", ..." or "") .. "\n")
end
rep:add(string.format("Correlations with the human score; %g%% percentile bootstrap intervals over %d resamples " ..
                      "of documents (seed %d). Document level: one observation per judged (document, system) " ..
                      "pair (the mean of its judgments). System level: each system's mean over its judged " ..
                      "documents.\n", CONF * 100, B, SEED))
for _, level in ipairs(LEVELS) do
  local L = result.levels[level]
  rep:add("## " .. level:sub(1, 1):upper() .. level:sub(2) .. " level (n = " .. L.n .. ")\n")
  if L.n < 3 then
    rep:add("Fewer than 3 observations: no correlation.\n")
  else
    local rows = {}
    for _, e in ipairs(L.metrics) do
      rows[#rows + 1] = { e.metric, e.tau_b, ci_text(e.tau_b_ci), C.fmt_p(e.tau_b_p), e.rho, ci_text(e.rho_ci),
                          C.fmt_p(e.rho_p), e.r, ci_text(e.r_ci) }
    end
    rep:add(C.md_table({ "metric", "τ-b", "CI", "p", "ρ", "CI", "p", "r", "CI" }, rows))
    if #L.williams > 0 then
      local wrows = {}
      for _, w in ipairs(L.williams) do
        wrows[#wrows + 1] = { w.a .. " vs " .. w.b, w.r.r_ab, w.r.t, C.fmt_p(w.r.p), w.rho.r_ab, w.rho.t, C.fmt_p(w.rho.p),
                              w.diff.tau_b.value, ci_text(w.diff.tau_b.ci) }
      end
      rep:add("Williams' test of equal correlation with the human score (t with n − 3 = " .. (L.n - 3) ..
              " degrees of freedom), on Pearson's r and on Spearman's ρ, and the bootstrap interval of the " ..
              "difference in τ-b (a − b, same resamples):\n\n" ..
              C.md_table({ "metrics", "r(a,b)", "t (r)", "p (r)", "ρ(a,b)", "t (ρ)", "p (ρ)", "Δτ-b", "CI" }, wrows))
    elseif L.n < 4 and #metrics > 1 then
      rep:add("Fewer than 4 observations: no Williams' test.\n")
    end
  end
end

-- Machine-readable results with --out: meta_eval.tsv (long format, one number per line: level, metric,
-- second metric of a Williams row or "", statistic, value) and meta_eval_items.tsv (the observations of
-- the document level).
local function num(v)
  if v ~= v then return "nan" end
  if math.type(v) == "integer" then return tostring(v) end
  return string.format("%.17g", v)
end
-- Names are free text: a tab or line break in one would shift the columns.
local function cell(v) return (tostring(v):gsub("[\t\r\n]", " ")) end
if o.out then
  local lines = { "level\tmetric\tversus\tstatistic\tvalue" }
  local function add(level, m, versus, stat, v) lines[#lines + 1] = table.concat({ level, cell(m), cell(versus), stat, num(v) }, "\t") end
  for _, level in ipairs(LEVELS) do
    local L = result.levels[level]
    add(level, "", "", "n", L.n)
    for _, e in ipairs(L.metrics) do
      for _, c in ipairs(COEFS) do
        add(level, e.metric, "", c.key, e[c.key])
        add(level, e.metric, "", c.key .. "_p", e[c.key .. "_p"])
        add(level, e.metric, "", c.key .. "_ci_low", e[c.key .. "_ci"][1])
        add(level, e.metric, "", c.key .. "_ci_high", e[c.key .. "_ci"][2])
        add(level, e.metric, "", c.key .. "_undefined", e[c.key .. "_undefined"])
      end
    end
    for _, w in ipairs(L.williams) do
      for _, c in ipairs({ "r", "rho" }) do
        for _, stat in ipairs({ "r_ab", "t", "df", "p" }) do add(level, w.a, w.b, "williams_" .. c .. "_" .. stat, w[c][stat]) end
      end
      for _, c in ipairs(COEFS) do
        local d = w.diff[c.key]
        add(level, w.a, w.b, "diff_" .. c.key, d.value)
        add(level, w.a, w.b, "diff_" .. c.key .. "_ci_low", d.ci[1])
        add(level, w.a, w.b, "diff_" .. c.key .. "_ci_high", d.ci[2])
        add(level, w.a, w.b, "diff_" .. c.key .. "_undefined", d.undefined)
      end
    end
  end
  kp.write(o.out .. "/meta_eval.tsv", table.concat(lines, "\n") .. "\n")
  local il = { "doc_id\tsystem\thuman" }
  for _, m in ipairs(metrics) do il[1] = il[1] .. "\t" .. cell(m) end
  for _, it in ipairs(kept) do
    local cells = { cell(it.doc_id), cell(it.system), num(it.human) }
    for j = 1, #metrics do cells[#cells + 1] = num(it.values[j]) end
    il[#il + 1] = table.concat(cells, "\t")
  end
  kp.write(o.out .. "/meta_eval_items.tsv", table.concat(il, "\n") .. "\n")
end
rep:finish()
