-- Shared helpers of the analysis scripts (kp.include "common.lua"): options, loading runs, pairing
-- per-document scores, Markdown tables, writing the report files.
local C = {}

local HELP_COMMON = [[
  --db FILE        run store (default: $KPLAB_DB or kplab.db)
  --runs LIST      run ids, e.g. 3,4,7-12 (default: every successful run in the store)
  --out DIR        write DIR/<name>.md and the SVG figures there (default: print only)
  --join           one run per system and dataset: each selected run with the store's other runs of
                   its system and dataset, columns side by side (e.g. the baselines scored under one
                   profile and SemR-p under another; a column in two of them is an error)]]

-- Parses "--name value" pairs (and bare "--flag") into a table; `spec` maps option name -> default
-- (false for flags). Unknown options are errors naming them.
function C.parse_args(argv, spec, usage)
  local o = { db = nil, runs = nil, out = nil, join = false }
  for k, v in pairs(spec) do o[k] = v end
  local known = { db = true, runs = true, out = true, help = true, join = true }
  for k in pairs(spec) do known[k] = true end
  local i = 1
  while argv[i] do
    local a = argv[i]
    local name = a:match("^%-%-([%w_%-]+)$")
    if not name then error("unexpected argument '" .. a .. "' (options start with --)\n" .. usage .. "\n" .. HELP_COMMON, 0) end
    name = name:gsub("%-", "_")
    if not known[name] then error("unknown option --" .. name .. "\n" .. usage .. "\n" .. HELP_COMMON, 0) end
    if name == "help" then
      print(usage .. "\n" .. HELP_COMMON)
      return nil
    end
    if spec[name] == false or name == "join" then
      o[name] = true
      i = i + 1
    else
      local v = argv[i + 1]
      if v == nil then error("option --" .. name .. " needs a value", 0) end
      o[name] = v
      i = i + 2
    end
  end
  return o
end

