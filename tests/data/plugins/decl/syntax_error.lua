-- kplab-api: 1
return kp.metric {
  name = "syntax_error" version = "1.0.0",
}
