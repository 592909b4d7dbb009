-- kplab-api: 1
local t = {}
local n = t.missing.field
return kp.metric { name = "top_error", version = "1.0.0", score = function() return {} end }
