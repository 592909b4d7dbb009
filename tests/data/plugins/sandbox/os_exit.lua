-- kplab-api: 1
os.exit(1)
