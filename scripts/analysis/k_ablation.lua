-- The SemR-p paper's ablation of k (its section 5.1) on any set of runs scored with
-- `--metrics semrp --param semrp.ks=1,2,3` (plus the metrics to correlate with):
--   1. the distribution of SemR-p per k (table and box plot), per dataset, documents pooled over systems;
--   2. Wilcoxon signed-rank tests and Cliff's delta between the k values (paired by document);
--   3. Spearman's rho of SemR-p at each k with every other metric, per dataset (metrics identical on
--      every document merged into one row "a = b");
--   4. the paper's Fig. 2: per system, Spearman's rho of SemR-p with each baseline metric at k = a and
--      k = b (--change a,b, default 1,3); per baseline, the paired change rho_b - rho_a over the systems
--      with the Wilcoxon signed-rank p and Cliff's delta(rho_b, rho_a) (C.rho_change), drawn as bars.
-- kplab run scripts/analysis/k_ablation.lua [--db FILE] [--runs LIST] [--out DIR] [--ks 1,2,3]
--   [--change 1,3] [--baselines LIST]
local C = kp.include("common.lua")
local S = kp.stats

-- The paper's baselines (its section 4.1) that kplab computes; BERTScore is not among kplab's metrics.
local BASELINES = "all.f1@M,all.ndcg@M,all.ap@M,all.rprec_substr,all.semp,all.semr,all.semf1"
local o = C.parse_args(arg, { ks = "1,2,3", change = "1,3", baselines = "" },
  "kplab run scripts/analysis/k_ablation.lua [options]\n" ..
  "  --ks LIST        the k values scored (columns all.semrp_k<j>; default 1,2,3)\n" ..
  "  --change A,B     the two k values whose per-system correlations are compared (Fig. 2; default 1,3)\n" ..
  "  --baselines LIST the metrics correlated per system (default " .. BASELINES .. ", those present)")
if not o then return end
local ks = C.parse_ids(o.ks, "--ks", "a k value or a range like 1-3")
local change = C.parse_ids(o.change, "--change", "a k value")
if #change ~= 2 or change[1] == change[2] then
  error("--change must name two different k values, e.g. 1,3 (got '" .. o.change .. "')", 0)
end
local ci = {}
for j, k in ipairs(change) do
  for i, kk in ipairs(ks) do if kk == k then ci[j] = i end end
  if not ci[j] then error("--change: k = " .. k .. " is not among --ks " .. o.ks, 0) end
end
local runs = C.load_runs(o)
local kcols = {}
for i, k in ipairs(ks) do kcols[i] = "all.semrp_k" .. k end
for _, r in ipairs(runs) do
  for _, c in ipairs(kcols) do
    if not r.scores[c] then
      error("run " .. r.id .. " has no column " .. c .. " (evaluate with --metrics semrp --param semrp.ks=" .. o.ks .. ")", 0)
    end
  end
