-- kplab-api: 1
getmetatable("").__index = { upper = function() return "pwned" end }
