-- kplab-api: 1
local s = ("abc"):upper() .. string.rep("x", 2)
local t = {}
for k, v in pairs(kp) do t[#t + 1] = k end
table.sort(t)
local mt = setmetatable({}, { __index = function(_, k) return k end })
local ok, err = pcall(error, "caught")
assert(not ok and err == "caught")
assert(getmetatable("") == false and getmetatable(kp) == false)
assert(type(kp.log) == "function" and math.floor(2.5) == 2 and utf8.char(72) == "H")
local co = coroutine.wrap(function(a) coroutine.yield(a + 1) end)
assert(co(1) == 2 and select("#", 1, 2) == 2 and tonumber("5") == 5 and rawlen({1}) == 1)
kp.log("ok", s, #t, mt.zz, nil, true)
return s, table.concat(t, ",")
