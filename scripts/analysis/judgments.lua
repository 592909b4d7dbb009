-- Human judgments for meta-evaluation (kp.include "judgments.lua"): reads the CSV or JSONL files of
-- docs/formats.md#human-judgments into rows {line, doc_id, system, keyphrase, annotator, score, label}.
-- Nothing is returned unless the whole file is valid: the first problem is an error "FILE:LINE: what was
-- expected" (or "FILE: ..." for the file as a whole).
local J = {}

local FIELDS = { doc_id = true, system = true, keyphrase = true, annotator = true, score = true, label = true }
local FIELD_LIST = "doc_id, system, keyphrase, annotator, score, label"

local function fail(name, line, msg)
  if line then error(string.format("%s:%d: %s", name, line, msg), 0) end
  error(name .. ": " .. msg, 0)
end

local function trim(s) return (s:gsub("^[ \t]+", ""):gsub("[ \t]+$", "")) end

-- A decimal number as written by spreadsheets and numpy ("4", "-0.5", "3.", ".5", "1e-3"): Lua's
-- tonumber would also take hex ("0x10"), which no score file means.
local function decimal(text)
  if not (text:match("^[+-]?%d+%.?%d*$") or text:match("^[+-]?%.%d+$") or
          text:match("^[+-]?%d+%.?%d*[eE][+-]?%d+$") or text:match("^[+-]?%.%d+[eE][+-]?%d+$")) then
    return nil
  end
  local v = tonumber(text)
  if v == nil or v ~= v or v == math.huge or v == -math.huge then return nil end
  return v + 0.0
end

-- "good=1,bad=0" -> {good = 1.0, bad = 0.0}; errors name the option.
function J.parse_labels(text, option)
  option = option or "--labels"
  local labels, n = {}, 0
  for part in text:gmatch("[^,]+") do
    local k, v = part:match("^%s*(.-)%s*=%s*(.-)%s*$")
    if not k or k == "" then error(option .. ": '" .. part .. "' is not LABEL=NUMBER", 0) end
    local x = decimal(v)
    if not x then error(option .. ": label '" .. k .. "' needs a number (got '" .. v .. "')", 0) end
    if labels[k] then error(option .. ": label '" .. k .. "' is given twice", 0) end
    labels[k], n = x, n + 1
  end
  if n == 0 then error(option .. ": no labels (expected LABEL=NUMBER,...)", 0) end
  return labels
end

