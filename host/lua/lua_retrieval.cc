// kp.retrieval: the native half of the utility metric (plugins/utility.lua; docs/metrics.md, Utility).
// The plugin decides what a document's text is and how keyphrases join it, and owns the formulas of
// recall@k and MRR@k; these functions read the user's files, hold the collection in C++ memory and
// run the loops (tokenizing, BM25, cosine search), returning per query where its target document
// stands (kplab/retrieval.h, Placement).
//
//   kp.retrieval.read_queries(path) -> {q1, q2, ...}       one query a line (Python-stripped)
//   kp.retrieval.collection() -> Collection
//   col:add(keyphrases, text) -> n                          one document (its two parts)
//   col:add_dataset(path, opts) -> count                    every document of a dataset file or folder
//   col:bm25(queries, opts) -> {better=, ties=, before=}    query i is written for document i
//   col:dense(queries, opts) -> {dense = {...}, rerank = {...}?}   the run's model (needs = {"model"})
//   #col
//
// Cost bounds charged to the plugin's budget (sandbox.h) are listed with each function.
#include <algorithm>
#include <climits>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "bindings.h"
#include "kplab/embedding_plan.h"
#include "kplab/file_gate.h"
#include "kplab/io.h"
#include "kplab/retrieval.h"
#include "kplab/text.h"
#include "kplab/transformer.h"
#include "lua_util.h"