-- "3,4,7-9" -> {3, 4, 7, 8, 9}
-- option: the option named in errors ("--runs" by default; k lists pass theirs), what: the item's name.
function C.parse_ids(text, option, what)
  option, what = option or "--runs", what or "a run id or a range like 3-7"
  local ids = {}
  for part in text:gmatch("[^,]+") do
    local a, b = part:match("^%s*(%d+)%s*%-%s*(%d+)%s*$")
    if a then
      for id = tonumber(a), tonumber(b) do ids[#ids + 1] = id end
    else
      local id = tonumber(part)
      if not id then error(option .. ": '" .. part .. "' is not " .. what, 0) end
      ids[#ids + 1] = id
    end
  end
  return ids
end

-- The selected runs (oldest first), each with the wanted score columns (all of them when metrics is nil).
function C.load_runs(o, metrics)
  local ids = {}
  if o.runs then
    ids = C.parse_ids(o.runs)
  else
    local list = kp.runs.list(o.db)
    for i = #list, 1, -1 do
      if list[i].status == "ok" then ids[#ids + 1] = list[i].id end
    end
  end
  if #ids == 0 then error("no runs to analyse (evaluate some first: kplab eval ...)", 0) end
  local runs = {}
  for _, id in ipairs(ids) do
    local r = kp.runs.get(id, o.db, metrics)
    if r.status == "ok" then runs[#runs + 1] = r end
  end
  if o.join then runs = C.join_runs(runs, o.db, metrics) end
  return runs
end

-- --join: each run with the store's other successful runs of its system and dataset (oldest first),
-- as one run: the first one's fields (profile too: scripts that reload the corpus use it), the
-- columns and aggregates of all, `id` "3+4", `profile_label` "kpeval (3) + kplab (4)". Runs must
-- have the same documents in the same order, and a column may come from one run only.
function C.join_runs(runs, db, metrics)
  local by_key = {}
  local list = kp.runs.list(db)
  for i = #list, 1, -1 do
    local e = list[i]
    if e.status == "ok" then
      local key = e.system .. "\0" .. e.dataset
      by_key[key] = by_key[key] or {}
      table.insert(by_key[key], e.id)
    end
  end
  local out, done = {}, {}
  for _, r in ipairs(runs) do
    local key = r.system .. "\0" .. r.dataset
    if not done[key] then
      done[key] = true
      local ids = by_key[key] or { r.id }
      local parts = {}
      for _, id in ipairs(ids) do parts[#parts + 1] = id == r.id and r or kp.runs.get(id, db, metrics) end
      local j = {}
      for k, v in pairs(parts[1]) do j[k] = v end
      j.scores, j.aggregates = {}, {}
      local idl, labels, from = {}, {}, {}
      for _, p in ipairs(parts) do
        if #p.doc_ids ~= #j.doc_ids then
          error(string.format("--join: runs %d and %d (%s on %s) have %d and %d documents", parts[1].id, p.id,
                              r.system, r.dataset, #j.doc_ids, #p.doc_ids), 0)
        end
        for d, doc in ipairs(p.doc_ids) do
          if doc ~= j.doc_ids[d] then
            error(string.format("--join: runs %d and %d (%s on %s) differ at document %d ('%s' vs '%s')",
                                parts[1].id, p.id, r.system, r.dataset, d, j.doc_ids[d], doc), 0)
          end
        end
        for name, col in pairs(p.scores) do
          if from[name] then
            error(string.format("--join: column %s is in runs %d and %d (%s on %s); score each metric in one run",
                                name, from[name], p.id, r.system, r.dataset), 0)
          end
          from[name], j.scores[name] = p.id, col
        end
        for name, v in pairs(p.aggregates) do j.aggregates[name] = v end
        idl[#idl + 1], labels[#labels + 1] = tostring(p.id), p.profile .. " (" .. p.id .. ")"
      end
      j.id, j.profile_label = table.concat(idl, "+"), table.concat(labels, " + ")
      out[#out + 1] = j
    end
  end
  return out
end

-- Distinct values of field `key` over runs, in first-seen order.
function C.distinct(runs, key)
  local seen, out = {}, {}
  for _, r in ipairs(runs) do
    if not seen[r[key]] then seen[r[key]], out[#out + 1] = true, r[key] end
  end
  return out
end

local function finite(x) return x == x and x ~= math.huge and x ~= -math.huge end
C.finite = finite

-- Per-document rows over runs: for every run and document where all `metrics` are defined, one row
-- {values...}; also returns the run index and document index of each row.
function C.rows(runs, metrics)
  local rows, where = {}, {}
  for ri, r in ipairs(runs) do
    local cols = {}
    local ok = true
    for j, m in ipairs(metrics) do
      cols[j] = r.scores[m]
      if not cols[j] then ok = false end
    end
    if ok then
      for d = 1, #r.doc_ids do
        local row, good = {}, true
        for j = 1, #metrics do
          local v = cols[j][d]
          if not finite(v) then good = false break end
          row[j] = v
        end
        if good then
          rows[#rows + 1] = row
          where[#where + 1] = { ri, d }
        end
      end
    end
  end
  return rows, where
end

-- Column j of rows.
function C.column(rows, j)
  local c = {}
  for i, row in ipairs(rows) do c[i] = row[j] end
  return c
end

-- Metrics whose values are identical on every document (two names for one computation, or variants
-- that coincide on a dataset) are one variable: a correlation heat map shows them once, labelled
-- "a = b", and a correlation matrix gets no duplicate column (which would make it singular).
-- columns[j]: metric j's values, documents in the same order (NaN counts as equal to NaN here).
-- Returns the labels of the distinct columns (first name first, in the order of `names`), for each
-- the index in `names` of its first metric, and for each name the index of its label.
function C.merge_identical(names, columns)
  local labels, keep, of = {}, {}, {}
  for j = 1, #names do
    local found
    for i, k in ipairs(keep) do
      local a, b = columns[k], columns[j]
      local same = #a == #b
      for d = 1, #a do
        if not same then break end
        local x, y = a[d], b[d]
        same = x == y or (x ~= x and y ~= y)
      end
      if same then found = i break end
    end
    if found then
      labels[found] = labels[found] .. " = " .. names[j]
    else
      keep[#keep + 1] = j
      labels[#labels + 1] = names[j]
      found = #labels
    end
    of[j] = found
  end
  return labels, keep, of
end

-- Metrics present in every run, sorted; `keep(name)` filters.
function C.common_metrics(runs, keep)
  local count = {}
  for _, r in ipairs(runs) do
    for name in pairs(r.scores) do count[name] = (count[name] or 0) + 1 end
  end
  local out = {}
  for name, n in pairs(count) do
    if n == #runs and (not keep or keep(name)) then out[#out + 1] = name end
  end
  table.sort(out)
  return out
end

function C.fmt(x, digits)
  if x == nil then return "–" end
  if type(x) ~= "number" then return tostring(x) end
  if x ~= x then return "nan" end
  if math.type(x) == "integer" or (x == math.floor(x) and math.abs(x) >= 1 and math.abs(x) < 1e15) then
    return string.format("%d", x)
  end
  if x ~= 0 and math.abs(x) < 10 ^ -(digits or 3) then return string.format("%.1e", x) end
  return string.format("%." .. (digits or 3) .. "f", x)
end

-- p-values: 3 significant digits, "< 1e-300" for underflow.
function C.fmt_p(p)
  if p ~= p then return "nan" end
  if p == 0 then return "< 1e-300" end
  if p < 0.001 then return string.format("%.2e", p) end
  return string.format("%.3f", p)
end

-- Markdown table from a header list and rows of cells (strings or numbers).
function C.md_table(header, rows, digits)
  local lines = { "| " .. table.concat(header, " | ") .. " |" }
  local sep = {}
  for i = 1, #header do sep[i] = i == 1 and "---" or "---:" end
  lines[#lines + 1] = "|" .. table.concat(sep, "|") .. "|"
  for _, row in ipairs(rows) do
    local cells = {}
    for i = 1, #header do cells[i] = C.fmt(row[i], digits) end
    lines[#lines + 1] = "| " .. table.concat(cells, " | ") .. " |"
  end
  return table.concat(lines, "\n") .. "\n"
end

-- Collects a report: C.report(o, name) -> object with :add(text), :figure(file, svg, caption), :finish().
-- Nothing is written before :finish(), so a script that fails half-way leaves no partial report.
function C.report(o, name, title)
  local rep = { parts = { "# " .. title .. "\n" }, figures = {} }
  function rep:add(text) self.parts[#self.parts + 1] = text end
  function rep:figure(file, svg, caption)
    if o.out then
      self.figures[#self.figures + 1] = { file, svg }
      self.parts[#self.parts + 1] = "![" .. caption .. "](" .. file .. ")\n\n*" .. caption .. "*\n"
    else
      self.parts[#self.parts + 1] = "(figure " .. file .. ": " .. caption .. "; pass --out DIR to write it)\n"
    end
  end
  function rep:finish()
    local text = table.concat(self.parts, "\n")
    if o.out then
      for _, f in ipairs(self.figures) do kp.write(o.out .. "/" .. f[1], f[2]) end
      kp.write(o.out .. "/" .. name .. ".md", text)
    end
    print(text)
  end
  return rep
end

-- The runs as a Markdown list: id, system, dataset, profile, documents.
function C.runs_table(runs)
  local rows = {}
  for _, r in ipairs(runs) do
    rows[#rows + 1] = { tostring(r.id), r.system, r.dataset, r.profile_label or r.profile, tostring(#r.doc_ids) }
  end
  return C.md_table({ "run", "system", "dataset", "profile", "documents" }, rows)
end

-- The change of a correlation profile between two settings, as the SemR-p paper's Fig. 2 (k = 1 vs
-- k = 3): for every group g (a system) and metric m, rho_a = Spearman(groups[g].a, m) and rho_b =
-- Spearman(groups[g].b, m) over the group's documents; per metric, over the groups, the paired change
-- rho_b - rho_a with the two-sided Wilcoxon signed-rank test (scipy's defaults: zero differences
-- dropped, exact null distribution up to 50 pairs without a zero change, else the normal
-- approximation) and Cliff's delta(rho_b, rho_a) (> 0: the
-- correlations are higher under b). A group where a rho is NaN (a constant column) is left out of that
-- metric and counted in `dropped`. groups[g] = {label=, a={...}, b={...}, metrics={[name]={...}}}.
-- Returns one entry per metric: {metric=, rho={{label=, a=, b=}...}, n=, mean_a=, mean_b=,
--   mean_change=, w=, p=, approx=, delta=, dropped=, note=} (w, p, delta NaN with a note when they cannot
--   be had; approx: p is the normal approximation, as scipy's when a change is zero).
function C.rho_change(groups, metrics)
  local S = kp.stats
  local nan = 0 / 0
  local out = {}
  for _, m in ipairs(metrics) do
    local e = { metric = m, rho = {}, dropped = 0, w = nan, p = nan, delta = nan }
    local ra, rb = {}, {}
    for _, g in ipairs(groups) do
      local y = g.metrics[m]
      local a, b = nan, nan
      if #y >= 3 then a, b = S.spearman(g.a, y), S.spearman(g.b, y) end
      e.rho[#e.rho + 1] = { label = g.label, a = a, b = b }
      if a == a and b == b then
        ra[#ra + 1], rb[#rb + 1] = a, b
      else
        e.dropped = e.dropped + 1
      end
    end
    e.n = #ra
    if #ra > 0 then
      local d = {}
      for i = 1, #ra do d[i] = rb[i] - ra[i] end
      e.mean_a, e.mean_b, e.mean_change = S.mean(ra), S.mean(rb), S.mean(d)
      e.delta = S.cliffs_delta(rb, ra)
      local ok, w, p, z = pcall(S.wilcoxon, rb, ra)
      if ok then
        -- scipy's "auto": exact up to 50 pairs without zero changes, else the normal approximation
        e.w, e.p, e.approx = w, p, z ~= nil
      else
        e.note = "no Wilcoxon test: every change is zero"
      end
    else
      e.mean_a, e.mean_b, e.mean_change = nan, nan, nan
      e.note = "no group with both correlations defined"
    end
    out[#out + 1] = e
  end
  return out
end

return C
