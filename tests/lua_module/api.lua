-- The same script under `kplab run` (kp is the host's script API) and under Debian's stock lua5.4 with
-- `require "kplab"`; tests/lua_module/run_test.sh runs both and compares their output line by line.
-- The assertions are hand-checked facts about examples/tiny (see the comments).
-- Usage: lua5.4 api.lua DATASET_DIR   |   kplab run api.lua DATASET_DIR
local kp = kp or require("kplab")
local dir = arg[1]

-- The API: every function of kp and of its sub-tables, sorted.
local function names(t, prefix, out)
  for k, v in pairs(t) do
    if type(v) == "table" then
      names(v, prefix .. k .. ".", out)
    else
      out[#out + 1] = prefix .. k .. " " .. type(v)
    end
  end
  return out
end
local api = names(kp, "kp.", {})
table.sort(api)
for _, line in ipairs(api) do print(line) end

-- Porter (nltk mode): "running" -> "run"; "scheduler" (-er, m = 2) and "scheduling" (-ing) -> "schedul".
assert(kp.stem("running") == "run")
assert(kp.stem("scheduler") == "schedul" and kp.stem("scheduling") == "schedul")
for _, w in ipairs({ "running", "networks", "generously", "scheduler", "relational" }) do
  print("stem", w, kp.stem(w))
end
print("tokens", table.concat(kp.word_tokenize("Graph neural networks (GNNs) don't scale."), "|"))

local corpus = kp.load { dataset = dir, predictions = dir .. "/predictions.txt" }
print(tostring(corpus), #corpus)
-- hits@5 by hand (exact matching of Porter stems, <peos> dropped):
--  1 scheduler=scheduling, batch jobs, interactive queries | cluster, job length        -> 3
--  2 patient information leaflets, readability formulas, sentence length, readability,
--    health literacy                                                                      -> 3
--  3 graph neural network(s), traffic speed, road network, recurrent unit, spatial convolution -> 2
--  4 soil moisture, low cost radar, scattering model, irrigation planning, remote sensing -> 2
--  5 code review, review comments, open source projects, design comments, (<unk> review / software
--    quality)                                                                              -> 2
local expected = { 3, 3, 2, 2, 2 }
local hits = {}
for i = 1, #corpus do
  local doc = corpus:doc(i)
  local m = doc.preds:match(doc.refs)
  hits[i] = m:hits(5)
  assert(hits[i] == expected[i], "doc " .. i .. ": hits@5 " .. hits[i])
  print("doc", doc.id, #doc.refs, #doc.preds, m:hits(5), m:hits(#doc.preds),
        table.concat(doc.preds:top(3):surfaces(), "; "))
end
-- Mean of 3, 3, 2, 2, 2 = 12 / 5 = 2.4; Spearman of hits@5 against doc order 1..5 (ties averaged):
-- ranks of hits (4.5, 4.5, 2, 2, 2) vs (1..5): rho = -0.8660254037844386 (= -sqrt(3)/2).
-- kp.evaluate scores the corpus with plugins, in the module as under `kplab run`: P@5 micro = 12 / 25.
local r = kp.evaluate(corpus, "exact", { exact = { ks = "5" } })
print("evaluate", r.aggregates["all.p@5.micro"], #r.columns["all.p@5"], r.doc_ids[1])
assert(math.abs(r.aggregates["all.p@5.micro"] - 0.48) < 1e-12)
print("mean", kp.stats.mean(hits))
assert(math.abs(kp.stats.mean(hits) - 2.4) < 1e-12)
local rho = kp.stats.spearman(hits, { 1, 2, 3, 4, 5 })
if type(rho) == "table" then rho = rho.rho or rho.r or rho[1] end
print("spearman", rho)
assert(math.abs(rho + math.sqrt(3) / 2) < 1e-12)

-- Errors are Lua errors naming FILE:LINE.
local ok, err = pcall(kp.load, { dataset = dir, predictions = dir .. "/README.md" })
assert(not ok)
print("error", (err:gsub("^.*/examples/", "examples/")))
