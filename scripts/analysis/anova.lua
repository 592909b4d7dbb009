-- Sensitivity to systems and datasets (the SemR-p paper's section 5.2): two-way ANOVA of the
-- per-document scores of one metric with factors system and dataset and their interaction (Type II
-- sums of squares, for unbalanced designs), with eta-squared = SS / SS_total.
-- kplab run scripts/analysis/anova.lua [--db FILE] [--runs LIST] [--out DIR] [--metric M]
local C = kp.include("common.lua")
local S = kp.stats

local o = C.parse_args(arg, { metric = "all.semrp" },
  "kplab run scripts/analysis/anova.lua [options]\n  --metric M       the per-document score analysed (default all.semrp)")
if not o then return end
local runs = C.load_runs(o, { o.metric })
local y, sys, ds = {}, {}, {}
for _, r in ipairs(runs) do
  local col = r.scores[o.metric]
  if not col then error("run " .. r.id .. " has no column " .. o.metric, 0) end
  for _, v in ipairs(col) do
    if C.finite(v) then
      y[#y + 1], sys[#sys + 1], ds[#ds + 1] = v, r.system, r.dataset
    end
  end
end
local rep = C.report(o, "anova", "Two-way ANOVA of " .. o.metric .. ": system x dataset")
rep:add("Runs:\n\n" .. C.runs_table(runs))
local n_sys, n_ds = #C.distinct(runs, "system"), #C.distinct(runs, "dataset")
rep:add(string.format("%d document scores, %d systems, %d datasets.\n", #y, n_sys, n_ds))
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
