-- kplab-api: 1
local iter, t = pairs(string)
t.upper = nil
