-- kplab-api: 1
while true do end
