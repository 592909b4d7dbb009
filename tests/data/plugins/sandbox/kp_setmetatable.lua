-- kplab-api: 1
setmetatable(kp, {})
