-- kplab-api: 1
return kp.metric {
  name = "param_bad", version = "1.0.0",
  params = { k = { 1, 2 } },
  score = function() return {} end,
}
