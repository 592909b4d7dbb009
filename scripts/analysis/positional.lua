-- Positional analysis (seed 001 §5.5, Table 3 and Figure 4): every gold present keyphrase is placed by
-- the character offset of its first occurrence in the source, relative to the source's length, into
-- `bins` equal sections (five: 0-20%, ..., 80-100%). Prints the number of gold present keyphrases per
-- section for each dataset (Table 3) and, for a system, the share of them it predicted (exact stem-key
-- match with any of its predictions; Figure 4's "accuracy of present keyphrase generation").
-- The source is the document's tokens joined by single spaces (title then body; see docs/calibration.md).
-- kplab run scripts/analysis/positional.lua [--data DIR] [--system catSeqTG-2RF1] [--file seed1234.txt]
--   [--datasets inspec,krapivin,semeval,kp20k] [--bins 5] [--profile kplab] [--out DIR]
local C = kp.include("common.lua")

local o = C.parse_args(arg, { data = "../shared/data", system = "catSeqTG-2RF1", file = "seed1234.txt",
                              datasets = "inspec,krapivin,semeval,kp20k", bins = "5", profile = "kplab" },
  "kplab run scripts/analysis/positional.lua [options]\n" ..
  "  --data DIR       the shared data folder (default ../shared/data): kpg_testsets_meng2017/<ds>,\n" ..
  "                   kp20k_test_first1000/test_src.txt (KP20k text), predictions/<system>/<ds>/<file>\n" ..
  "  --system NAME    system under predictions/ (default catSeqTG-2RF1; '' for gold counts only)\n" ..
  "  --file NAME      prediction file of each dataset (default seed1234.txt)\n" ..
  "  --datasets LIST  default inspec,krapivin,semeval,kp20k (KP20k: only its first 1000 documents have text)\n" ..
  "  --bins K         sections of the source (default 5)\n" ..
  "  --profile P      normalisation and matching profile (default kplab)")
if not o then return end
local bins = math.tointeger(tonumber(o.bins))
if not bins or bins < 1 then error("--bins must be a positive integer (got '" .. o.bins .. "')", 0) end

local function section_label(i)
  return string.format("%g-%g%%", (i - 1) * 100 / bins, i * 100 / bins)
end

local names, rows_count, rows_acc, series, totals = {}, {}, {}, {}, {}
local tsv = { "dataset\tsection\tgold_present\tpredicted" }  -- machine-readable, for checks
for ds in o.datasets:gmatch("[^,]+") do
  local spec = { dataset = o.data .. "/kpg_testsets_meng2017/" .. ds, profile = o.profile }
  if ds == "kp20k" then spec.source = o.data .. "/kp20k_test_first1000/test_src.txt" end
  if o.system ~= "" then spec.predictions = o.data .. "/predictions/" .. o.system .. "/" .. ds .. "/" .. o.file end
  local corpus = kp.load(spec)
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
rep:add(string.format("Profile `%s`; sections of %g%% of the source's characters each; a keyphrase is " ..
  "placed by its first occurrence.\n", o.profile, 100 / bins))
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
