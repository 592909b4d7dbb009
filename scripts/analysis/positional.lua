-- Positional analysis (seed 001 §5.5, Table 3 and Figure 4): every gold present keyphrase is placed by
-- the character offset of its first occurrence in the source, relative to the source's length, into
-- `bins` equal sections (five: 0-20%, ..., 80-100%). Prints the number of gold present keyphrases per
-- section for each dataset (Table 3) and, for a system, the share of them it predicted (exact stem-key
-- match with any of its predictions; Figure 4's "accuracy of present keyphrase generation").
-- Two rules (docs/calibration.md): `kplab` (default) places the profile's present references in the
-- document's tokens joined by single spaces (title then body); `paper` reproduces the paper's Table 3:
-- the raw Meng-2017 line and each raw gold piece stemmed word by word, the first substring occurrence,
-- its offset in the stemmed line divided by the length of the unstemmed line.
-- kplab run scripts/analysis/positional.lua [--data DIR] [--system catSeqTG-2RF1] [--file seed1234.txt]
--   [--datasets inspec,krapivin,semeval,kp20k] [--bins 5] [--profile kplab] [--rule kplab|paper] [--out DIR]
local C = kp.include("common.lua")

local o = C.parse_args(arg, { data = "../shared/data", system = "catSeqTG-2RF1", file = "seed1234.txt",
                              datasets = "inspec,krapivin,semeval,kp20k", bins = "5", profile = "kplab",
                              rule = "kplab" },
  "kplab run scripts/analysis/positional.lua [options]\n" ..
  "  --data DIR       the shared data folder (default ../shared/data): kpg_testsets_meng2017/<ds>,\n" ..
  "                   kp20k_test_first1000/test_src.txt (KP20k text), predictions/<system>/<ds>/<file>\n" ..
  "  --system NAME    system under predictions/ (default catSeqTG-2RF1; '' for gold counts only)\n" ..
  "  --file NAME      prediction file of each dataset (default seed1234.txt)\n" ..
  "  --datasets LIST  default inspec,krapivin,semeval,kp20k (KP20k: only its first 1000 documents have text)\n" ..
  "  --bins K         sections of the source (default 5)\n" ..
  "  --profile P      normalisation and matching profile (default kplab)\n" ..
  "  --rule R         kplab (default: the profile's present references, offsets and length in the same\n" ..
  "                   text) or paper (the calibration paper's Table 3: stemmed offset over unstemmed\n" ..
  "                   length, first substring occurrence, gold not deduplicated; docs/calibration.md)")
if not o then return end
local bins = math.tointeger(tonumber(o.bins))
if not bins or bins < 1 then error("--bins must be a positive integer (got '" .. o.bins .. "')", 0) end
if o.rule ~= "kplab" and o.rule ~= "paper" then
  error("--rule must be 'kplab' or 'paper' (got '" .. o.rule .. "')", 0)
end

local function section_label(i)
  return string.format("%g-%g%%", (i - 1) * 100 / bins, i * 100 / bins)
end

local function dataset_spec(ds)
  local spec = { dataset = o.data .. "/kpg_testsets_meng2017/" .. ds, profile = o.profile }
  if ds == "kp20k" then spec.source = o.data .. "/kp20k_test_first1000/test_src.txt" end
  if o.system ~= "" then spec.predictions = o.data .. "/predictions/" .. o.system .. "/" .. ds .. "/" .. o.file end
  return spec
end

-- Rule `kplab`: the profile's present references (deduplicated, present in the title or in the body),
-- placed by kp.calib.positions. Returns the documents with text and the per-section counts.
local function count_kplab(ds)
  local corpus = kp.load(dataset_spec(ds))
  local count, hit = {}, {}
  for i = 1, bins do count[i], hit[i] = 0, 0 end
  local docs = 0
  for d = 1, #corpus do
    local doc = corpus:doc(d)
    if doc.has_text then
      docs = docs + 1
      local refs = doc.refs:present()
      local pos, section = kp.calib.positions(refs, bins)
      local flags = o.system ~= "" and refs:match(doc.preds):flags() or {}
      for i = 1, #refs do
        -- A present reference always occurs; NaN would mean presence and position disagree.
        if pos[i] ~= pos[i] then error(ds .. ": document " .. doc.id .. ": present keyphrase without a position", 0) end
        local b = section[i]
        count[b] = count[b] + 1
        if flags[i] then hit[b] = hit[b] + 1 end
      end
    end
  end
  -- Positions need the source: a dataset without it (keywords only) would give an empty table.
  if docs == 0 then
    error(o.data .. "/kpg_testsets_meng2017/" .. ds .. ": no document has source text (expected the " ..
          "dataset's *_context.txt beside its keywords, or kp20k's test_src.txt)", 0)
  end
  return docs, count, hit
end

-- The lines of a file as Python's text mode reads them ("\r\n" ends a line too); a final newline does
-- not start another line. Errors name the file, and the line for text that is not UTF-8.
local function read_lines(path)
  local text, message = kp.read(path)
  if not text then error(message, 0) end
  local lines = {}
  for line in (text:sub(-1) == "\n" and text or text .. "\n"):gmatch("([^\n]*)\n") do
    lines[#lines + 1] = line:gsub("\r$", "")
  end
  if text == "" then lines = {} end
  for i, line in ipairs(lines) do
    if not utf8.len(line) then error(path .. ":" .. i .. ": invalid UTF-8 (expected UTF-8 text)", 0) end
  end
  return lines
end

-- The paper's stemming of a string: split on whitespace, each word through nltk's Porter stemmer
-- (which lower-cases it), joined by single spaces.
local function stem_string(s)
  local words = kp.split(s, "whitespace")
  for i = 1, #words do words[i] = kp.stem(words[i]) end
  return table.concat(words, " ")
end

-- Rule `paper` (seed 001's Table 3, reverse-engineered; docs/calibration.md): for each raw context line
-- and each ';' piece of its raw gold line, in file order and with repeats, the first substring occurrence
-- of the stemmed piece in the stemmed line (`<eos>` kept) at code-point offset i, section
-- floor(i / L * bins) with L the code-point length of the UNstemmed line (floating point, as the
-- paper's Python would; a stemmed line longer than its raw one, which only non-ASCII lower-casing can
-- make, has its tail put in the last section). Pieces that do not occur, or have no word, are not
-- counted. A piece is predicted when its stems equal those of one of the system's kept predictions.
local function count_paper(ds)
  local root = o.data .. "/kpg_testsets_meng2017/" .. ds .. "/word_" .. ds .. "_testing_"
  local ctx_path = ds == "kp20k" and o.data .. "/kp20k_test_first1000/test_src.txt" or root .. "context.txt"
  local kw_path = root .. "allkeywords.txt"
  local ctx, kws = read_lines(ctx_path), read_lines(kw_path)
  -- KP20k's text covers only the first documents of its gold; elsewhere the files are line-aligned.
  if (ds == "kp20k" and #ctx > #kws) or (ds ~= "kp20k" and #ctx ~= #kws) then
    error(string.format("%s has %d lines but %s has %d (expected one gold line per document)", ctx_path, #ctx,
      kw_path, #kws), 0)
  end
  local corpus = o.system ~= "" and kp.load(dataset_spec(ds)) or nil
  local count, hit = {}, {}
  for i = 1, bins do count[i], hit[i] = 0, 0 end
  for d, line in ipairs(ctx) do
    local stemmed, length = stem_string(line), utf8.len(line)
    local predicted = {}
    if corpus then
      local preds = corpus:doc(d).preds
      for i = 1, #preds do predicted[table.concat(preds[i].stems, " ")] = true end
    end
    for piece in (kws[d] .. ";"):gmatch("([^;]*);") do
      local key = stem_string(piece)
      local at = key ~= "" and stemmed:find(key, 1, true)
      if at then
        local b = math.min(math.floor(utf8.len(stemmed, 1, at - 1) / length * bins) + 1, bins)
        count[b] = count[b] + 1
        if predicted[key] then hit[b] = hit[b] + 1 end
      end
    end
  end
  return #ctx, count, hit
end

local names, rows_count, rows_acc, series, totals = {}, {}, {}, {}, {}
local tsv = { "dataset\tsection\tgold_present\tpredicted" }  -- machine-readable, for checks
for ds in o.datasets:gmatch("[^,]+") do
  local docs, count, hit
  if o.rule == "paper" then docs, count, hit = count_paper(ds) else docs, count, hit = count_kplab(ds) end
  names[#names + 1] = ds
  local crow, arow = { ds, docs }, { ds }
  local s = { label = ds, x = {}, y = {} }
  local total = 0
  for i = 1, bins do
    tsv[#tsv + 1] = string.format("%s\t%d\t%d\t%d", ds, i, count[i], hit[i])
    crow[#crow + 1] = count[i]
    total = total + count[i]
    if count[i] > 0 then
      arow[#arow + 1] = hit[i] / count[i]
      s.x[#s.x + 1], s.y[#s.y + 1] = (i - 0.5) * 100 / bins, hit[i] / count[i]
    else
      arow[#arow + 1] = nil
    end
  end
  crow[#crow + 1] = total
  totals[ds] = count
  rows_count[#rows_count + 1] = crow
  rows_acc[#rows_acc + 1] = arow
  if #s.x > 0 then series[#series + 1] = s end
end

local rep = C.report(o, "positional", "Position of gold present keyphrases in the source")
if o.rule == "paper" then
  rep:add(string.format("Rule `paper` (the calibration paper's Table 3): each raw gold piece, not deduplicated, " ..
    "placed by the first substring occurrence of its stems in the stemmed source line (`<eos>` kept), the " ..
    "offset in the stemmed line over the length of the unstemmed line; sections of %g%%. Offsets are " ..
    "squeezed towards the start (docs/calibration.md).\n", 100 / bins))
else
  rep:add(string.format("Rule `kplab`, profile `%s`; sections of %g%% of the source's characters each; a " ..
    "keyphrase is placed by its first occurrence.\n", o.profile, 100 / bins))
end
local header = { "dataset", "documents with text" }
for i = 1, bins do header[#header + 1] = section_label(i) end
header[#header + 1] = "total"
rep:add("### Gold present keyphrases per section (Table 3)\n")
rep:add(C.md_table(header, rows_count))

local bar_series = {}
local cats = {}
for i = 1, bins do cats[i] = section_label(i) end
for _, ds in ipairs(names) do bar_series[#bar_series + 1] = { label = ds, values = totals[ds] } end
rep:figure("positional_counts.svg", kp.plot.bars { title = "Gold present keyphrases by position in the source",
  xlabel = "position of the first occurrence (% of the source's characters)", ylabel = "keyphrases",
  categories = cats, series = bar_series }, "Gold present keyphrases per section of the source.")

if o.system ~= "" then
  local aheader = { "dataset" }
  for i = 1, bins do aheader[#aheader + 1] = section_label(i) end
  rep:add("### " .. o.system .. " (" .. o.file .. "): share of the gold present keyphrases of each section " ..
    "that it predicted (Figure 4)\n")
  rep:add(C.md_table(aheader, rows_acc, 4))
  rep:figure("positional_accuracy.svg", kp.plot.lines { title = "Present keyphrases predicted by position: " .. o.system,
    xlabel = "position of the first occurrence (% of the source's characters)", ylabel = "accuracy",
    xrange = { 0, 100 }, yrange = { 0, 1 }, series = series },
    "Share of the gold present keyphrases of each section that the system predicted.")
end
if o.out then kp.write(o.out .. "/positional.tsv", table.concat(tsv, "\n") .. "\n") end
rep:finish()
