-- kplab-api: 3
return kp.metric { name = "future", version = "1", score = function() end }
