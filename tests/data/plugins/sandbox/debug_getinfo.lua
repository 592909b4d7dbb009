-- kplab-api: 1
local info = debug.getinfo(1)
