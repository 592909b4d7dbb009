-- kplab-api: 1
-- Allocates far more than a 1 MiB cap in every score call.
return kp.metric {
  name = "hog", version = "1",
  score = function()
    local t = {}
    for i = 1, 1000000 do t[i] = i end
    return { ["all.n"] = #t }
  end,
}
