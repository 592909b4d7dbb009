-- The homogeneity study of Houbre, Boudin & Daille ("Evaluating the Homogeneity of Keyphrase
-- Prediction Models"; docs/homogeneity.md), on any systems:
--  * pairs from shared keyphrases (the paper's section 3.3.2 and Table 3): every pair of documents of a
--    dataset whose gold keyphrase sets have Jaccard >= theta, the genericity of their shared
--    keyphrases, the PRMU distribution of their gold (Table 1's row), and per system Hooper's and
--    Rodgers' CP of its predictions for the two documents, the share of absent predictions and their
--    PRMU distribution;
--  * optionally, pairs from reformulations (section 3.3.1 and Table 2): the quality filters, WER and
--    ROUGE-1, and per system CP, % generated and the correlation of Hooper's CP with ROUGE-1.
--
-- kplab run scripts/analysis/homogeneity.lua --dataset DIR --system NAME=PREDICTIONS [--system ...]
--     [--source FILE] [--theta 0.5] [--profile kplab] [--denominator union|max|mean] [--no-stem]
--     [--mine-stem] [--keep-identical] [--top-k K | --top-k NAME=K ...]
--     [--reformulations FILE --reform-system NAME=ORIG_PREDS,REFORM_PREDS [--reform-system ...]]
--     [--out FILE]
-- scripts/homogeneity_study.sh runs it on every system with KP20k predictions in ../shared/data.
local H = kp.homog
local S = kp.stats

local USAGE = [[
kplab run scripts/analysis/homogeneity.lua --dataset DIR --system NAME=PREDICTIONS [options]
  --dataset DIR          the dataset whose gold is mined for pairs (e.g. kpg_testsets_meng2017/kp20k)
  --system NAME=FILE     a system's predictions for the dataset (repeatable; in table order)
  --source FILE          source texts for a keyphrase-only release (KP20k: kp20k_test_first1000/test_src.txt);
                         % absent and PRMU are computed over the pair documents that have text
  --theta T              minimum Jaccard of the two gold sets (default 0.5)
  --profile P            normalization profile (default kplab)
  --denominator D        union (Jaccard; default), max or mean (see docs/homogeneity.md)
  --no-stem              CP: compare predicted keyphrases and words without stemming
  --mine-stem            mining: compare gold keyphrases as stem keys (default: as normalized strings,
                         the paper's "Jaccard index at the keyphrase level")
  --keep-identical       keep pairs whose gold sets are identical (default: left out; in KP20k they
                         are duplicate records of one paper, which every system indexes identically);
                         either way their number is reported
  --top-k K              cap every system's predictions to their first K (K >= 1) before CP, % Gen.
                         and PRMU (the paper gives its extractive systems 5); default: no cap
  --top-k NAME=K         the same for the system NAME only (repeatable; overrides --top-k K)
  --reformulations FILE  reformulation pairs (JSONL, docs/homogeneity.md) for the Table 2 study
  --reform-system NAME=ORIG,REFORM   a system's ';' prediction lines for the originals and for the
                         reformulations, one line per pair (repeatable)
  --out FILE             also write the report (Markdown) to FILE]]

local function parse(argv)
  local o = { systems = {}, reform_systems = {}, theta = 0.5, profile = "kplab", denominator = "union",
              stem = true, mine_stem = false, keep_identical = false, top_k = {} }
  local i = 1
  local function value(name)
    local v = argv[i + 1]
    if v == nil then error("option " .. name .. " needs a value\n" .. USAGE, 0) end
    i = i + 2
    return v
  end
  while argv[i] do
    local a = argv[i]
    if a == "--help" then
      print(USAGE)
      return nil
    elseif a == "--dataset" then o.dataset = value(a)
    elseif a == "--source" then o.source = value(a)
    elseif a == "--theta" then
      o.theta = tonumber(value(a))
      if not o.theta then error("--theta needs a number", 0) end
    elseif a == "--profile" then o.profile = value(a)
    elseif a == "--denominator" then o.denominator = value(a)
    elseif a == "--no-stem" then o.stem = false; i = i + 1
    elseif a == "--mine-stem" then o.mine_stem = true; i = i + 1
    elseif a == "--keep-identical" then o.keep_identical = true; i = i + 1
    elseif a == "--out" then o.out = value(a)
    elseif a == "--top-k" then
      local v = value(a)
      local name, k = v:match("^(.+)=(%d+)$")
      if not name then k = v:match("^%d+$") end
      k = k and math.tointeger(tonumber(k))
      if not k or k < 1 then
        error("--top-k expects K or NAME=K with K an integer >= 1 (got '" .. v .. "')", 0)
      end
      if name then o.top_k[name] = k else o.top_k_all = k end
    elseif a == "--reformulations" then o.reformulations = value(a)
    elseif a == "--system" then
      local v = value(a)
      local name, path = v:match("^([^=]+)=(.+)$")
      if not name then error("--system expects NAME=PREDICTIONS (got '" .. v .. "')", 0) end
      o.systems[#o.systems + 1] = { name = name, path = path }
    elseif a == "--reform-system" then
      local v = value(a)
      local name, p1, p2 = v:match("^([^=]+)=([^,]+),(.+)$")
      if not name then error("--reform-system expects NAME=ORIG_PREDS,REFORM_PREDS (got '" .. v .. "')", 0) end
      o.reform_systems[#o.reform_systems + 1] = { name = name, original = p1, reformulation = p2 }
    else
      error("unknown argument '" .. a .. "'\n" .. USAGE, 0)
    end
  end
  if not o.dataset and not o.reformulations then error("--dataset or --reformulations is required\n" .. USAGE, 0) end
  if o.dataset and #o.systems == 0 then error("--dataset needs at least one --system NAME=PREDICTIONS", 0) end
  if #o.reform_systems > 0 and not o.reformulations then error("--reform-system needs --reformulations", 0) end
  for name in pairs(o.top_k) do
    local known = false
    for _, sys in ipairs(o.systems) do known = known or sys.name == name end
    for _, sys in ipairs(o.reform_systems) do known = known or sys.name == name end
    if not known then error("--top-k " .. name .. "=" .. o.top_k[name] .. ": no --system or --reform-system " ..
      "is named '" .. name .. "'", 0) end
  end
  return o
end

local o = parse(arg)
if not o then return end

local out = {}
local function emit(s)
  print(s)
  out[#out + 1] = s
end
local function pct(x)
  if x ~= x then return "n/a" end
  return string.format("%.1f", 100 * x)
end
local function num(x, fmt)
  if x ~= x then return "n/a" end
  return string.format(fmt or "%.2f", x)
end
local function mean(xs)
  if #xs == 0 then return 0 / 0 end
  return S.mean(xs)
end
local function table_md(header, rows)
  emit("| " .. table.concat(header, " | ") .. " |")
  local sep = {}
  for i = 1, #header do sep[i] = "---" end
  emit("|" .. table.concat(sep, "|") .. "|")
  for _, r in ipairs(rows) do emit("| " .. table.concat(r, " | ") .. " |") end
  emit("")
end
local cp_opts = { stem = o.stem, denominator = o.denominator }

-- A system's cap (--top-k NAME=K, else --top-k K, else none) and a prediction list under it.
local function cap_of(name) return o.top_k[name] or o.top_k_all end
local function capped(list, k) return k and list:top(k) or list end
local function cap_text(k) return k and tostring(k) or "all" end

-- PRMU shares of the reference keyphrases of the given documents (those with text).
local function gold_prmu(corpus, docs)
  local c, n, with_text = { P = 0, R = 0, M = 0, U = 0 }, 0, 0
  for _, i in ipairs(docs) do
    local d = corpus:doc(i)
    if d.has_text then
      with_text = with_text + 1
      for _, cls in ipairs(d.refs:prmu()) do
        c[cls], n = c[cls] + 1, n + 1
      end
    end
  end
  return c, n, with_text
end

local function gold_name(path)
  return (path:gsub("/+$", ""):match("([^/]+)$")) or path
end

-- ---- Pairs from shared keyphrases -----------------------------------------------------------------------
if o.dataset then
  local function load(pred)
    return kp.load { dataset = o.dataset, predictions = pred, profile = o.profile, source = o.source }
  end
  local gold = load(nil)
  local mined, ms = H.mine_pairs(gold, { theta = o.theta, stem = o.mine_stem })
  -- Identical gold sets (in KP20k, one record twice): counted whether kept or not, so that both totals
  -- are reported.
  local pairs, identical, identical_all = {}, 0, 0
  for _, p in ipairs(mined) do
    if p.shared == p.union then identical_all = identical_all + 1 end
    if p.shared == p.union and not o.keep_identical then
      identical = identical + 1
    else
      pairs[#pairs + 1] = p
    end
  end
  local docs, seen = {}, {}
  for _, p in ipairs(pairs) do
    for _, i in ipairs({ p.a, p.b }) do
      if not seen[i] then seen[i], docs[#docs + 1] = true, i end
    end
  end
  table.sort(docs)
  local g = H.genericity(gold, pairs, { stem = o.mine_stem })

  emit(string.format("## Pairs from shared keyphrases: %s, Jaccard >= %g (profile %s; gold compared as %s; " ..
    "CP %s, denominator %s)\n", o.dataset, o.theta, o.profile, o.mine_stem and "stem keys" or "normalized strings",
    o.stem and "stemmed" or "not stemmed", o.denominator))
  emit(string.format("%d pairs from %d unique documents (%d documents with keyphrases; exact join: %d candidates " ..
    "verified, %d pairs found; %s).\n", #pairs, #docs, ms.sets, ms.candidates, #mined,
    o.keep_identical and (identical_all .. " pairs with identical gold sets kept") or
      (identical .. " pairs with identical gold sets left out")))

  -- Table 1's row: the PRMU distribution of the gold keyphrases of the pair documents.
  local c, n, with_text = gold_prmu(gold, docs)
  emit("Gold keyphrases of the pair documents (Table 1 layout; PRMU over the " .. with_text ..
       " pair documents that have source text):\n")
  table_md({ "Dataset", "Version", "#Documents", "%P", "%R", "%M", "%U" },
    { { gold_name(o.dataset), string.format("CP %g%%", 100 * o.theta), tostring(#docs),
        pct(c.P / n), pct(c.R / n), pct(c.M / n), pct(c.U / n) } })

  emit("Genericity of the shared keyphrases (section 4.3):\n")
  table_md({ "keyphrases", "distinct", "mean document frequency", "mean length (words)" }, {
    { "whole gold of the dataset", tostring(g.collection.distinct), num(g.collection.mean_df),
      num(g.collection.mean_words) },
    { "shared by a pair", tostring(g.shared.distinct), num(g.shared.mean_df), num(g.shared.mean_words) },
  })

  -- Table 3: CP per system, plus the per-system statistics of item 9.
  local rows, extra = {}, {}
  for _, sys in ipairs(o.systems) do
    local corpus = load(sys.path)
    local k = cap_of(sys.name)
    local hs, rs = {}, {}
    for _, p in ipairs(pairs) do
      local h, r = H.cp(capped(corpus:doc(p.a).preds, k), capped(corpus:doc(p.b).preds, k), cp_opts)
      if h == h then hs[#hs + 1], rs[#rs + 1] = h, r end
    end
    local st = H.system_stats(corpus, docs, { top_k = k })
    local all = H.system_stats(corpus, nil, { top_k = k })
    rows[#rows + 1] = { sys.name, pct(mean(hs)), pct(mean(rs)) }
    extra[#extra + 1] = { sys.name, cap_text(k), tostring(#hs), pct(st.absent_share), tostring(st.preds),
      pct(st.prmu.P), pct(st.prmu.R), pct(st.prmu.M), pct(st.prmu.U), pct(all.absent_share),
      tostring(all.docs_with_text) }
  end
  emit("Homogeneity on the pairs (Table 3 layout; CP in %, mean over pairs):\n")
  table_md({ "Model", "CP Hooper", "CP Rodgers" }, rows)
  emit("Per-system statistics: the cap on each document's predictions (--top-k), % absent (generated) " ..
       "predictions and their PRMU distribution, over the pair documents with source text, and % absent " ..
       "over every document with text:\n")
  table_md({ "Model", "top-k", "pairs", "% Gen. (pairs)", "#preds", "%P", "%R", "%M", "%U", "% Gen. (all)", "docs with text" },
    extra)
end

-- ---- Pairs from reformulations ----------------------------------------------------------------------------
if o.reformulations then
  local text = kp.read(o.reformulations)
  if not text then error("cannot read " .. o.reformulations, 0) end
  local function lines_of(path)
    local t = kp.read(path)
    if not t then error("cannot read " .. path, 0) end
    local ls = {}
    for line in (t:sub(-1) == "\n" and t or t .. "\n"):gmatch("([^\n]*)\n") do ls[#ls + 1] = line end
    return ls
  end
  local base = H.reformulations(text, o.reformulations, { profile = o.profile })
  local kept, wers, rouges = {}, {}, {}
  for i, p in ipairs(base.pairs) do
    if p.keep then
      kept[#kept + 1] = i
      wers[#wers + 1], rouges[#rouges + 1] = p.wer, p.rouge1
    end
  end
  emit(string.format("## Pairs from reformulations: %s (profile %s)\n", o.reformulations, o.profile))
  local prows = {}
  for _, p in ipairs(base.pairs) do
    local why = p.keep and "kept" or ((not p.keyphrases_ok and (p.lost .. " present keyphrase(s) lost") or "") ..
      ((not p.keyphrases_ok and not p.length_ok) and "; " or "") ..
      (not p.length_ok and "word count off by more than 10%" or ""))
    prows[#prows + 1] = { p.id, p.method, tostring(p.words_original), tostring(p.words_reformulation),
      pct(p.wer), pct(p.rouge1), why }
  end
  table_md({ "pair", "method", "words (orig.)", "words (ref.)", "WER %", "ROUGE-1 %", "filter" }, prows)
  emit(string.format("%d of %d pairs pass the filters; on those, mean WER %s %%, mean ROUGE-1 %s %%.\n",
    #kept, #base.pairs, pct(mean(wers)), pct(mean(rouges))))
  local rows = {}
  for _, sys in ipairs(o.reform_systems) do
    local set = H.reformulations(text, o.reformulations, { profile = o.profile,
      predictions_original = lines_of(sys.original), predictions_reformulation = lines_of(sys.reformulation) })
    local k = cap_of(sys.name)
    local hs, rs, rg, gen, total = {}, {}, {}, 0, 0
    for _, i in ipairs(kept) do
      local a, b = capped(set.original:doc(i).preds, k), capped(set.reformulation:doc(i).preds, k)
      local h, r = H.cp(a, b, cp_opts)
      if h == h then
        hs[#hs + 1], rs[#rs + 1], rg[#rg + 1] = h, r, set.pairs[i].rouge1
      end
      for _, list in ipairs({ a, b }) do
        for j = 1, #list do
          total = total + 1
          if not list[j].present then gen = gen + 1 end
        end
      end
    end
    local pr, pp, sr, sp = 0 / 0, 0 / 0, 0 / 0, 0 / 0
    if #hs >= 3 then
      pr, pp = S.pearson(hs, rg)
      sr, sp = S.spearman(hs, rg)
    end
    local star = function(r, p) return num(r) .. ((p == p and p < 0.05) and "*" or "") end
    rows[#rows + 1] = { sys.name, pct(mean(hs)), pct(mean(rs)), pct(gen / total), star(pr, pp), star(sr, sp),
      cap_text(k) }
  end
  if #rows > 0 then
    emit("Homogeneity on the kept reformulation pairs (Table 2 layout; CP in %; Cor. ROUGE = Pearson r " ..
         "of Hooper's CP with the pair's ROUGE-1, * p < 0.05; Spearman alongside):\n")
    table_md({ "Model", "CP Hooper", "CP Rodgers", "% Gen.", "Cor. ROUGE (Pearson)", "Spearman", "top-k" }, rows)
  end
end

if o.out then kp.write(o.out, table.concat(out, "\n") .. "\n") end
