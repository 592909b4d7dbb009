-- kplab-api: 1
return kp.metric {
  name = "aggregate_bad", version = "1.0.0",
  score = function() return {} end,
  aggregate = true,
}
