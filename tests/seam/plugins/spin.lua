-- kplab-api: 1
-- Never returns from score: the instruction budget (a limit) stops it; the run is recorded as failed
-- (tests/seam/seam_test.py).
return kp.metric {
  name = "spin", version = "1",
  score = function(doc, p, ctx)
    local n = 0
    while true do n = n + 1 end
  end,
}
