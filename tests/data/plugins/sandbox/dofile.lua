-- kplab-api: 1
dofile("/etc/passwd")