namespace kplab::host {

namespace {

constexpr const char* kCollectionMeta = "kplab.RetrievalCollection";

// One document: the keyphrases it is expanded with and its own text, kept apart because KPEval
// tokenizes them apart (BM25) and joins them only for the bi-encoder.
struct CollectionUd {
  std::vector<std::string> keyphrases, text;
  std::vector<HeldMemory> held;  // the strings' bytes, counted in the VM's memory cap
};

CollectionUd* CheckCollection(lua_State* L, int i) { return Check<CollectionUd>(L, i, kCollectionMeta); }

void Fail(lua_State* L, const char* fn, const std::string& message) {
  luaL_error(L, "%s: %s", fn, message.c_str());
}
using Opt = OptionReader<&Fail>;

// Plugins read only what the user named as one of their string parameters, while prepare runs (the
// file gate, kplab/file_gate.h, under the runner's plugin grants); refused here with the function's name.
void CheckReadable(lua_State* L, const std::string& path, const char* fn) {
  if (Status st = GateFile(path, FileAccess::kRead); !st.ok()) luaL_error(L, "%s: %s", fn, st.message().c_str());
}

// Reads a file the user named, refused by size before it is read when it could not fit the memory cap.
std::string ReadNamedFile(lua_State* L, const std::string& path, const char* fn, std::string_view expected) {
  CheckReadable(L, path, fn);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec) ReserveNative(L, 2.0 * static_cast<double>(size), fn);
  Result<std::string> text = ReadRegularFile(path, expected);
  if (!text) luaL_error(L, "%s: %s", fn, text.error().message.c_str());
  ChargeNative(L, static_cast<double>(text->size()));
  return *std::move(text);
}

// kp.retrieval.read_queries(path) -> array of strings: line i of the file (split on "\n", a final
// newline ends the last line, "\r\n" read as "\n"), stripped as Python's str.strip(), one per line.
// Errors: "PATH:LINE: invalid UTF-8 (expected one query a line, UTF-8 text)"; an empty file.
// Cost: one step per byte; memory twice the file's size while reading.
int ReadQueries(lua_State* L) {
  const std::string path = luaL_checkstring(L, 1);
  constexpr const char* kFn = "kp.retrieval.read_queries";
  const std::string text = ReadNamedFile(L, path, kFn, "one query a line, UTF-8 text");
  if (text.empty()) return luaL_error(L, "%s: %s: empty file (expected one query a line)", kFn, path.c_str());
  std::vector<std::string_view> lines = SplitOn(text, "\n");
  if (!lines.empty() && lines.back().empty()) lines.pop_back();  // the final newline
  lua_createtable(L, static_cast<int>(std::min<std::size_t>(lines.size(), INT_MAX)), 0);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (!ValidUtf8(line)) {
      return luaL_error(L, "%s: %s:%d: invalid UTF-8 (expected one query a line, UTF-8 text)", kFn, path.c_str(),
                        static_cast<int>(i + 1));
    }
    line = Strip(line);
    lua_pushlstring(L, line.data(), line.size());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

// kp.retrieval.collection() -> an empty Collection. Cost: O(1).
int NewCollection(lua_State* L) {
  NewUserdata<CollectionUd>(L, kCollectionMeta);
  return 1;
}

void AddDocument(lua_State* L, CollectionUd* c, std::string keyphrases, std::string text) {
  const std::size_t bytes = keyphrases.size() + text.size() + 2 * sizeof(std::string);
  c->held.push_back(HoldNative(L, bytes, "the retrieval collection"));
  c->keyphrases.push_back(std::move(keyphrases));
  c->text.push_back(std::move(text));
}

// col:add(keyphrases, text) -> the document's index (1-based). Cost: one step per byte; the bytes are
// held in the memory cap while the collection lives.
int ColAdd(lua_State* L) {
  CollectionUd* c = CheckCollection(L, 1);
  // Arguments #1 and #2 of the method (the collection is #0 to the script).
  std::string kps(CheckUtf8Arg(L, 2, "col:add", "argument #1"));
  std::string text(CheckUtf8Arg(L, 3, "col:add", "argument #2"));
  ChargeNative(L, static_cast<double>(kps.size() + text.size() + 1));
  AddDocument(L, c, std::move(kps), std::move(text));
  lua_pushinteger(L, static_cast<lua_Integer>(c->text.size()));
  return 1;
}

// Python's str.strip() of every piece, empty ones dropped, when `strip`; else the pieces as they are.
std::string JoinPieces(const std::vector<std::vector<std::string>>& refs, std::string_view sep, bool strip) {
  std::string out;
  bool first = true;
  for (const auto& alternatives : refs) {
    std::string_view piece = alternatives.empty() ? std::string_view() : std::string_view(alternatives.front());
    if (strip) {
      piece = Strip(piece);
      if (piece.empty()) continue;
    }
    if (!first) out += sep;
    out += piece;
    first = false;
  }
  return out;
}

// col:add_dataset(path, {title_only = false, keyphrase_sep = " // ", strip_keyphrases = true,
// lowercase = false, format = ""}) -> documents added. Each document of the dataset (any format kplab
// reads, docs/formats.md) becomes keyphrases = its references' pieces joined by keyphrase_sep (stripped
// and non-empty with strip_keyphrases, else exactly the file's pieces, the whole then stripped as
// KPEval's line.strip()), text = the title, or the title, a space and the body. Cost: one step per
// byte of the files; the kept strings are held in the memory cap.
int ColAddDataset(lua_State* L) {
  CollectionUd* c = CheckCollection(L, 1);
  const std::string path = luaL_checkstring(L, 2);
  constexpr const char* kFn = "col:add_dataset";
  const bool title_only = Opt::Bool(L, 3, kFn, "title_only", false);
  const std::string sep = Opt::String(L, 3, kFn, "keyphrase_sep", " // ");
  const bool strip = Opt::Bool(L, 3, kFn, "strip_keyphrases", true);
  const bool lowercase = Opt::Bool(L, 3, kFn, "lowercase", false);
  DatasetOptions options;
  options.format = Opt::String(L, 3, kFn, "format", "");
  if (Status st = GateFile(path, FileAccess::kRead); !st.ok()) {
    luaL_error(L, "kp.retrieval (col:add_dataset): %s", st.message().c_str());
  }
  {
    // Refused by size before the importer reads: every file under the path, twice (bytes and strings).
    std::error_code ec;
    double bytes = 0;
    if (std::filesystem::is_directory(path, ec)) {
      // Metered per entry (a parameter naming "/" walks until the plugin's limits stop it), and links
      // are not followed: only what lies under the granted directory is looked at.
      for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
           !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        ChargeNative(L, 64);
        if (it->symlink_status(ec).type() == std::filesystem::file_type::regular) {
          bytes += static_cast<double>(it->file_size(ec));
        }
      }
    } else {
      const auto size = std::filesystem::file_size(path, ec);
      if (!ec) bytes = static_cast<double>(size);
    }
    ReserveNative(L, 3 * bytes, kFn);
    ChargeNative(L, bytes);
  }
  Result<RawDataset> ds = ImportDataset(path, options);
  if (!ds) return luaL_error(L, "%s: %s", kFn, ds.error().message.c_str());
  std::size_t added = 0;
  for (const RawDoc& d : ds->docs) {
    if (!d.has_text) {
      return luaL_error(L, "%s: %s: document '%s' has no text (expected a dataset with its documents' text, not "
                        "references only)", kFn, path.c_str(), d.id.c_str());
    }
    std::string kps = JoinPieces(d.refs, sep, strip);
    if (!strip) kps = std::string(Strip(kps));
    std::string text = title_only ? d.title : d.title + " " + d.body;
    if (!ValidUtf8(kps) || !ValidUtf8(text)) {
      return luaL_error(L, "%s: %s: document '%s' is not valid UTF-8", kFn, path.c_str(), d.id.c_str());
    }
    if (lowercase) {
      kps = Lower(kps);
      text = Lower(text);
    }
    AddDocument(L, c, std::move(kps), std::move(text));
    ++added;
  }
  lua_pushinteger(L, static_cast<lua_Integer>(added));
  return 1;
}

// The strings of the array at idx (each valid UTF-8), at most `most` of them. [-0, +0]
std::vector<std::string> CheckStrings(lua_State* L, int idx, const char* fn) {
  luaL_checktype(L, idx, LUA_TTABLE);
  const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, idx));
  ReserveNative(L, static_cast<double>(n) * sizeof(std::string), fn);
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(n));
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, idx, i);
    std::size_t len = 0;
    const char* s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : nullptr;
    if (s == nullptr) luaL_error(L, "%s: queries[%d] is not a string", fn, static_cast<int>(i));
    if (!ValidUtf8({s, len})) luaL_error(L, "%s: queries[%d] is not valid UTF-8", fn, static_cast<int>(i));
    out.emplace_back(s, len);
    lua_pop(L, 1);
  }
  return out;
}

