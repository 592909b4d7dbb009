-- Shared helpers of the analysis scripts (kp.include "common.lua"): options, loading runs, pairing
-- per-document scores, Markdown tables, writing the report files.
local C = {}

local HELP_COMMON = [[
  --db FILE        run store (default: $KPLAB_DB or kplab.db)
  --runs LIST      run ids, e.g. 3,4,7-12 (default: every successful run in the store)
  --out DIR        write DIR/<name>.md and the SVG figures there (default: print only)]]

-- Parses "--name value" pairs (and bare "--flag") into a table; `spec` maps option name -> default
-- (false for flags). Unknown options are errors naming them.
function C.parse_args(argv, spec, usage)
  local o = { db = nil, runs = nil, out = nil }
  for k, v in pairs(spec) do o[k] = v end
  local known = { db = true, runs = true, out = true, help = true }
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
    if spec[name] == false then
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
function C.parse_ids(text)
  local ids = {}
  for part in text:gmatch("[^,]+") do
    local a, b = part:match("^%s*(%d+)%s*%-%s*(%d+)%s*$")
    if a then
      for id = tonumber(a), tonumber(b) do ids[#ids + 1] = id end
    else
      local id = tonumber(part)
      if not id then error("--runs: '" .. part .. "' is not a run id or a range like 3-7", 0) end
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
  return runs
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
function C.report(o, name, title)
  local rep = { parts = { "# " .. title .. "\n" } }
  function rep:add(text) self.parts[#self.parts + 1] = text end
  function rep:figure(file, svg, caption)
    if o.out then
      kp.write(o.out .. "/" .. file, svg)
      self.parts[#self.parts + 1] = "![" .. caption .. "](" .. file .. ")\n\n*" .. caption .. "*\n"
    else
      self.parts[#self.parts + 1] = "(figure " .. file .. ": " .. caption .. "; pass --out DIR to write it)\n"
    end
  end
  function rep:finish()
    local text = table.concat(self.parts, "\n")
    if o.out then kp.write(o.out .. "/" .. name .. ".md", text) end
    print(text)
  end
  return rep
end

-- The runs as a Markdown list: id, system, dataset, profile, documents.
function C.runs_table(runs)
  local rows = {}
  for _, r in ipairs(runs) do rows[#rows + 1] = { tostring(r.id), r.system, r.dataset, r.profile, tostring(#r.doc_ids) } end
  return C.md_table({ "run", "system", "dataset", "profile", "documents" }, rows)
end

return C
