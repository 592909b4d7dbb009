-- kplab-api: 1
return kp.metric { name = "crlf", version = "1", score = function() return {} end }