// Pushes {better = {...}, ties = {...}, before = {...}}, one entry per query; a negative count (a target
// a stage did not retrieve, outside a re-ranker's candidates) as math.huge. [-0, +1]
void PushPlacements(lua_State* L, const std::vector<retrieval::Placement>& places) {
  using P = retrieval::Placement;
  struct Field {
    const char* name;
    std::int64_t P::*member;
  };
  static constexpr Field kFields[] = {{"better", &P::better}, {"ties", &P::ties}, {"before", &P::ties_before}};
  lua_createtable(L, 0, 3);
  const int n = static_cast<int>(places.size());
  for (const Field& f : kFields) {
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; ++i) {
      const std::int64_t v = places[static_cast<std::size_t>(i)].*f.member;
      if (v < 0) {
        lua_pushnumber(L, HUGE_VAL);
      } else {
        lua_pushinteger(L, static_cast<lua_Integer>(v));
      }
      lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, f.name);
  }
}

void CheckQueriesFit(lua_State* L, const CollectionUd& c, std::size_t queries, const char* fn) {
  if (queries > c.text.size()) {
    luaL_error(L, "%s: %d queries for a collection of %d documents (query i is written for document i)", fn,
               static_cast<int>(std::min<std::size_t>(queries, INT_MAX)),
               static_cast<int>(std::min<std::size_t>(c.text.size(), INT_MAX)));
  }
}

