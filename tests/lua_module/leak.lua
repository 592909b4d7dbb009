-- 100,000 failing calls into the module from the stock (C) lua5.4 must not leak: an argument error
-- raised while a binding holds C++ objects (here the cut-off vector and the values of alpha_ndcg) must
-- unwind them before Lua's longjmp. Prints the growth of the resident set and exits 1 above 5 MB.
-- Usage: lua5.4 leak.lua DATASET_DIR   (with the module on LUA_CPATH)
local kp = require "kplab"
local corpus = kp.load { dataset = arg[1], predictions = arg[1] .. "/predictions.txt" }
local doc = corpus:doc(1)
local preds, refs = doc.preds, doc.refs

local function rss_kb()
  local f = assert(io.open("/proc/self/status"))
  local s = f:read("a")
  f:close()
  return tonumber(s:match("VmRSS:%s+(%d+)"))
end

-- Each call fails after the binding built C++ objects: a bad alpha (luaL_optnumber), a bad kind
-- (luaL_argerror after the values are computed), a bad cut-off inside the table (luaL_checkinteger).
-- 64 cut-offs: a leak would be about 1 KB a call, 100 MB in all.
local ks = {}
for k = 1, 64 do ks[k] = k end
local bad_ks = { table.unpack(ks) }
bad_ks[65] = "ten"
local calls = {
  function() return preds:alpha_ndcg(refs, ks, "x") end,
  function() return preds:alpha_ndcg(refs, ks, 0.5, "bogus") end,
  function() return preds:alpha_ndcg(refs, bad_ks) end,
}
for _, f in ipairs(calls) do assert(not pcall(f), "the call was expected to fail") end
for i = 1, 3000 do pcall(calls[i % 3 + 1]) end
collectgarbage()
collectgarbage()
local before = rss_kb()
for i = 1, 100000 do pcall(calls[i % 3 + 1]) end
collectgarbage()
collectgarbage()
local grown = (rss_kb() - before) / 1024
print(string.format("100000 failing calls: resident set grew %.2f MB", grown))
local ok, msg = pcall(calls[2])
print(msg)
if grown >= 5 then os.exit(1) end
