-- kplab-api: 2
-- Utility of keyphrases for ad-hoc retrieval, as KPEval's retrieval / retrieval_v2 metrics measure it
-- (uclanlp/KPEval metrics/retrieval_metric.py, retrieval_metric_v2.py): every document is indexed with
-- its text expanded by the system's predicted keyphrases; a query written for document i retrieves
-- from that collection (plus extra documents), and the metric asks where document i ranks.
-- The collection, BM25 and the cosine search are native (kp.retrieval, kplab/retrieval.h); what a
-- document's text is, and the formulas of recall@k and MRR@k, are here.

local KS = { 1, 3, 5 }  -- KPEval's configs: RetrievalMetric.ks = [1, 3, 5]

-- The two readings: "kpeval" reproduces KPEval's code, quirks included; "kplab" corrects them
-- (docs/metrics.md, Utility, lists each difference).
local function semantics(p, profile)
  if p.semantics ~= "profile" then return p.semantics end
  return profile.name == "kpeval" and "kpeval" or "kplab"
end

local function modes(p)
  local m = {}
  if p.mode == "sparse" or p.mode == "both" then m[#m + 1] = "sparse" end
  if p.mode == "dense" or p.mode == "both" then
    m[#m + 1] = "dense"
    if p.cross_encoder ~= "" then m[#m + 1] = "rerank" end
  end
  return m
end

-- A document's own text: its title and body tokens as the profile tokenized them, joined by spaces
-- (KPEval: ' '.join(title.split() + context.split()) of the lower-cased source line).
local function doc_text(doc)
  local words = {}
  for _, part in ipairs({ doc.title or {}, doc.body or {} }) do
    for _, w in ipairs(part) do
      if w ~= "" then words[#words + 1] = w end
    end
  end
  return table.concat(words, " ")
end

-- The keyphrases a document is expanded with, joined by " // ". KPEval: every prediction, repeats and
-- empty pieces included (no dedup); kplab: the profile's predictions (filtered and deduplicated), so
-- repeating a keyphrase does not raise its term frequency.
local function doc_keyphrases(doc, sem)
  local list = sem == "kpeval" and doc.preds_with_duplicates or doc.preds
  return table.concat(list:surfaces(), " // ")
end

return kp.metric {
  name = "utility",
  version = "1.0.0",
  doc = [[
Recall@k and MRR@k (k = 1, 3, 5) of ad-hoc retrieval over the documents expanded with the system's
keyphrases: <mode>_recall@k, <mode>_mrr@k (and, per document, <mode>_better and <mode>_ties: the
documents scoring higher than it and the same) for mode sparse (BM25, rank_bm25's BM25Okapi), dense (the
run's embedding model as a bi-encoder, exact cosine search) and rerank (dense, then the first `rerank`
candidates re-scored by a cross-encoder). queries = a file with one query a line, line i written for
document i; documents after the last query are not scored (and, under semantics kpeval, not indexed).
corpus = extra documents (any dataset kplab reads), indexed with their references as keyphrases.
With the target's rank r among its ties: kpeval counts a tie at the top as a hit at k = 1 and
orders ties by document position for k > 1 (KPEval's rule); kplab takes the expectation over every
order of the tied documents (docs/metrics.md).]],
  params = {
    queries = kp.string { default = "", doc = "query file: line i is the query written for document i" },
    corpus = kp.string { default = "", doc = "extra documents (a dataset path, any format kplab reads)" },
    corpus_format = kp.string { default = "", doc = "the extra documents' format (\"\" = detect)" },
    mode = kp.string { default = "sparse", one_of = { "sparse", "dense", "both" }, doc = "BM25, the bi-encoder, or both" },
    version = kp.string {
      default = "v2", one_of = { "v1", "v2" },
      doc = "KPEval's class: v1 (retrieval) indexes the extra documents by their title only, v2 by title and body",
    },
    semantics = kp.string {
      default = "profile", one_of = { "profile", "kpeval", "kplab" },
      doc = "kpeval: KPEval's code as it is; kplab: its quirks corrected; profile: kpeval under profile kpeval",
    },
    k1 = kp.number { default = 1.5, min = 0, doc = "BM25 k1" },
    b = kp.number { default = 0.75, min = 0, max = 1, doc = "BM25 b" },
    epsilon = kp.number { default = 0.25, doc = "rank_bm25's idf floor: a negative idf becomes epsilon x the mean idf" },
    max_seq_length = kp.int { default = 512, min = 1, doc = "tokens the bi-encoder and the cross-encoder read (KPEval: 512)" },
    cross_encoder = kp.string { default = "", doc = "a cross-encoder snapshot directory (BERT with a classification head)" },
    rerank = kp.int { default = 50, min = 1, doc = "dense candidates the cross-encoder re-scores (KPEval: docs_for_rerank)" },
  },
  needs = function(profile, p)
    if p.mode ~= "sparse" then return { "model" } end
    return {}
  end,
  check = function(p)
    if p.queries == "" then return "set the query file: --param utility.queries=FILE" end
    if p.cross_encoder ~= "" and p.mode == "sparse" then
      return "a cross-encoder re-ranks the dense candidates: set utility.mode=dense or both"
    end
  end,
  columns = function(c, p)
    for _, m in ipairs(modes(p)) do
      for _, k in ipairs(KS) do
        c:column(m .. "_recall@" .. k, "mean")
        c:column(m .. "_mrr@" .. k, "mean")
      end
      -- Per document only: where the document stands (documents scoring higher; tied with it).
      c:column(m .. "_better")
      c:column(m .. "_ties")
    end
  end,
  -- Once per run: the collection, every query's retrieval, and where each query's document stands.
  prepare = function(corpus, p, ctx)
    local sem = semantics(p, ctx.profile)
    local queries = kp.retrieval.read_queries(p.queries)
    if #queries > #corpus then
      error(string.format("%s: %d queries for %d documents (expected at most one query per document: line i "
        .. "is the query written for document i)", p.queries, #queries, #corpus), 0)
    end
    local col = kp.retrieval.collection()
    -- KPEval keeps only the documents that have a query; kplab indexes every evaluated document.
    local indexed = sem == "kpeval" and #queries or #corpus
    for i = 1, indexed do
      local doc = corpus:doc(i)
      col:add(doc_keyphrases(doc, sem), doc_text(doc))
    end
    if p.corpus ~= "" then
      -- KPEval joins the extra documents' keyphrases with "//" (line.replace(';', '//')), fusing the
      -- words on either side into one BM25 token; kplab joins them as the documents' own.
      col:add_dataset(p.corpus, {
        title_only = p.version == "v1",
        keyphrase_sep = sem == "kpeval" and "//" or " // ",
        strip_keyphrases = sem ~= "kpeval",
        lowercase = sem ~= "kpeval",
        format = p.corpus_format,
      })
    end
    local out = { n_queries = #queries }
    local m = modes(p)
    for _, mode in ipairs(m) do
      if mode == "sparse" then out.sparse = col:bm25(queries, { k1 = p.k1, b = p.b, epsilon = p.epsilon }) end
    end
    if p.mode ~= "sparse" then
      local d = col:dense(queries, {
        max_seq_length = p.max_seq_length,
        -- KPEval concatenates the keyphrases and the text with nothing between them (the last keyphrase
        -- and the first word of the title become one word) and re-ranks on the text alone.
        join = sem == "kpeval" and "" or " ",
        cross_encoder = p.cross_encoder ~= "" and p.cross_encoder or nil,
        rerank = p.rerank,
        rerank_keyphrases = sem ~= "kpeval",
        -- KPEval sets the cross-encoder's max_seq_length, which CrossEncoder does not read: it cuts
        -- pairs at its tokenizer's model_max_length (0 here).
        rerank_max_length = sem == "kpeval" and 0 or p.max_seq_length,
      })
      out.dense, out.rerank = d.dense, d.rerank
    end
    out.tie_rule = sem
    return out
  end,
  -- recall@k and MRR@k of the document whose query this is, from where it stands: `better` documents
  -- score higher, `ties` the same (`before` of those come earlier in the collection).
  score = function(doc, p, ctx, out)
    local prep = ctx.prepared
    local i = doc.index
    if i > prep.n_queries then return end  -- no query was written for this document
    for _, mode in ipairs(modes(p)) do
      local pl = prep[mode]
      local better, ties, before = pl.better[i], pl.ties[i], pl.before[i]
      if better ~= math.huge then  -- a document the re-ranker never saw has no place to report
        out[mode .. "_better"], out[mode .. "_ties"] = better, ties
      end
      for _, k in ipairs(KS) do
        local recall, mrr
        if prep.tie_rule == "kpeval" then
          -- KPEval sorts its top max(ks) hits by score, ties in collection order (kplab's reading of
          -- numpy's argpartition + a stable sort; docs/metrics.md), and at k = 1 counts any hit that
          -- ties with the first as found, with MRR@1 = recall@1.
          local pos = better + before + 1
          -- KPEval's hit lists: the top max(ks) documents, or every candidate the cross-encoder scored.
          local in_hits = mode == "rerank" or pos <= KS[#KS]
          if k == 1 then
            recall = (in_hits and better == 0) and 1 or 0
            mrr = recall
          else
            recall = pos <= k and 1 or 0
            mrr = pos <= k and 1 / pos or 0
          end
        else
          -- Tie-aware (McSherry & Najork, ECIR 2008): the mean over every order of the tied documents,
          -- the target's rank uniform on better + 1 .. better + ties + 1.
          local n = ties + 1
          recall = math.min(math.max((k - better) / n, 0), 1)
          local s = 0
          for r = better + 1, math.min(better + n, k) do s = s + 1 / r end
          mrr = s / n
        end
        out[mode .. "_recall@" .. k] = recall
        out[mode .. "_mrr@" .. k] = mrr
      end
    end
  end,
}
