-- kplab-api: 1
local bytes = string.dump(function() end)
