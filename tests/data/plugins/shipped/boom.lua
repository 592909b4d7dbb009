-- kplab-api: 1
-- Fails in a helper at line 5 when scored (plugin_test.cc: ErrorCarriesFileLineAndTraceback).
local function helper(x)
  local y = x * 2
  error("boom: " .. y)
end

return kp.metric {
  name = "boom", version = "0.1.0",
  score = function(doc, p, ctx)
    helper(21)
    return {}
  end,
}
