-- kplab-api: 1
return kp.metric {
  name = "foo", version = "1.0.0",
  score = function() return {} end,
}
