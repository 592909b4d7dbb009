-- kplab-api: 1
return "returns_string"
