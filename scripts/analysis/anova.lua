-- Sensitivity to systems and datasets (the SemR-p paper's section 5.2): two-way ANOVA of the
-- per-document scores of one metric with factors system and dataset and their interaction (Type II
-- sums of squares, for unbalanced designs), with eta-squared = SS / SS_total.
-- --pool-k LIST pools the columns all.semrp_k<j> for j in LIST as observations of one response, as the
-- paper's N = 48,000 (8 models x 2 datasets x 1,000 documents x k = 1, 2, 3) and residual df 47,984 =
-- N - 16 cells imply: k is no factor, and each document enters once per k (the observations are not
-- independent, so the p-values are optimistic; the report says so).
-- kplab run scripts/analysis/anova.lua [--db FILE] [--runs LIST] [--out DIR] [--metric M] [--pool-k LIST]
local C = kp.include("common.lua")
local S = kp.stats

local o = C.parse_args(arg, { metric = "all.semrp", pool_k = "" },
  "kplab run scripts/analysis/anova.lua [options]\n  --metric M       the per-document score analysed (default all.semrp)\n" ..
  "  --pool-k LIST    instead: all.semrp_k<j> for each j in LIST (e.g. 1,2,3) pooled as one response")
if not o then return end
local columns = { o.metric }
if o.pool_k ~= "" and o.metric ~= "all.semrp" then error("--pool-k and --metric exclude each other", 0) end
if o.pool_k ~= "" then
  columns = {}
  local seen = {}
  local ks = C.parse_ids(o.pool_k, "--pool-k", "a k value or a range like 1-3")
  if #ks < 2 then error("--pool-k needs at least two k values to pool (got '" .. o.pool_k .. "')", 0) end
  for _, k in ipairs(ks) do
    if k < 1 then error("--pool-k: k must be >= 1 (got " .. k .. ")", 0) end
    if seen[k] then error("--pool-k: k = " .. k .. " is given twice (each document would count twice)", 0) end
    seen[k] = true
    columns[#columns + 1] = "all.semrp_k" .. k
  end
end
local runs = C.load_runs(o, columns)
local y, sys, ds = {}, {}, {}
for _, r in ipairs(runs) do
  for _, c in ipairs(columns) do
    local col = r.scores[c]
    if not col then
      error("run " .. r.id .. " has no column " .. c ..
            (o.pool_k ~= "" and " (evaluate with --param semrp.ks=" .. o.pool_k .. ")" or ""), 0)
    end
    for _, v in ipairs(col) do
      if C.finite(v) then
        y[#y + 1], sys[#sys + 1], ds[#ds + 1] = v, r.system, r.dataset
      end
    end
  end
end
local what = o.pool_k ~= "" and (table.concat(columns, ", ") .. " pooled") or o.metric
local rep = C.report(o, o.pool_k ~= "" and "anova_pooled_k" or "anova", "Two-way ANOVA of " .. what .. ": system x dataset")
rep:add("Runs:\n\n" .. C.runs_table(runs))
local n_sys, n_ds = #C.distinct(runs, "system"), #C.distinct(runs, "dataset")
rep:add(string.format("N = %d document scores, %d systems, %d datasets.%s\n", #y, n_sys, n_ds,
  o.pool_k ~= "" and string.format(" Pooled over k = %s: each document counts %d times, so N is %d x the " ..
    "documents and the observations are not independent (p-values optimistic; the eta^2 shares are " ..
    "descriptive).", o.pool_k, #columns, #columns) or ""))
if n_sys < 2 or n_ds < 2 then
  rep:add("Two-way ANOVA needs at least two systems and two datasets.\n")
else
  local rows = {}
  for _, row in ipairs(S.anova2(y, sys, ds)) do
    local name = row.source == "A" and "system" or row.source == "B" and "dataset" or
                 row.source == "A:B" and "system x dataset" or row.source
    rows[#rows + 1] = { name, row.ss, row.df, row.ms, row.f, row.p and C.fmt_p(row.p) or "", row.eta2,
                        row.partial_eta2 }
  end
  rep:add(C.md_table({ "source", "SS", "df", "MS", "F", "p", "eta^2", "partial eta^2" }, rows, 4))
end
rep:finish()
