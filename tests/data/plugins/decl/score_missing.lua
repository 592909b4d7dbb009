-- kplab-api: 1
return kp.metric {
  name = "score_missing", version = "1.0.0",
  score = "not a function",
}
