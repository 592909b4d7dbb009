-- The SemR-p paper's ablation of k (its section 5.1) on any set of runs scored with
-- `--metrics semrp --param semrp.ks=1,2,3` (plus the metrics to correlate with):
--   1. the distribution of SemR-p per k (table and box plot), per dataset, documents pooled over systems;
--   2. Wilcoxon signed-rank tests and Cliff's delta between the k values (paired by document);
--   3. Spearman's rho of SemR-p at each k with every other metric, per dataset (metrics identical on
--      every document merged into one row "a = b").
-- kplab run scripts/analysis/k_ablation.lua [--db FILE] [--runs LIST] [--out DIR] [--ks 1,2,3]
local C = kp.include("common.lua")
local S = kp.stats

local o = C.parse_args(arg, { ks = "1,2,3" },
  "kplab run scripts/analysis/k_ablation.lua [options]\n  --ks LIST        the k values scored (columns all.semrp_k<j>; default 1,2,3)")
if not o then return end
local ks = C.parse_ids(o.ks)
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
end
rep:finish()
