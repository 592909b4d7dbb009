-- kplab-api: 1
return kp.metric {
  name = "version_missing",
  score = function() return {} end,
}
