-- Confidence re-ranking (seed 001 §6, "confidence-based re-ranking"): each document's kept predictions
-- re-ordered by confidence = 1/KPP, highest first (ties keep the generation order), and F1@k before and
-- after. Needs a predictions file in the "tokens" format (docs/calibration.md). P@k, R@k and F1@k are
-- the `exact` metric's under the kplab-style profiles (docs/profiles.md): hits among the first min(k, n)
-- predictions over k (M: over n), over R for recall; a document without predictions scores 0 and adds
-- nothing to the micro denominators. Reported: per-document mean F1 (f1@k.macro_doc) and the micro F1.
-- kplab run scripts/analysis/rerank.lua --dataset D --predictions P [--ks 5,10,M] [--kpp words|tokens]
--   [--profile kplab] [--source FILE] [--out DIR]
local C = kp.include("common.lua")

local o = C.parse_args(arg, { dataset = "", predictions = "", profile = "kplab", kpp = "words", ks = "5,10,M",
                              source = "", system = "" },
  "kplab run scripts/analysis/rerank.lua --dataset D --predictions P [options]\n" ..
  "  --dataset D, --predictions P   a dataset and a predictions file in the \"tokens\" format\n" ..
  "  --ks LIST        cut-offs, integers >= 1 or M (default 5,10,M)\n" ..
  "  --kpp words|tokens   confidence from KPP-s (Eq. 7, default) or KPP per token (Eq. 2/3)\n" ..
  "  --profile P      matching and normalisation profile (default kplab)\n" ..
  "  --source FILE    source texts for a keyphrase-only dataset (KP20k)\n" ..
  "  --system NAME    name in the title (default: the predictions file name)")
if not o then return end
if o.dataset == "" or o.predictions == "" then error("--dataset and --predictions are required (see --help)", 0) end
if o.kpp ~= "words" and o.kpp ~= "tokens" then error("--kpp must be 'words' or 'tokens' (got '" .. o.kpp .. "')", 0) end
if o.profile == "exhird" then
  error("--profile exhird: its marker splitting leaves predictions without token probabilities (docs/calibration.md)", 0)
end
local ks = {}
for part in o.ks:gmatch("[^,]+") do
  local k = part:match("^%s*(.-)%s*$")
  local n = math.tointeger(tonumber(k))
  if k == "M" then
    ks[#ks + 1] = "M"
  elseif n and n >= 1 then
    ks[#ks + 1] = n
  else
    error("--ks: '" .. k .. "' is not a cut-off (expected integers >= 1 or M, e.g. 5,10,M)", 0)
  end
end
if #ks == 0 then error("--ks: no cut-off given (expected e.g. 5,10,M)", 0) end
local system = o.system ~= "" and o.system or o.predictions:match("([^/]+)$")

local corpus = kp.load { dataset = o.dataset, predictions = o.predictions, profile = o.profile,
                         source = o.source ~= "" and o.source or nil }

-- Per cut-off and order: sum of per-document F1, hits, precision and recall denominators.
local acc = {}
for _, k in ipairs(ks) do
  acc[k] = { before = { f1 = 0, hits = 0, pden = 0, rden = 0 }, after = { f1 = 0, hits = 0, pden = 0, rden = 0 } }
end
local moved = 0  -- documents whose order changed
local without_probs = 0
for d = 1, #corpus do
  local doc = corpus:doc(d)
  local preds = doc.preds
  local n, r = #preds, #doc.refs
  local flags = n > 0 and preds:match(doc.refs):flags() or {}
  local after = {}
  if n > 0 then
    if kp.calib.count_probs(preds) < n then without_probs = without_probs + 1 end
    local kpps = kp.calib.kpps(preds, o.kpp)
    local conf = {}
    for i = 1, n do conf[i] = kpps[i] == kpps[i] and 1 / kpps[i] or 0 end
    local order = kp.calib.risk_coverage(conf, flags).order  -- most confident first, ties in rank order
    for i = 1, n do after[i] = flags[order[i]] end
    for i = 1, n do if order[i] ~= i then moved = moved + 1 break end end
  end
  for _, k in ipairs(ks) do
    local cut = k == "M" and n or math.min(k, n)
    local den = n == 0 and 0 or (k == "M" and n or k)
    for name, list in pairs({ before = flags, after = after }) do
      local hits = 0
      for i = 1, cut do if list[i] then hits = hits + 1 end end
      local p = den > 0 and hits / den or 0
      local rec = r > 0 and hits / r or 0
      local a = acc[k][name]
      a.f1 = a.f1 + (p + rec > 0 and 2 * p * rec / (p + rec) or 0)
      a.hits, a.pden, a.rden = a.hits + hits, a.pden + den, a.rden + r
    end
  end
end
if without_probs > 0 then
  error(string.format("%s: %d documents have predictions without token probabilities (expected a predictions " ..
    "file in the \"tokens\" format, docs/calibration.md)", o.predictions, without_probs), 0)
end

local function micro_f1(a)
  local p = a.pden > 0 and a.hits / a.pden or 0
  local r = a.rden > 0 and a.hits / a.rden or 0
  return p + r > 0 and 2 * p * r / (p + r) or 0
end

local rep = C.report(o, "rerank", "Confidence re-ranking of " .. system .. " on " .. o.dataset)
rep:add(string.format("Profile `%s`; each document's predictions re-ordered by confidence = 1/%s, highest first " ..
  "(ties keep the generation order). %d of %d documents change order.\n", o.profile,
  o.kpp == "words" and "KPP-s" or "KPP", moved, #corpus))
local rows = {}
for _, k in ipairs(ks) do
  local b, a = acc[k].before, acc[k].after
  local nd = #corpus
  rows[#rows + 1] = { "F1@" .. tostring(k), b.f1 / nd, a.f1 / nd, a.f1 / nd - b.f1 / nd, micro_f1(b), micro_f1(a),
                      micro_f1(a) - micro_f1(b) }
end
rep:add(C.md_table({ "cut-off", "macro before", "macro after", "change", "micro before", "micro after", "change" },
  rows, 4))
rep:finish()
