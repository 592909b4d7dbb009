-- kplab-api: 1
return kp.metric {
  name = "bigdcg", version = "1",
  score = function() return { ["all.x"] = kp.ideal_dcg(math.maxinteger, math.maxinteger) } end,
}
