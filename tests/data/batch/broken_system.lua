-- kplab-api: 1
-- Fails on the first document of a run whose system is "broken" and scores 1 elsewhere: one failing
-- file among many in a batch (tests/host/batch_jobs_test.cc).
return kp.metric {
  name = "broken_system",
  version = "0.1.0",
  score = function(doc, params, ctx)
    if ctx.system == "broken" then
      error("the broken system cannot be scored (document " .. doc.id .. ")")
    end
    return { ["all.one"] = 1 }
  end,
}
