-- kplab-api: 1
local ok, err = pcall(function() while true do end end)
return ok, err
