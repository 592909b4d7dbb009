-- Exploratory factor analysis of per-document metric scores (the SemR-p paper's section 5.4):
-- Spearman correlations between the metrics (heat map), Horn's parallel analysis for the number of
-- factors, then minres extraction with varimax rotation of the standardised scores (loadings table
-- and heat map). Documents of every selected run are pooled; a document enters when all metrics are
-- defined for it. Metrics identical on every document are one variable (C.merge_identical): merged
-- into one labelled "a = b" in the heat maps and the tables, and entered once into the factor analysis.
-- kplab run scripts/analysis/factor_analysis.lua [--db FILE] [--runs LIST] [--out DIR]
--   [--metrics LIST] [--factors N] [--method minres|pa] [--seed N]
-- Factors retained: observed eigenvalues above the 95th percentile of the random ones (the mean rule
-- over-extracts on noise; both counts are printed). A Heywood case (a communality >= 1, i.e. a
-- uniqueness <= 0: an improper solution) is an error naming the metrics, not a footnote.
local C = kp.include("common.lua")
local S = kp.stats

-- The default set: one metric per family of the paper's baselines (exact F1@M, rank NDCG, approximate
-- R-precision, semantic precision and recall) and SemR-p, without near-duplicate columns, which make the
-- correlation matrix nearly singular and the solution improper (a Heywood case): AP@M and MRR follow
-- NDCG@M from the same relevance vector, SemF1 is a function of SemP and SemR, SemR-p-Div of SemR-p
-- (on the shared systems' 5,700 documents the old default with them gave communalities 1.02 and 1.05).
local DEFAULT = "all.f1@M,all.ndcg@M,all.rprec_substr,all.semp,all.semr,all.semrp"
local o = C.parse_args(arg, { metrics = DEFAULT, factors = "auto", method = "minres", seed = "42" },
  "kplab run scripts/analysis/factor_analysis.lua [options]\n" ..
  "  --metrics LIST   comma-separated per-document metrics (default " .. DEFAULT .. ")\n" ..
  "  --factors N      number of factors (default: Horn's parallel analysis)\n" ..
  "  --method M       minres (default) or pa (principal axis)\n" ..
  "  --seed N         seed of the parallel analysis' random data (default 42)")
if not o then return end
local metrics = {}
for m in o.metrics:gmatch("[^,]+") do metrics[#metrics + 1] = m end
local runs = C.load_runs(o, metrics)
for _, r in ipairs(runs) do
  for _, m in ipairs(metrics) do
    if not r.scores[m] then error("run " .. r.id .. " has no column " .. m .. " (choose --metrics)", 0) end
  end
end
local rows = C.rows(runs, metrics)
-- Constant columns (e.g. a metric that is 0 everywhere) have no correlation: drop them, saying so.
local keep, dropped = {}, {}
for j, m in ipairs(metrics) do
  local x = C.column(rows, j)
  if S.sd(x) > 0 then keep[#keep + 1] = j else dropped[#dropped + 1] = m end
end
local kept_names, kept_cols = {}, {}
for i, j in ipairs(keep) do kept_names[i], kept_cols[i] = metrics[j], C.column(rows, j) end
local names, first = C.merge_identical(kept_names, kept_cols)
local merged = {}
for _, n in ipairs(names) do if n:find(" = ", 1, true) then merged[#merged + 1] = n end end
local data = {}
for r, row in ipairs(rows) do
  data[r] = {}
  for i, f in ipairs(first) do data[r][i] = row[keep[f]] end
end

-- One factor needs at least two metrics ("--factors must be between 1 and 0" said nothing useful).
if #names < 2 then
  error("factor analysis needs at least two non-constant, distinct metrics (got " .. #names ..
        (#names == 1 and (": " .. names[1]) or "") .. "; choose them with --metrics)", 0)
end
local rep = C.report(o, "factor_analysis", "Factor analysis of per-document metric scores")
rep:add("Runs:\n\n" .. C.runs_table(runs))
rep:add(string.format("%d documents with every metric defined; %d metrics.%s%s\n", #data, #names,
  #dropped > 0 and (" Constant, left out: " .. table.concat(dropped, ", ") .. ".") or "",
  #merged > 0 and (" Identical on every document, merged: " .. table.concat(merged, "; ") .. ".") or ""))

-- Correlation heat map (Spearman).
local cols = {}
for i = 1, #names do cols[i] = C.column(data, i) end
local corr = {}
for a = 1, #names do
  corr[a] = {}
  for b = 1, #names do corr[a][b] = a == b and 1 or S.spearman(cols[a], cols[b]) end
end
rep:figure("metric_correlations.svg", kp.plot.heatmap {
  title = "Spearman correlation of per-document scores", rows = names, cols = names, values = corr,
  min = -1, max = 1, digits = 2,
}, "Spearman correlations between the metrics over " .. #data .. " documents")

-- Number of factors.
local pa = S.parallel_analysis(data, { iter = 100, seed = tonumber(o.seed) })
local prow = {}
for i = 1, #names do prow[i] = { tostring(i), pa.observed[i], pa.random_mean[i], pa.random_p95[i] } end
rep:add("Horn's parallel analysis (eigenvalues of the correlation matrix vs. random normal data of the same shape, 100 draws): " ..
        pa.factors_p95 .. " factor(s) exceed the random 95th percentile (retained), " .. pa.factors ..
        " the random mean.\n\n" ..
        C.md_table({ "component", "observed", "random mean", "random 95th pct" }, prow))
local nf = o.factors == "auto" and math.max(1, pa.factors_p95) or tonumber(o.factors)
if not nf or nf < 1 or nf >= #names then error("--factors must be between 1 and " .. (#names - 1), 0) end

local fa = S.factor_analysis(data, { factors = nf, method = o.method, rotate = "varimax" })
local heywood = {}
for i, m in ipairs(names) do
  if fa.communalities[i] >= 1 or fa.uniquenesses[i] <= 0 then
    heywood[#heywood + 1] = string.format("%s (communality %.4f, uniqueness %.4f)", m, fa.communalities[i],
                                          fa.uniquenesses[i])
  end
end
if #heywood > 0 then
  error("Heywood case: " .. table.concat(heywood, ", ") .. " with " .. nf .. " factor(s) (" .. o.method ..
        "): the solution is improper, no loadings are reported. Drop near-duplicate metrics (--metrics) " ..
        "or choose fewer factors (--factors).", 0)
end
local header, lrows, heat, flabels = { "metric" }, {}, {}, {}
for f = 1, nf do header[#header + 1] = "F" .. f; flabels[f] = "F" .. f end
header[#header + 1] = "communality"
for i, m in ipairs(names) do
  local row = { m }
  heat[i] = {}
  for f = 1, nf do row[#row + 1], heat[i][f] = fa.loadings[i][f], fa.loadings[i][f] end
  row[#row + 1] = fa.communalities[i]
  lrows[i] = row
end
local vrow = { "proportion of variance" }
for f = 1, nf do vrow[#vrow + 1] = fa.proportion[f] end
lrows[#lrows + 1] = vrow
rep:add(string.format("Loadings (%s extraction, varimax rotation, %d factor(s)):\n\n", o.method, nf) ..
        C.md_table(header, lrows))
rep:figure("factor_loadings.svg", kp.plot.heatmap {
  title = "Factor loadings (" .. o.method .. ", varimax)", rows = names, cols = flabels, values = heat,
  min = -1, max = 1, digits = 2,
}, "Loadings of each metric on the " .. nf .. " factor(s)")
rep:finish()
