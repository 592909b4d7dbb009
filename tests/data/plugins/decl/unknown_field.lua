-- kplab-api: 1
return kp.metric {
  name = "unknown_field", version = "1.0.0",
  scroe = function() return {} end,
}
