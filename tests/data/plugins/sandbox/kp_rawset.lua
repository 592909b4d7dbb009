-- kplab-api: 1
rawset(kp, "x", 1)
