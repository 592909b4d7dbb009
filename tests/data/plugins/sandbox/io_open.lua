-- kplab-api: 1
local f = io.open("/etc/passwd")
