-- kplab-api: 1
collectgarbage("count")
