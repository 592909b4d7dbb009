-- One request through kp.evaluate, the same under `kplab run` and under lua5.4 with require "kplab"
-- (tests/seam/seam_test.py). Prints "ok RUN_ID" or "error MESSAGE".
-- Usage: evaluate.lua DATASET PREDICTIONS PROFILE METRICS DB [METRIC NAME VALUE]
local kp = kp or require("kplab")
local dataset, predictions, profile, metrics, db, pm, pn, pv = table.unpack(arg)
local ok, corpus = pcall(kp.load, {dataset = dataset, predictions = predictions, profile = profile})
if not ok then
  print("error " .. tostring(corpus))
  return
end
local params = nil
if pm then params = {[pm] = {[pn] = pv}} end
local ok2, r = pcall(kp.evaluate, corpus, metrics, params, {db = db, threads = 1})
if not ok2 then
  print("error " .. tostring(r))
  return
end
print("ok " .. tostring(r.run_id))
