-- kplab-api: 1
local function spin() while true do end end
while true do xpcall(spin, function(m) while true do end end) end
