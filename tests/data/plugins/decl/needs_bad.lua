-- kplab-api: 1
return kp.metric {
  name = "needs_bad", version = "1.0.0",
  needs = { "gpu" },
  score = function() return {} end,
}
