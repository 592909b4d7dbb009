-- kplab-api: 1
math.pi = 3
