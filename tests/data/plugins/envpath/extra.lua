-- kplab-api: 1
return kp.metric {
  name = "extra", version = "1.0.0",
  score = function(doc, p, ctx) return { x = 1 } end,
}