// col:bm25(queries, {k1 = 1.5, b = 0.75, epsilon = 0.25}) -> placements of document i for query i.
// Documents are tokenized with KPEval's tokenizer, keyphrases and text apart (retrieval.h). Cost: one
// step per byte tokenized and per token indexed, then per posting visited and per document a query
// touches; memory: the index (~3 words per distinct term per document) while it is built.
int ColBm25(lua_State* L) {
  CollectionUd* c = CheckCollection(L, 1);
  constexpr const char* kFn = "col:bm25";
  const std::vector<std::string> queries = CheckStrings(L, 2, kFn);
  retrieval::Bm25Options opt;
  opt.k1 = Opt::Number(L, 3, kFn, "k1", opt.k1);
  opt.b = Opt::Number(L, 3, kFn, "b", opt.b);
  opt.epsilon = Opt::Number(L, 3, kFn, "epsilon", opt.epsilon);
  if (!std::isfinite(opt.k1) || opt.k1 < 0 || !std::isfinite(opt.b) || opt.b < 0 || opt.b > 1 ||
      !std::isfinite(opt.epsilon)) {
    return luaL_error(L, "%s: expected k1 >= 0, 0 <= b <= 1 and a finite epsilon", kFn);
  }
  CheckQueriesFit(L, *c, queries.size(), kFn);
  if (c->text.empty()) return luaL_error(L, "%s: the collection is empty", kFn);
  double bytes = 0;
  for (std::size_t d = 0; d < c->text.size(); ++d) bytes += static_cast<double>(c->text[d].size() + c->keyphrases[d].size());
  // Tokens (at most one per two bytes) as strings, then the index: reserved before anything is built.
  ReserveNative(L, bytes * 2 + static_cast<double>(c->text.size()) * 64, kFn);
  ChargeNative(L, bytes);
  std::vector<std::vector<std::string>> docs(c->text.size());
  for (std::size_t d = 0; d < docs.size(); ++d) {
    retrieval::KpevalTokens(c->keyphrases[d], docs[d]);  // KPEval: tgt_tokens + src_tokens
    retrieval::KpevalTokens(c->text[d], docs[d]);
  }
  const retrieval::Meter meter = [L](double steps) { ChargeNative(L, steps); };
  Result<retrieval::Bm25Index> ix = retrieval::Bm25Index::Build(docs, opt, meter);
  if (!ix) return luaL_error(L, "%s: %s", kFn, ix.error().message.c_str());
  docs.clear();
  docs.shrink_to_fit();
  std::vector<double> acc(ix->size(), 0.0);
  std::vector<std::uint32_t> touched;
  std::vector<std::string> q;
  std::vector<retrieval::Placement> places(queries.size());
  for (std::size_t i = 0; i < queries.size(); ++i) {
    q.clear();
    retrieval::KpevalTokens(queries[i], q);
    touched.clear();
    ix->ScoreSparse(q, acc, touched, meter);
    places[i] = retrieval::PlaceSparse(acc, touched, ix->size(), i);
    ChargeNative(L, static_cast<double>(queries[i].size() + touched.size() + 1));
    for (std::uint32_t d : touched) acc[d] = 0.0;
  }
  PushPlacements(L, places);
  return 1;
}

// Embeds texts with the run's model under a token limit, in batches with the deadline checked between
// them; the vectors (rows x dims floats) are counted in the memory cap by the caller.
std::vector<float> EmbedAll(lua_State* L, const EmbeddingSpace& s, const std::vector<std::string_view>& texts,
                            int max_tokens, const char* fn) {
  constexpr std::size_t kBatch = 32;
  const std::size_t d = static_cast<std::size_t>(s.dims);
  std::vector<float> vecs(texts.size() * d, 0.0f);
  std::vector<std::uint8_t> has(texts.size(), 0);
  for (std::size_t start = 0; start < texts.size(); start += kBatch) {
    const std::size_t end = std::min(texts.size(), start + kBatch);
    const std::vector<std::string_view> batch(texts.begin() + static_cast<std::ptrdiff_t>(start),
                                              texts.begin() + static_cast<std::ptrdiff_t>(end));
    double bytes = 0;
    for (std::string_view t : batch) bytes += static_cast<double>(t.size() + 1);
    ChargeNative(L, bytes);
    if (Status st = s.embedder->EmbedLimited(batch, max_tokens, vecs.data() + start * d, has.data() + start); !st.ok()) {
      luaL_error(L, "%s: model '%s': %s", fn, s.model.name.c_str(), st.message().c_str());
    }
    CheckNative(L, bytes);
  }
  return vecs;
}

