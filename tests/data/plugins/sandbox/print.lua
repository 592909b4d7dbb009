-- kplab-api: 1
print("hello")
