-- kplab-api: 1
local n = undefined_thing + 1