// The cross-encoder named by opts.cross_encoder (a snapshot directory the user set as a parameter), or
// null without one. Its weights are held in the memory cap while the call runs.
std::unique_ptr<TransformerModel> LoadCrossEncoder(lua_State* L, int opts, const char* fn) {
  const std::string path = Opt::String(L, opts, fn, "cross_encoder", "");
  if (path.empty()) return nullptr;
  CheckReadable(L, path, "kp.retrieval (col:dense's cross_encoder)");
  std::error_code ec;
  const auto size = std::filesystem::file_size(std::filesystem::path(path) / "model.safetensors", ec);
  if (!ec) ReserveNative(L, 2.0 * static_cast<double>(size), fn);
  Result<std::unique_ptr<TransformerModel>> m = TransformerModel::Load(path);
  if (!m) luaL_error(L, "%s: cross_encoder: %s", fn, m.error().message.c_str());
  if ((*m)->num_labels() != 1) {
    luaL_error(L, "%s: cross_encoder %s: %s", fn, path.c_str(),
               (*m)->num_labels() == 0 ? "has no classification head (expected a BertForSequenceClassification "
                                         "checkpoint with num_labels 1: pooler and classifier weights)"
                                       : "has more than one label (sentence-transformers' CrossEncoder scores with "
                                         "one: num_labels 1)");
  }
  return std::move(m).value();
}

// The target's placement after the cross-encoder re-scores the first `pool` documents by dense score
// (highest first, ties by position): among those, ties ordered as the dense ranking ordered them (a
// stable sort of the candidates, as KPEval's). A target outside the candidates is not retrieved
// (better = -1). Each candidate is scored as (query, text) or, with `join`, (query, keyphrases + join +
// text). Cost: one step per byte of the pairs; the deadline is checked after each query.
retrieval::Placement Rerank(lua_State* L, const TransformerModel& cross, const CollectionUd& c, const std::string& query,
                            const std::vector<double>& dense, std::size_t target, std::size_t pool,
                            const std::optional<std::string>& join, int max_tokens) {
  const std::vector<std::size_t> top = retrieval::TopN(dense, pool);
  if (std::find(top.begin(), top.end(), target) == top.end()) return {-1, 0, 0};
  std::vector<std::string> texts;
  texts.reserve(top.size());
  double bytes = 0;
  for (std::size_t d : top) {
    texts.push_back(join ? c.keyphrases[d] + *join + c.text[d] : c.text[d]);
    bytes += static_cast<double>(query.size() + texts.back().size());
  }
  ChargeNative(L, bytes);
  std::vector<std::pair<std::string_view, std::string_view>> pairs;
  for (const std::string& t : texts) pairs.emplace_back(query, t);
  Result<std::vector<float>> got = cross.ScorePairs(pairs, max_tokens);
  if (!got) luaL_error(L, "col:dense: cross_encoder: %s", got.error().message.c_str());
  CheckNative(L, bytes);
  // Scores by position in the candidate list; the target's position there decides the order of ties.
  std::vector<double> by_pos(got->begin(), got->end());
  std::vector<std::size_t> positions(top.size());
  std::size_t at = 0;
  for (std::size_t k = 0; k < top.size(); ++k) {
    positions[k] = k;
    if (top[k] == target) at = k;
  }
  return retrieval::PlaceAmong(by_pos, positions, at);
}

