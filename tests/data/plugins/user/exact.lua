-- kplab-api: 1
return kp.metric {
  name = "exact", version = "2.0.0",
  score = function(doc, p, ctx) return { f1 = 2 } end,
}
