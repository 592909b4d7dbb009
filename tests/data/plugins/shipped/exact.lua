-- kplab-api: 1
-- Shipped fixture: overridden by user/ and envpath/ in plugin_test.cc.
return kp.metric {
  name = "exact", version = "1.0.0",
  score = function(doc, p, ctx) return { f1 = 1 } end,
}
