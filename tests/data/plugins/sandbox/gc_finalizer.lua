-- kplab-api: 1
local t = setmetatable({}, { __gc = function() while true do end end })