// col:dense(queries, {max_seq_length = 512, join = " ", cross_encoder = DIR, rerank = 50,
// rerank_keyphrases = true, rerank_max_length = max_seq_length}) -> {dense = placements [, rerank = placements]} for query i and document
// i, by the run's embedding model (the plugin declares needs = {"model"}): each document embedded as
// keyphrases .. join .. text and each query as it is, both cut to max_seq_length tokens (transformers),
// scored by cosine; with a cross-encoder, the first `rerank` documents re-scored (Rerank). Cost: one step per byte embedded (the network's time is bounded by
// the call's deadline, checked between batches of 32 texts), then documents x (dims / 16 + 1) steps per
// query; memory: (documents + queries) x dims floats.
int ColDense(lua_State* L) {
  CollectionUd* c = CheckCollection(L, 1);
  constexpr const char* kFn = "col:dense";
  const std::vector<std::string> queries = CheckStrings(L, 2, kFn);
  const lua_Integer max_tokens = Opt::Integer(L, 3, kFn, "max_seq_length", 512);
  const std::string join = Opt::String(L, 3, kFn, "join", " ");
  const EmbeddingSpace* s = RunEmbeddingSpace(L);
  if (s == nullptr) return luaL_error(L, "%s needs the run's model: declare needs = {\"model\"}", kFn);
  if (max_tokens < 3 || max_tokens > INT_MAX) return luaL_error(L, "%s: max_seq_length must be at least 3", kFn);
  CheckQueriesFit(L, *c, queries.size(), kFn);
  const std::size_t n = c->text.size();
  if (n == 0) return luaL_error(L, "%s: the collection is empty", kFn);
  const double dims = static_cast<double>(s->dims);
  ReserveNative(L, static_cast<double>(n + queries.size()) * dims * sizeof(float), kFn);
  std::vector<std::string> docs(n);
  for (std::size_t d = 0; d < n; ++d) docs[d] = c->keyphrases[d] + join + c->text[d];
  const std::vector<float> dv = EmbedAll(L, *s, {docs.begin(), docs.end()}, static_cast<int>(max_tokens), kFn);
  docs.clear();
  const std::vector<float> qv = EmbedAll(L, *s, {queries.begin(), queries.end()}, static_cast<int>(max_tokens), kFn);
  std::unique_ptr<TransformerModel> cross = LoadCrossEncoder(L, 3, kFn);
  const lua_Integer pool_size = Opt::Integer(L, 3, kFn, "rerank", 50);
  const bool rerank_keyphrases = Opt::Bool(L, 3, kFn, "rerank_keyphrases", true);
  // 0: the cross-encoder's tokenizer limit (model_max_length), what CrossEncoder.predict cuts at when it
  // was given no max_length (KPEval sets max_seq_length, which CrossEncoder does not read).
  const lua_Integer rerank_max = Opt::Integer(L, 3, kFn, "rerank_max_length", max_tokens);
  if (rerank_max < 0 || rerank_max > INT_MAX) return luaL_error(L, "%s: rerank_max_length must be >= 0", kFn);
  if (pool_size < 1) return luaL_error(L, "%s: rerank must be at least 1", kFn);
  std::vector<retrieval::Placement> places(queries.size()), reranked(cross ? queries.size() : 0);
  std::vector<double> scores;
  for (std::size_t i = 0; i < queries.size(); ++i) {
    ChargeNative(L, static_cast<double>(n) * (dims / 16 + 1));
    retrieval::CosineScores(qv.data() + i * s->dims, dv.data(), n, s->dims, scores);
    places[i] = retrieval::Place(scores, i);
    if (cross) reranked[i] = Rerank(L, *cross, *c, queries[i], scores, i, static_cast<std::size_t>(pool_size),
                                    rerank_keyphrases ? join : std::optional<std::string>(), static_cast<int>(rerank_max));
  }
  lua_createtable(L, 0, 2);
  PushPlacements(L, places);
  lua_setfield(L, -2, "dense");
  if (cross) {
    PushPlacements(L, reranked);
    lua_setfield(L, -2, "rerank");
  }
  return 1;
}

int ColLen(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(CheckCollection(L, 1)->text.size()));
  return 1;
}

const luaL_Reg kCollectionMethods[] = {
    {"add", Safe<ColAdd>},
    {"add_dataset", Safe<ColAddDataset>},
    {"bm25", Safe<ColBm25>},
    {"dense", Safe<ColDense>},
    {"__len", Safe<ColLen>},
    {nullptr, nullptr},
};

}  // namespace

void InstallRetrieval(lua_State* L) {
  DefineType<CollectionUd>(L, kCollectionMeta, kCollectionMethods);
  // [kp]
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, Safe<ReadQueries>);
  lua_setfield(L, -2, "read_queries");
  lua_pushcfunction(L, Safe<NewCollection>);
  lua_setfield(L, -2, "collection");
  lua_setfield(L, -2, "retrieval");
}

}  // namespace kplab::host