local function label_list(labels)
  local names = {}
  for k in pairs(labels) do names[#names + 1] = k end
  table.sort(names)
  return table.concat(names, ", ")
end

-- Strips a UTF-8 byte order mark; refuses UTF-16/32 and invalid UTF-8 (naming the line).
local function prepare(text, name)
  if text:sub(1, 2) == "\255\254" or text:sub(1, 2) == "\254\255" then
    fail(name, nil, "UTF-16 text (byte order mark FF FE or FE FF); expected UTF-8")
  end
  if text:sub(1, 3) == "\239\187\191" then text = text:sub(4) end
  local ok, bad = utf8.len(text)
  if not ok then
    local line = 1
    for _ in text:sub(1, bad - 1):gmatch("\n") do line = line + 1 end
    fail(name, line, "invalid UTF-8 at byte " .. bad .. " (expected UTF-8 text)")
  end
  return text
end

-- CSV records (RFC 4180: comma-separated, fields optionally in double quotes with "" for a quote; a
-- quoted field may hold commas and line breaks). Lines end in LF or CRLF; a lone CR is an error.
-- Returns {line = first line of the record, fields = {...}} for every non-blank record.
local function csv_records(text, name)
  local records, pos, line, n = {}, 1, 1, #text
  while pos <= n do
    local fields, start_line, field = {}, line, {}
    while true do
      local c = text:sub(pos, pos)
      if c == '"' and #field == 0 then
        -- A quoted field: up to the closing quote, "" standing for one quote.
        pos = pos + 1
        local parts = {}
        while true do
          local q = text:find('"', pos, true)
          if not q then fail(name, start_line, "a quoted field is not closed (expected a closing \")") end
          local chunk = text:sub(pos, q - 1)
          for _ in chunk:gmatch("\n") do line = line + 1 end
          parts[#parts + 1] = chunk
          if text:sub(q + 1, q + 1) == '"' then
            parts[#parts + 1] = '"'
            pos = q + 2
          else
            pos = q + 1
            break
          end
        end
        field[#field + 1] = { quoted = table.concat(parts) }
        c = text:sub(pos, pos)
        if c ~= "," and c ~= "\n" and c ~= "\r" and c ~= "" then
          fail(name, line, "text after a closing quote (expected a comma or the end of the line)")
        end
      end
      local stop = text:find("[,\r\n\"]", pos)
      local piece = text:sub(pos, (stop or n + 1) - 1)
      if #piece > 0 then field[#field + 1] = piece end
      pos = stop or n + 1
      c = text:sub(pos, pos)
      if c == '"' then fail(name, line, "a double quote inside an unquoted field (expected the field in quotes with \"\" for a quote)") end
      if type(field[1]) == "table" then
        fields[#fields + 1] = { text = field[1].quoted, quoted = true }
      else
        fields[#fields + 1] = { text = field[1] or "", quoted = false }
      end
      field = {}
      if c == "," then
        pos = pos + 1
      else
        if c == "\r" then
          if text:sub(pos + 1, pos + 1) ~= "\n" then
            fail(name, line, "carriage return not followed by a line feed (expected LF or CRLF line ends)")
          end
          pos = pos + 2
        elseif c == "\n" then
          pos = pos + 1
        end
        line = line + 1
        break
      end
    end
    local blank = #fields == 1 and not fields[1].quoted and trim(fields[1].text) == ""
    if not blank then records[#records + 1] = { line = start_line, fields = fields } end
  end
  return records
end

-- A minimal strict JSON value parser for one line: objects, arrays, strings (with \u escapes and
-- surrogate pairs), numbers, true, false, null. Errors say what was expected at which column.
local function json_decode(s, name, line)
  local pos = 1
  local function bad(msg) fail(name, line, msg .. " at column " .. pos .. " (expected one JSON object per line)") end
  local function ws() pos = s:find("[^ \t]", pos) or #s + 1 end
  local value
  local function str()
    pos = pos + 1
    local out = {}
    while true do
      local c = s:sub(pos, pos)
      if c == "" then bad("unterminated string") end
      if c == '"' then pos = pos + 1 break end
      if c == "\\" then
        local e = s:sub(pos + 1, pos + 1)
        local map = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }
        if map[e] then
          out[#out + 1] = map[e]
          pos = pos + 2
        elseif e == "u" then
          local hex = s:sub(pos + 2, pos + 5)
          if not hex:match("^%x%x%x%x$") then bad("bad \\u escape") end
          local cp = tonumber(hex, 16)
          pos = pos + 6
          if cp >= 0xD800 and cp <= 0xDBFF then
            local lo = s:match("^\\u(%x%x%x%x)", pos)
            local v = lo and tonumber(lo, 16)
            if not v or v < 0xDC00 or v > 0xDFFF then bad("unpaired surrogate in \\u escape") end
            cp = 0x10000 + (cp - 0xD800) * 0x400 + (v - 0xDC00)
            pos = pos + 6
          elseif cp >= 0xDC00 and cp <= 0xDFFF then
            bad("unpaired surrogate in \\u escape")
          end
          out[#out + 1] = utf8.char(cp)
        else
          bad("bad escape in string")
        end
      else
        if c:byte() < 32 then bad("control character in string") end
        local j = s:find('["\\%c]', pos) or #s + 1
        out[#out + 1] = s:sub(pos, j - 1)
        pos = j
      end
    end
    return table.concat(out)
  end
  function value()
    ws()
    local c = s:sub(pos, pos)
    if c == "{" then
      pos = pos + 1
      local obj, keys = {}, {}
      ws()
      if s:sub(pos, pos) == "}" then pos = pos + 1 return { object = obj, keys = keys } end
      while true do
        ws()
        if s:sub(pos, pos) ~= '"' then bad("expected a string key") end
        local key_start = pos
        local k = str()
        if obj[k] ~= nil then
          pos = key_start
          bad("key '" .. k .. "' given twice")
        end
        ws()
        if s:sub(pos, pos) ~= ":" then bad("expected ':'") end
        pos = pos + 1
        obj[k] = value()
        keys[#keys + 1] = k
        ws()
        c = s:sub(pos, pos)
        pos = pos + 1
        if c == "}" then break end
        if c ~= "," then pos = pos - 1 bad("expected ',' or '}'") end
      end
      return { object = obj, keys = keys }
    elseif c == "[" then
      pos = pos + 1
      local arr = {}
      ws()
      if s:sub(pos, pos) == "]" then pos = pos + 1 return { array = arr } end
      while true do
        arr[#arr + 1] = value()
        ws()
        c = s:sub(pos, pos)
        pos = pos + 1
        if c == "]" then break end
        if c ~= "," then pos = pos - 1 bad("expected ',' or ']'") end
      end
      return { array = arr }
    elseif c == '"' then
      return str()
    elseif s:sub(pos, pos + 3) == "true" then
      pos = pos + 4 return true
    elseif s:sub(pos, pos + 4) == "false" then
      pos = pos + 5 return false
    elseif s:sub(pos, pos + 3) == "null" then
      pos = pos + 4 return { null = true }
    else
      local num = s:match("^-?%d+%.?%d*[eE]?[+-]?%d*", pos)
      if not num or num == "" or num == "-" then bad("unexpected character") end
      if not (num:match("^-?0$") or num:match("^-?0[.eE]") or num:match("^-?[1-9]")) or num:match("%.$") or
         num:match("[eE][+-]?$") then
        bad("malformed number")
      end
      local v = tonumber(num)
      if not v then bad("malformed number") end
      pos = pos + #num
      return { number = v + 0.0, text = num }
    end
  end
  local v = value()
  ws()
  if pos <= #s then bad("text after the JSON value") end
  if type(v) ~= "table" or not v.object then fail(name, line, "expected a JSON object {\"doc_id\": ..., \"system\": ..., ...}") end
  return v
end

-- Checks one record's values and appends the judgment. `rec` maps field -> {text=} (CSV) or
-- {string=} / {number=} (JSON). `shape` remembers which optional fields the first row had.
local function add_row(out, seen, shape, name, line, rec, labels)
  local row = { line = line }
  local function text_field(key, required, allow_number)
    local v = rec[key]
    if v == nil then
      if required then fail(name, line, "no " .. key .. " (expected a non-empty " .. key .. ")") end
      return nil
    end
    local s
    if v.string then
      s = v.string
    elseif v.number and allow_number and math.type(tonumber(v.text)) == "integer" then
      s = v.text
    elseif v.text then
      s = v.text
    else
      fail(name, line, key .. " must be a string" .. (allow_number and " or an integer" or "") ..
                       " (got " .. (v.number and "a number" or v.kind or "another JSON value") .. ")")
    end
    s = trim(s)
    if s == "" then fail(name, line, "empty " .. key .. " (expected a non-empty " .. key .. ")") end
    return s
  end
  row.doc_id = text_field("doc_id", true, true)
  row.system = text_field("system", true, false)
  row.keyphrase = text_field("keyphrase", false, false)
  row.annotator = text_field("annotator", false, true)
  local has_score, has_label = rec.score ~= nil, rec.label ~= nil
  if has_score and has_label then fail(name, line, "both score and label (expected one of them)") end
  if not has_score and not has_label then fail(name, line, "no score or label (expected one of them)") end
  if has_score then
    local v = rec.score
    local x
    if v.number then
      x = v.number
    elseif v.text then
      x = decimal(trim(v.text))
      if not x then fail(name, line, "score '" .. v.text .. "' is not a number (expected a finite decimal number)") end
    else
      fail(name, line, "score must be a number (got " .. (v.kind or "another JSON value") .. ")")
    end
    -- Two judgments of 1e308 averaged overflowed to inf and failed deep in the statistics.
    if math.abs(x) > 1e300 then
      fail(name, line, "score '" .. (v.text or tostring(x)) .. "' is too large (expected |score| <= 1e300, so that " ..
           "means of judgments stay finite)")
    end
    row.score = x
  else
    local l = text_field("label", true, false)
    if not labels then
      fail(name, line, "label '" .. l .. "' but no label scale (give one, e.g. --labels bad=0,good=1)")
    end
    local x = labels[l]
    if x == nil then fail(name, line, "unknown label '" .. l .. "' (expected one of: " .. label_list(labels) .. ")") end
    row.label, row.score = l, x
  end
  -- Every row has the same optional fields: a keyphrase-level file with one document-level row (or
  -- one row missing its annotator) would be averaged wrongly, so it is refused.
  local this = (row.keyphrase and "k" or "-") .. (row.annotator and "a" or "-") .. (has_score and "s" or "l")
  if not shape.value then
    shape.value, shape.line = this, line
  elseif shape.value ~= this then
    local function describe(sh)
      return (sh:sub(1, 1) == "k" and "a keyphrase" or "no keyphrase") .. ", " ..
             (sh:sub(2, 2) == "a" and "an annotator" or "no annotator") .. ", " ..
             (sh:sub(3, 3) == "s" and "a score" or "a label")
    end
    fail(name, line, describe(this) .. " (expected the fields of line " .. shape.line .. ": " ..
                     describe(shape.value) .. ")")
  end
  local key = table.concat({ row.doc_id, row.system, row.keyphrase or "", row.annotator or "" }, "\0")
  if seen[key] then
    fail(name, line, string.format("duplicate judgment of document '%s', system '%s'%s%s (first on line %d)",
      row.doc_id, row.system, row.keyphrase and (", keyphrase '" .. row.keyphrase .. "'") or "",
      row.annotator and (", annotator '" .. row.annotator .. "'") or "", seen[key]))
  end
  seen[key] = line
  out[#out + 1] = row
end

local function parse_csv(text, name, labels)
  local records = csv_records(text, name)
  if #records == 0 then fail(name, nil, "empty file (expected a header line: doc_id,system[,keyphrase][,annotator],score|label)") end
  local header = records[1]
  local cols, where = {}, {}
  for i, f in ipairs(header.fields) do
    local h = trim(f.text)
    if not FIELDS[h] then
      fail(name, header.line, "unknown column '" .. h .. "' (expected columns among " .. FIELD_LIST .. ")")
    end
    if where[h] then fail(name, header.line, "column '" .. h .. "' appears twice") end
    cols[i], where[h] = h, i
  end
  for _, required in ipairs({ "doc_id", "system" }) do
    if not where[required] then fail(name, header.line, "no column '" .. required .. "' (the header needs doc_id, system and score or label)") end
  end
  if where.score and where.label then fail(name, header.line, "both a score and a label column (expected one of them)") end
  if not where.score and not where.label then fail(name, header.line, "no column 'score' or 'label' (expected one of them)") end
  if #records == 1 then fail(name, nil, "no judgments after the header (expected at least one row)") end
  local out, seen, shape = {}, {}, {}
  for r = 2, #records do
    local rec = records[r]
    if #rec.fields ~= #cols then
      fail(name, rec.line, string.format("%d fields, expected %d (%s)", #rec.fields, #cols, table.concat(cols, ",")))
    end
    local fields = {}
    for i, f in ipairs(rec.fields) do fields[cols[i]] = { text = f.text } end
    add_row(out, seen, shape, name, rec.line, fields, labels)
  end
  return out
end

local function parse_jsonl(text, name, labels)
  local out, seen, shape = {}, {}, {}
  local line = 0
  for raw in (text .. (text:sub(-1) == "\n" and "" or "\n")):gmatch("([^\n]*)\n") do
    line = line + 1
    if raw:sub(-1) == "\r" then raw = raw:sub(1, -2) end
    if raw:find("\r", 1, true) then fail(name, line, "carriage return inside a line (expected LF or CRLF line ends)") end
    if not raw:match("^[ \t]*$") then
      local v = json_decode(raw, name, line)
      local fields = {}
      for _, k in ipairs(v.keys) do
        if not FIELDS[k] then fail(name, line, "unknown key '" .. k .. "' (expected keys among " .. FIELD_LIST .. ")") end
        local x = v.object[k]
        if type(x) == "string" then
          fields[k] = { string = x }
        elseif type(x) == "table" and x.number then
          fields[k] = { number = x.number, text = x.text }
        elseif type(x) == "table" and x.null then
          if k == "keyphrase" or k == "annotator" then
            fail(name, line, "null " .. k .. " (leave the key out instead)")
          end
          fields[k] = { kind = "null" }
        else
          fields[k] = { kind = type(x) == "boolean" and "a boolean" or (x.array and "an array" or "an object") }
        end
        -- A JSON number where text is expected: only integer ids are read as text.
        if fields[k].number and k ~= "score" then
          if k ~= "doc_id" and k ~= "annotator" then
            fail(name, line, k .. " must be a string (got a number)")
          end
          if not x.text:match("^-?%d+$") then fail(name, line, k .. " must be a string or an integer (got " .. x.text .. ")") end
        end
        if fields[k].string and k == "score" then
          fail(name, line, "score must be a number (got the string \"" .. fields[k].string .. "\")")
        end
      end
      add_row(out, seen, shape, name, line, fields, labels)
    end
  end
  if #out == 0 then fail(name, nil, "empty file (expected one JSON object per line)") end
  return out
end

-- J.parse(text, name [, {labels = {label = number}, format = "csv" | "jsonl"}]): the judgments of a
-- file's text. The format defaults to the name's extension (.csv, .jsonl or .json).
function J.parse(text, name, opts)
  opts = opts or {}
  local format = opts.format
  if not format then
    local ext = name:match("%.([%w]+)$")
    ext = ext and ext:lower()
    if ext == "csv" then
      format = "csv"
    elseif ext == "jsonl" or ext == "json" then
      format = "jsonl"
    else
      fail(name, nil, "cannot tell the format from the name (expected a .csv or .jsonl file, or --format csv|jsonl)")
    end
  end
  if format ~= "csv" and format ~= "jsonl" then error("--format: '" .. tostring(format) .. "' (expected csv or jsonl)", 0) end
  text = prepare(text, name)
  if format == "csv" then return parse_csv(text, name, opts.labels) end
  return parse_jsonl(text, name, opts.labels)
end

-- J.read(path, opts): J.parse of the file (through kp.read, so under the script's read grants).
function J.read(path, opts)
  local text, err = kp.read(path)
  if not text then error(err, 0) end
  return J.parse(text, path, opts)
end

return J
