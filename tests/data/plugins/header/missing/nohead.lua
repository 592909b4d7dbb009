return kp.metric { name = "nohead", version = "1", score = function() end }
