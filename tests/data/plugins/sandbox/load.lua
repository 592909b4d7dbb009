-- kplab-api: 1
local f = load("return 1")