end
local others = C.common_metrics(runs, function(m)
  return m:match("^all%.") and not m:match("^all%.semrp")
end)
local have = {}
for _, m in ipairs(C.common_metrics(runs)) do have[m] = true end
local baselines, missing = {}, {}
for m in (o.baselines == "" and BASELINES or o.baselines):gmatch("[^,]+") do
  if have[m] then
    baselines[#baselines + 1] = m
  elseif o.baselines ~= "" then
    error("--baselines: " .. m .. " is not a column of every selected run", 0)
  else
    missing[#missing + 1] = m
  end
end
local fig2 = {}  -- dataset -> C.rho_change entries

local rep = C.report(o, "k_ablation", "Ablation of SemR-p's k")
rep:add("Runs:\n\n" .. C.runs_table(runs))
for _, ds in ipairs(C.distinct(runs, "dataset")) do
  local sub = {}
  for _, r in ipairs(runs) do if r.dataset == ds then sub[#sub + 1] = r end end
  local rows = C.rows(sub, kcols)
  rep:add("## " .. ds .. " (" .. #rows .. " documents over " .. #sub .. " runs)\n")
  -- 1. distributions
  local dist, groups = {}, {}
  for i, k in ipairs(ks) do
    local x = C.column(rows, i)
    local q = S.quantile(x, { 0.25, 0.5, 0.75 })
    dist[#dist + 1] = { "k = " .. k, S.mean(x), S.sd(x), q[1], q[2], q[3] }
    groups[#groups + 1] = { label = "k = " .. k, values = x }
  end
  rep:add(C.md_table({ "k", "mean", "sd", "q25", "median", "q75" }, dist))
  rep:figure("k_ablation_" .. ds .. ".svg", kp.plot.boxplot {
    title = "SemR-p by k on " .. ds, ylabel = "SemR-p per document", groups = groups,
  }, "Distribution of per-document SemR-p for each k on " .. ds)
  -- 2. paired tests between k values
  local tests = {}
  for a = 1, #ks do
    for b = a + 1, #ks do
      local x, y = C.column(rows, a), C.column(rows, b)
      local stat, p = S.wilcoxon(x, y, { zero_method = "wilcox" })
      tests[#tests + 1] = { "k=" .. ks[a] .. " vs k=" .. ks[b], S.mean(x) - S.mean(y), stat, C.fmt_p(p),
                            S.cliffs_delta(x, y) }
    end
  end
  rep:add("Wilcoxon signed-rank (two-sided, zero differences dropped) and Cliff's delta, paired by document:\n\n" ..
          C.md_table({ "pair", "mean difference", "W", "p", "Cliff's delta" }, tests))
  -- 3. Spearman with every other metric
  if #others > 0 then
    local cols = {}
    for _, c in ipairs(kcols) do cols[#cols + 1] = c end
    for _, m in ipairs(others) do cols[#cols + 1] = m end
    local all = C.rows(sub, cols)
    -- Metrics identical on every document are one row, labelled "a = b" (C.merge_identical).
    local ocols = {}
    for j = 1, #others do ocols[j] = C.column(all, #ks + j) end
    local olabels, ofirst = C.merge_identical(others, ocols)
    local trows, heat = {}, {}
    for j, m in ipairs(olabels) do
      local y = ocols[ofirst[j]]
      local row, hrow = { m }, {}
      for i = 1, #ks do
        local rho = S.spearman(C.column(all, i), y)
        row[#row + 1], hrow[i] = rho, rho
      end
      trows[#trows + 1], heat[j] = row, hrow
    end
    local header = { "metric" }
    local labels = {}
    for _, k in ipairs(ks) do header[#header + 1] = "rho (k=" .. k .. ")"; labels[#labels + 1] = "k = " .. k end
    rep:add("Spearman's rho of SemR-p with the other metrics (" .. #all .. " documents):\n\n" .. C.md_table(header, trows))
    rep:figure("k_ablation_spearman_" .. ds .. ".svg", kp.plot.heatmap {
      title = "Spearman rho of SemR-p (by k) with other metrics, " .. ds, rows = olabels, cols = labels, values = heat,
      min = -1, max = 1, digits = 2,
    }, "Spearman correlation of SemR-p at each k with the other metrics on " .. ds)
  end
  -- 4. Fig. 2: per-system correlations at k = a and k = b and their paired change.
  if #baselines > 0 then
    local cols = { kcols[ci[1]], kcols[ci[2]] }
    for _, m in ipairs(baselines) do cols[#cols + 1] = m end
    local groups = {}
    for _, system in ipairs(C.distinct(sub, "system")) do
      local mine = {}
      for _, r in ipairs(sub) do if r.system == system then mine[#mine + 1] = r end end
      local rows = C.rows(mine, cols)
      local g = { label = system, a = C.column(rows, 1), b = C.column(rows, 2), metrics = {} }
      for j, m in ipairs(baselines) do g.metrics[m] = C.column(rows, 2 + j) end
      groups[#groups + 1] = g
    end
    local entries = C.rho_change(groups, baselines)
    fig2[#fig2 + 1] = { dataset = ds, entries = entries }
    local ka, kb = "k=" .. change[1], "k=" .. change[2]
    local per = {}
    for _, e in ipairs(entries) do
      for _, r in ipairs(e.rho) do per[#per + 1] = { e.metric, r.label, r.a, r.b, r.b - r.a } end
    end
    rep:add("Per-system Spearman's rho of SemR-p with each baseline (the paper's Fig. 2 input; " .. #groups ..
            " systems):\n\n" ..
            C.md_table({ "baseline", "system", "rho (" .. ka .. ")", "rho (" .. kb .. ")", "change" }, per))
    local sum = {}
    for _, e in ipairs(entries) do
      sum[#sum + 1] = { e.metric, tostring(e.n), e.mean_a, e.mean_b, e.mean_change, e.w,
                        e.p == e.p and (C.fmt_p(e.p) .. (e.approx and " (approx.)" or "")) or (e.note or "nan"),
                        e.delta }
    end
    rep:add("Change of the per-system correlation from " .. ka .. " to " .. kb .. " (paired by system): " ..
            "Wilcoxon signed-rank (two-sided, zero changes dropped; exact, or scipy's normal approximation where a " ..
            "change is zero, marked approx.) and Cliff's delta " ..
            "(rho at " .. kb .. " vs rho at " .. ka .. "; > 0: SemR-p agrees more with the baseline at " .. kb ..
            "). With " .. #groups .. " systems the smallest two-sided exact p is " ..
            C.fmt_p(2 / 2 ^ #groups) .. ".\n\n" ..
            C.md_table({ "baseline", "systems", "mean rho (" .. ka .. ")", "mean rho (" .. kb .. ")",
                         "mean change", "W", "p", "Cliff's delta" }, sum))
  end
end
if #fig2 > 0 then
  local series = {}
  for _, f in ipairs(fig2) do
    local v = {}
    for i, e in ipairs(f.entries) do v[i] = e.delta == e.delta and e.delta or 0 end
    series[#series + 1] = { label = f.dataset, values = v }
  end
  rep:add("## Fig. 2: change of SemR-p's per-system correlation with the baselines, k = " .. change[1] ..
          " to k = " .. change[2] .. "\n")
  if #missing > 0 then
    rep:add("Baselines not in every run, left out: " .. table.concat(missing, ", ") .. ".\n")
  end
  rep:figure("k_ablation_fig2.svg", kp.plot.bars {
    title = "Cliff's delta of SemR-p's per-system Spearman rho, k = " .. change[2] .. " vs k = " .. change[1],
    ylabel = "Cliff's delta", categories = baselines, series = series, range = { -1, 1 }, annotate = true,
  }, "Cliff's delta between the per-system Spearman correlations of SemR-p with each baseline at k = " ..
     change[2] .. " and at k = " .. change[1] .. " (> 0: stronger at k = " .. change[2] ..
     "), one bar per dataset (the paper's Fig. 2)")
end
rep:finish()
