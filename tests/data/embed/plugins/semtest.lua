-- kplab-api: 1
-- Exercises the semantic primitives on tests/data/embed/sem with the hand-made model tiny.txt; the
-- expected values are worked out in tests/host/embed_test.cc.
return kp.metric {
  name = "semtest",
  version = "1.0.0",
  needs = { "embeddings", "embeddings:stems", "neighbors" },
  score = function(doc, p, ctx, out)
    local S = ctx.cosine(doc.preds, doc.refs)            -- 4 x 2
    local rows, cols = S:size()
    out.rows, out.cols = rows, cols
    out.gb_nn, out.gb_dl = S:get(1, 1), S:get(1, 2)
    out.learning_dl = S:get(3, 2)
    out.oov_nn = S:get(4, 1)
    local best, at = S:row_max(1)
    out.row1_max, out.row1_argmax = best, at
    out.row1_top2_mean = S:row_topk_mean(1, 2)
    local total, pairs = S:assign()
    out.assign_total = total
    out.assign_row1, out.assign_row2 = pairs[1], pairs[2]
    out.assign_row3, out.assign_row4 = pairs[3], pairs[4]
    out.self_mean_upper = ctx.cosine(doc.refs):mean_upper()
    out.stems_nn_dl = ctx.cosine(doc.refs, doc.refs, "stems"):get(1, 2)
    local v = ctx.embedding("graph based")
    out.emb1, out.emb2, out.emb3 = v[1], v[2], v[3]
    out.emb_oov_is_nil = ctx.embedding("quantum chromodynamics") == nil and 1 or 0
    out.strings = ctx.cosine({ "deep" }, { "neural network" }):get(1, 1)
    local nb = kp.neighbors("neural network", 2)
    out.n_neighbors = #nb
    out.nb1_is_deep_learn = nb[1].phrase == "deep learn" and 1 or 0
    out.nb1_cos, out.nb2_cos = nb[1].cosine, nb[2].cosine
    out.nb2_is_dl = nb[2].phrase == "deep learning" and 1 or 0
    out.dims = ctx.model.dims
    return out
  end,
}
