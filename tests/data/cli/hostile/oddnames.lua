-- kplab-api: 1
-- Names with huge numbers, an infinite value, and an aggregate whose table has a hostile metatable.
return kp.metric {
  name = "oddnames", version = "1",
  score = function()
    return { ["all.x@99999999999999999999"] = 1, ["all.x@5"] = 2, ["all.inf"] = 1 / 0 }
  end,
  aggregate = function(cols)
    local v = setmetatable({}, { __index = function() error("must not run") end })
    return { ["all.x@5"] = cols["all.x@5"]:mean(), ["all.inf"] = 1 / 0, ["all.meta"] = v }
  end,
}
