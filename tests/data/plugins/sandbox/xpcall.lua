-- kplab-api: 1
local ok, msg = xpcall(function(a, b) error(a .. b) end, function(m) return "handled: " .. m end, "x", "y")
local ok2, r1, r2 = xpcall(function(a) return a, 2 end, error, 1)
return ok, msg, ok2, r1, r2
