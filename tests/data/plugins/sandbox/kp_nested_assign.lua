-- kplab-api: 1
kp.text.lower = nil
