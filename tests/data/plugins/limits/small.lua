-- kplab-api: 1
local n = 0
for i = 1, 1000 do n = n + i end
return n
