-- System-level ranking agreement (the SemR-p paper's section 5.3): per dataset, each system's mean of
-- every metric, then Spearman's rho between the system rankings of the focus metric (default
-- all.semrp) and of each other metric, and the whole metric x metric matrix as a heat map (metrics
-- identical on every document merged into one row and column "a = b").
-- kplab run scripts/analysis/ranking_agreement.lua [--db FILE] [--runs LIST] [--out DIR] [--metric M]
--   [--metrics LIST]
local C = kp.include("common.lua")
local S = kp.stats

local DEFAULT = "all.f1@M,all.f1@5,all.ndcg@M,all.ap@M,all.mrr,all.rprec_substr,all.semp,all.semr,all.semf1," ..
                "all.semrp,all.semrp_div,all.semrp_ak,all.semrp_dk"
local o = C.parse_args(arg, { metric = "all.semrp", metrics = DEFAULT },
  "kplab run scripts/analysis/ranking_agreement.lua [options]\n  --metric M       focus metric (default all.semrp)\n" ..
  "  --metrics LIST   metrics compared (default " .. DEFAULT .. "; 'all' = every all.* metric)")
if not o then return end
local runs = C.load_runs(o)
local wanted
if o.metrics ~= "all" then
  wanted = {}
  for m in o.metrics:gmatch("[^,]+") do wanted[m] = true end
  wanted[o.metric] = true
end
local metrics = C.common_metrics(runs, function(m) return m:match("^all%.") ~= nil and (not wanted or wanted[m]) end)
local focus
for i, m in ipairs(metrics) do if m == o.metric then focus = i end end
if not focus then error("metric " .. o.metric .. " is not in every selected run", 0) end

local rep = C.report(o, "ranking_agreement", "System-level ranking agreement with " .. o.metric)
rep:add("Runs:\n\n" .. C.runs_table(runs))
for _, ds in ipairs(C.distinct(runs, "dataset")) do
  local sub = {}
  for _, r in ipairs(runs) do if r.dataset == ds then sub[#sub + 1] = r end end
  rep:add("## " .. ds .. " (" .. #sub .. " systems)\n")
  if #sub < 3 then
    rep:add("Fewer than 3 systems: no ranking correlation.\n")
  else
    -- means[m][s]: mean of metric m for system s (documents where it is defined)
    local means = {}
    for j, m in ipairs(metrics) do
      means[j] = {}
      for s, r in ipairs(sub) do
        local x = {}
        for _, v in ipairs(r.scores[m]) do if C.finite(v) then x[#x + 1] = v end end
        means[j][s] = #x > 0 and S.mean(x) or 0 / 0
      end
    end
    local mrows = {}
    for s, r in ipairs(sub) do
      mrows[s] = { r.system }
      mrows[s][2] = means[focus][s]
    end
    table.sort(mrows, function(a, b) return a[2] > b[2] end)
    rep:add("Systems by mean " .. o.metric .. ":\n\n" .. C.md_table({ "system", o.metric }, mrows))
    -- Metrics identical on every document of every system are one row and column, "a = b".
    local docs = {}
    for j, m in ipairs(metrics) do
      docs[j] = {}
      for _, r in ipairs(sub) do
        for _, v in ipairs(r.scores[m]) do docs[j][#docs[j] + 1] = v end
      end
    end
    local labels, first, of = C.merge_identical(metrics, docs)
    local f = of[focus]
    local trows, heat = {}, {}
    for a = 1, #labels do
      heat[a] = {}
      for b = 1, #labels do heat[a][b] = S.spearman(means[first[a]], means[first[b]]) end
    end
    for a = 1, #labels do
      if a ~= f then trows[#trows + 1] = { labels[a], heat[f][a] } end
    end
    table.sort(trows, function(x, y) return (x[2] == x[2] and x[2] or -2) > (y[2] == y[2] and y[2] or -2) end)
    rep:add("Spearman's rho between the system ranking by " .. o.metric .. " and by each metric:\n\n" ..
            C.md_table({ "metric", "rho" }, trows))
    rep:figure("ranking_agreement_" .. ds .. ".svg", kp.plot.heatmap {
      title = "Spearman rho of system rankings, " .. ds, rows = labels, cols = labels, values = heat,
      min = -1, max = 1, digits = 2,
    }, "Agreement of system rankings between metrics on " .. ds .. " (" .. #sub .. " systems)")
  end
end
rep:finish()
