-- kplab-api: 1
counter = 0
