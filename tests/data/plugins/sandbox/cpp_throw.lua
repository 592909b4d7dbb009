-- kplab-api: 1
kp.throw_cpp()
