-- kplab-api: 1
kp.x = 1
