-- kplab-api: 2
return kp.metric { name = "future", version = "1", score = function() end }
