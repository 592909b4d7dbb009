-- kplab-api: 1
-- Fails at line 5 while scoring the first document: a script error every front-end must report with
-- this file:line and record as a failed run (tests/seam/seam_test.py).
local function helper(x)
  error("kaput " .. x)
end

return kp.metric {
  name = "fails", version = "1",
  score = function(doc, p, ctx)
    helper(7)
    return {}
  end,
}
