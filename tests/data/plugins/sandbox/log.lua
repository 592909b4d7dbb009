-- kplab-api: 1
kp.log("hello", 42, true)
