-- kplab-api: 1
local socket = require("socket")
