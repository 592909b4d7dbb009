// kp.homog: homogeneity of keyphrase predictors across similar documents (kplab/homog.h,
// docs/homogeneity.md). Pure functions (no file access, so plugins may use them too):
//   kp.homog.cp(a, b [, {stem=true, denominator="union"|"max"|"mean"}]) -> hooper, rodgers
//       a, b: KeyphraseLists or arrays of phrase strings (lower-cased, split on whitespace, stemmed
//       with nltk's Porter stemmer when stem is true)
//   kp.homog.mine_pairs(corpus | sets, {theta=0.5, method="join"|"naive", stem=true, partition={p, n}})
//       -> {{a=, b=, shared=, union=, jaccard=}, ...} (1-based, a < b, sorted), {sets=, candidates=, pairs=}
//       sets: an array of arrays of strings (one set per document); partition: only the pairs of
//       partition p (1-based, 1 <= p <= n) of n disjoint ones (homog::Partition)
//   kp.homog.genericity(corpus, pairs [, {stem=true}]) -> {collection={distinct=, mean_df=, mean_words=}, shared={...},
//       pair_docs=, pairs=}
//   kp.homog.wer(hyp, ref), kp.homog.rouge1(hyp, ref): strings (split on whitespace) or arrays of words
//   kp.homog.system_stats(corpus [, docs [, {top_k=k}]]) -> {docs=, docs_with_text=, preds=, absent=,
//       absent_share=, prmu={P=, R=, M=, U=} (shares), prmu_counts={...}}; top_k caps each document's
//       predictions to their first k
//   kp.homog.reformulations(text, name [, {profile=, predictions_original={lines},
//       predictions_reformulation={lines}, tolerance=0.1}]) -> {original=Corpus, reformulation=Corpus,
//       pairs={{id=, method=, line=, words_original=, words_reformulation=, wer=, rouge1=, keep=,
//       keyphrases_ok=, length_ok=, lost=}, ...}}
// and, for metric plugins that declare needs = {"pairs"}, ctx.partners(doc) and ctx.pairs.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "bindings.h"
#include "kplab/embedding_plan.h"
#include "kplab/corpus.h"
#include "kplab/homog.h"
#include "kplab/homog_corpus.h"
#include "kplab/io.h"
#include "kplab/profile.h"
#include "kplab/stem.h"
#include "kplab/text.h"
#include "lua_util.h"
#include "pair_index.h"

namespace kplab::host {

namespace {

constexpr const char* kPairsMeta = "kplab.PairIndex";

struct PairsUd {
  std::shared_ptr<const Corpus> corpus;
  std::shared_ptr<const PairIndex> pairs;
};

[[noreturn]] void Fail(lua_State* L, const char* fn, const std::string& what) {
  luaL_error(L, "kp.homog.%s: %s", fn, what.c_str());
  std::abort();  // unreachable
}

using Opt = OptionReader<&Fail>;

// Checks that the options table at idx (may be none/nil) has only the given keys.
void CheckOptions(lua_State* L, int idx, const char* fn, std::initializer_list<const char*> keys) {
  if (lua_isnoneornil(L, idx)) return;
  if (!lua_istable(L, idx)) Fail(L, fn, fmt::format("options must be a table (got {})", luaL_typename(L, idx)));
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    const char* k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : nullptr;
    bool known = false;
    std::string list;
    for (const char* key : keys) {
      known = known || (k && std::strcmp(k, key) == 0);
      list += (list.empty() ? "" : ", ") + std::string(key);
    }
    if (!known) {
      const std::string name = k ? k : luaL_typename(L, -1);
      lua_pop(L, 1);
      Fail(L, fn, fmt::format("unknown option '{}' (expected one of: {})", name, list));
    }
  }
}

homog::Denominator OptDenominator(lua_State* L, int idx, const char* fn) {
  const std::string name = Opt::String(L, idx, fn, "denominator", "union");
  homog::Denominator d;
  if (!homog::ParseDenominator(name, &d)) {
    Fail(L, fn, fmt::format("option 'denominator' is '{}' (expected union, max or mean)", name));
  }
  return d;
}

// The corpus of a Corpus argument; nullptr for an empty corpus. Raises a Lua error when the value is
// not a Corpus.
const Corpus* ToCorpus(lua_State* L, int idx, const char* fn) {
  const Corpus* c = TestCorpus(L, idx);
  if (c == nullptr) Fail(L, fn, fmt::format("expected a Corpus (got {})", luaL_typename(L, idx)));
  return c->docs.empty() ? nullptr : c;
}

// One list of keyphrases as word lists. `strings` owns the words of string inputs.
std::vector<homog::Words> ListWords(lua_State* L, int idx, bool stem, std::vector<std::string>& strings,
                                    const char* fn) {
  std::vector<homog::Words> out;
  KeyphraseList items;
  const Corpus* c = nullptr;
  if (ToKeyphraseList(L, idx, &items, &c)) {
    for (const Keyphrase* k : items) {
      homog::Words w;
      for (TokenId t : stem ? k->stems() : k->tokens()) w.push_back(c->Str(t));
      out.push_back(std::move(w));
    }
    return out;
  }
  if (!lua_istable(L, idx)) {
    Fail(L, fn, fmt::format("argument #{} must be a KeyphraseList or an array of strings (got {})", idx,
                            luaL_typename(L, idx)));
  }
  static const PorterStemmer stemmer(PorterMode::kNltk);
  const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, idx));
  std::vector<std::vector<std::size_t>> spans;  // indices into strings, filled first (strings may grow)
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, idx, i);
    if (lua_type(L, -1) != LUA_TSTRING) {
      Fail(L, fn, fmt::format("argument #{}[{}] must be a string (got {})", idx, i, luaL_typename(L, -1)));
    }
    std::size_t len = 0;
    const char* s = lua_tolstring(L, -1, &len);
    const std::string_view text(s, len);
    if (!ValidUtf8(text)) Fail(L, fn, fmt::format("argument #{}[{}] is not valid UTF-8", idx, i));
    const std::string lower = Lower(text);
    std::vector<std::size_t> ids;
    for (std::string_view w : SplitWhitespace(lower)) {
      strings.push_back(stem ? stemmer.Stem(w) : std::string(w));
      ids.push_back(strings.size() - 1);
    }
    spans.push_back(std::move(ids));
    lua_pop(L, 1);
  }
  for (const auto& ids : spans) {
    homog::Words w;
    for (std::size_t i : ids) w.push_back(strings[i]);
    out.push_back(std::move(w));
  }
  return out;
}

int Cp(lua_State* L) {
  const char* fn = "cp";
  CheckOptions(L, 3, fn, {"stem", "denominator"});
  const bool stem = Opt::Bool(L, 3, fn, "stem", true);
  const homog::Denominator d = OptDenominator(L, 3, fn);
  std::vector<std::string> sa, sb;
  const auto a = ListWords(L, 1, stem, sa, fn);
  const auto b = ListWords(L, 2, stem, sb, fn);
  const homog::Cp cp = homog::Consistency(a, b, d);
  lua_pushnumber(L, cp.hooper);
  lua_pushnumber(L, cp.rodgers);
  return 2;
}

// The option 'partition' = {p, n} (1-based p, as everything else in kp) as homog's 0-based Partition;
// {0, 1} (the whole join) when absent.
homog::Partition OptPartition(lua_State* L, int idx, const char* fn) {
  const int t = Opt::Get(L, idx, "partition");
  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    return {};
  }
  auto bad = [&](const std::string& got) {
    Fail(L, fn,
         fmt::format("option 'partition' must be {{p, n}}: integers with 1 <= p <= n <= 4294967295 (got {})", got));
  };
  if (t != LUA_TTABLE) bad(luaL_typename(L, -1));
  const lua_Unsigned len = lua_rawlen(L, -1);
  if (len != 2) bad(fmt::format("{} element{}", len, len == 1 ? "" : "s"));
  lua_Integer v[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    lua_rawgeti(L, -1, k + 1);
    int isint = 0;
    v[k] = lua_tointegerx(L, -1, &isint);
    if (lua_type(L, -1) != LUA_TNUMBER || !isint) {
      bad(fmt::format("{} at [{}]", lua_type(L, -1) == LUA_TNUMBER ? "a non-integer number" : luaL_typename(L, -1),
                      k + 1));
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (v[1] < 1 || v[1] > lua_Integer{0xffffffff} || v[0] < 1 || v[0] > v[1]) bad(fmt::format("{{{}, {}}}", v[0], v[1]));
  return {static_cast<std::uint32_t>(v[0] - 1), static_cast<std::uint32_t>(v[1])};
}

int MinePairsLua(lua_State* L) {
  const char* fn = "mine_pairs";
  CheckOptions(L, 2, fn, {"theta", "method", "stem", "partition"});
  const double theta = Opt::Number(L, 2, fn, "theta", 0.5);
  const bool stem = Opt::Bool(L, 2, fn, "stem", true);
  const std::string method = Opt::String(L, 2, fn, "method", "join");
  if (method != "join" && method != "naive") {
    Fail(L, fn, fmt::format("option 'method' is '{}' (expected join or naive)", method));
  }
  const homog::Partition partition = OptPartition(L, 2, fn);
  if (partition.count > 1 && method != "join") {
    Fail(L, fn, "option 'partition' divides the join (expected method = \"join\" with a partition)");
  }
  std::vector<std::vector<std::uint32_t>> sets;
  if (lua_type(L, 1) == LUA_TTABLE) {
    std::vector<std::vector<std::string>> strings;
    const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, 1));
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_rawgeti(L, 1, i);
      if (!lua_istable(L, -1)) Fail(L, fn, fmt::format("sets[{}] must be an array of strings", i));
      std::vector<std::string> s;
      const lua_Integer m = static_cast<lua_Integer>(lua_rawlen(L, -1));
      for (lua_Integer j = 1; j <= m; ++j) {
        lua_rawgeti(L, -1, j);
        if (lua_type(L, -1) != LUA_TSTRING) Fail(L, fn, fmt::format("sets[{}][{}] must be a string", i, j));
        std::size_t len = 0;
        const char* k = lua_tolstring(L, -1, &len);
        s.emplace_back(k, len);
        lua_pop(L, 1);
      }
      strings.push_back(std::move(s));
      lua_pop(L, 1);
    }
    // Ids by byte order, not by first appearance: a partition's pairs must not depend on the order in
    // which a worker happened to build its arrays (homog::InternSets).
    sets = homog::InternSets(strings);
  } else {
    const Corpus* c = ToCorpus(L, 1, fn);
    if (c) sets = homog::GoldSets(*c, stem);
  }
  homog::MineStats stats;
  auto pairs =
      method == "join" ? homog::MinePairs(sets, theta, &stats, partition) : homog::MinePairsNaive(sets, theta, &stats);
  if (!pairs.ok()) Fail(L, fn, pairs.error().message);
  lua_createtable(L, static_cast<int>(pairs->size()), 0);
  for (std::size_t i = 0; i < pairs->size(); ++i) {
    const homog::DocPair& p = (*pairs)[i];
    lua_createtable(L, 0, 5);
    lua_pushinteger(L, p.a + 1);
    lua_setfield(L, -2, "a");
    lua_pushinteger(L, p.b + 1);
    lua_setfield(L, -2, "b");
    lua_pushinteger(L, p.shared);
    lua_setfield(L, -2, "shared");
    lua_pushinteger(L, p.uni);
    lua_setfield(L, -2, "union");
    SetNumber(L, "jaccard", p.jaccard);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, static_cast<lua_Integer>(stats.sets));
  lua_setfield(L, -2, "sets");
  lua_pushinteger(L, static_cast<lua_Integer>(stats.candidates));
  lua_setfield(L, -2, "candidates");
  lua_pushinteger(L, static_cast<lua_Integer>(stats.pairs));
  lua_setfield(L, -2, "pairs");
  return 2;
}

// Reads the pairs array at idx ({a=, b=}, 1-based) into 0-based DocPairs, checking the range.
std::vector<homog::DocPair> CheckPairs(lua_State* L, int idx, std::size_t n_docs, const char* fn) {
  luaL_checktype(L, idx, LUA_TTABLE);
  std::vector<homog::DocPair> out;
  const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, idx));
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, idx, i);
    if (!lua_istable(L, -1)) Fail(L, fn, fmt::format("pairs[{}] must be a table {{a=, b=}}", i));
    homog::DocPair p;
    for (const char* k : {"a", "b"}) {
      lua_getfield(L, -1, k);
      int ok = 0;
      const lua_Integer v = lua_tointegerx(L, -1, &ok);
      if (!ok || v < 1 || static_cast<std::size_t>(v) > n_docs) {
        Fail(L, fn, fmt::format("pairs[{}].{} must be a document index in 1..{}", i, k, n_docs));
      }
      (k[0] == 'a' ? p.a : p.b) = static_cast<std::uint32_t>(v - 1);
      lua_pop(L, 1);
    }
    out.push_back(p);
    lua_pop(L, 1);
  }
  return out;
}

void PushGenericity(lua_State* L, const homog::Genericity& g) {
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, static_cast<lua_Integer>(g.distinct));
  lua_setfield(L, -2, "distinct");
  SetNumber(L, "mean_df", g.mean_df);
  SetNumber(L, "mean_words", g.mean_words);
}

int GenericityLua(lua_State* L) {
  const char* fn = "genericity";
  const Corpus* c = ToCorpus(L, 1, fn);
  if (!c) Fail(L, fn, "the corpus has no documents");
  const auto pairs = CheckPairs(L, 2, c->docs.size(), fn);
  CheckOptions(L, 3, fn, {"stem"});
  const bool stem = Opt::Bool(L, 3, fn, "stem", true);
  const homog::GenericityReport g = homog::CorpusGenericity(*c, pairs, stem);
  lua_createtable(L, 0, 4);
  PushGenericity(L, g.collection);
  lua_setfield(L, -2, "collection");
  PushGenericity(L, g.shared);
  lua_setfield(L, -2, "shared");
  lua_pushinteger(L, static_cast<lua_Integer>(g.pair_docs));
  lua_setfield(L, -2, "pair_docs");
  lua_pushinteger(L, static_cast<lua_Integer>(g.pairs));
  lua_setfield(L, -2, "pairs");
  return 1;
}

// A text argument as words: a string split on whitespace, or an array of strings.
std::vector<std::string_view> TextWords(lua_State* L, int idx, const char* fn) {
  std::vector<std::string_view> out;
  if (lua_type(L, idx) == LUA_TSTRING) {
    std::size_t len = 0;
    const char* s = lua_tolstring(L, idx, &len);
    ChargeNative(L, static_cast<double>(len));  // at most one word per two bytes
    ReserveNative(L, static_cast<double>(len) / 2 * sizeof(std::string_view), fn);
    return SplitWhitespace(std::string_view(s, len));
  }
  if (!lua_istable(L, idx)) {
    Fail(L, fn, fmt::format("argument #{} must be a string or an array of words (got {})", idx,
                            luaL_typename(L, idx)));
  }
  const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, idx));
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, idx, i);
    if (lua_type(L, -1) != LUA_TSTRING) Fail(L, fn, fmt::format("argument #{}[{}] must be a string", idx, i));
    std::size_t len = 0;
    const char* s = lua_tolstring(L, -1, &len);
    out.emplace_back(s, len);  // the string stays alive: it is referenced by the table
    lua_pop(L, 1);
  }
  return out;
}

int WerLua(lua_State* L) {
  const auto hyp = TextWords(L, 1, "wer");
  const auto ref = TextWords(L, 2, "wer");
  // Edit distance: one step per (hyp word, ref word) cell, charged before it runs (sandbox.h).
  ChargeNative(L, static_cast<double>(hyp.size() + 1) * static_cast<double>(ref.size() + 1));
  lua_pushnumber(L, homog::Wer(hyp, ref, [L](double cells) { CheckNative(L, cells); }));
  return 1;
}

int Rouge1Lua(lua_State* L) {
  const auto hyp = TextWords(L, 1, "rouge1");
  const auto ref = TextWords(L, 2, "rouge1");
  ChargeNative(L, static_cast<double>(hyp.size() + ref.size()));
  lua_pushnumber(L, homog::Rouge1Recall(hyp, ref));
  return 1;
}

int SystemStats(lua_State* L) {
  const char* fn = "system_stats";
  const Corpus* c = ToCorpus(L, 1, fn);
  std::vector<std::size_t> docs;
  const std::size_t n_docs = c ? c->docs.size() : 0;
  if (lua_isnoneornil(L, 2)) {
    for (std::size_t i = 0; i < n_docs; ++i) docs.push_back(i);
  } else {
    luaL_checktype(L, 2, LUA_TTABLE);
    const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, 2));
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_rawgeti(L, 2, i);
      int ok = 0;
      const lua_Integer v = lua_tointegerx(L, -1, &ok);
      if (!ok || v < 1 || static_cast<std::size_t>(v) > n_docs) {
        Fail(L, fn, fmt::format("docs[{}] must be a document index in 1..{}", i, n_docs));
      }
      docs.push_back(static_cast<std::size_t>(v - 1));
      lua_pop(L, 1);
    }
  }
  CheckOptions(L, 3, fn, {"top_k"});
  lua_Integer top_k = 0;  // absent: every prediction; else each document's first top_k (>= 1)
  const bool capped = Opt::Get(L, 3, "top_k") != LUA_TNIL;
  lua_pop(L, 1);
  if (capped) {
    top_k = Opt::Integer(L, 3, fn, "top_k", 0);
    if (top_k < 1) Fail(L, fn, fmt::format("option 'top_k' must be an integer >= 1 (got {})", top_k));
  }
  const homog::SystemCounts n = homog::CountSystem(*c, docs, static_cast<std::size_t>(top_k));
  const double np = static_cast<double>(n.preds);
  lua_createtable(L, 0, 7);
  lua_pushinteger(L, static_cast<lua_Integer>(n.docs));
  lua_setfield(L, -2, "docs");
  lua_pushinteger(L, static_cast<lua_Integer>(n.docs_with_text));
  lua_setfield(L, -2, "docs_with_text");
  lua_pushinteger(L, static_cast<lua_Integer>(n.preds));
  lua_setfield(L, -2, "preds");
  lua_pushinteger(L, static_cast<lua_Integer>(n.absent));
  lua_setfield(L, -2, "absent");
  SetNumber(L, "absent_share", static_cast<double>(n.absent) / np);  // NaN without predictions
  const char* names[] = {"P", "R", "M", "U"};
  lua_createtable(L, 0, 4);
  for (int k = 0; k < 4; ++k) SetNumber(L, names[k], static_cast<double>(n.prmu[k]) / np);
  lua_setfield(L, -2, "prmu");
  lua_createtable(L, 0, 4);
  for (int k = 0; k < 4; ++k) {
    lua_pushinteger(L, static_cast<lua_Integer>(n.prmu[k]));
    lua_setfield(L, -2, names[k]);
  }
  lua_setfield(L, -2, "prmu_counts");
  return 1;
}

// Predictions given as an array of ';' lines (one per pair), named `name` line by line.
RawPredictions LinesPredictions(lua_State* L, int opts, const char* key, const std::string& name,
                                const char* fn) {
  lua_getfield(L, opts, key);
  if (!lua_istable(L, -1)) Fail(L, fn, fmt::format("option '{}' must be an array of ';' lines", key));
  const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, -1));
  std::vector<std::string_view> lines;  // the strings stay alive: the table on the stack holds them
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, -1, i);
    if (lua_type(L, -1) != LUA_TSTRING) Fail(L, fn, fmt::format("{}[{}] must be a string", key, i));
    std::size_t len = 0;
    const char* s = lua_tolstring(L, -1, &len);
    lines.emplace_back(s, len);
    lua_pop(L, 1);
  }
  auto p = homog::PredictionsFromLines(lines, name);
  if (!p.ok()) Fail(L, fn, p.error().message);
  lua_pop(L, 1);
  return std::move(*p);
}

int Reformulations(lua_State* L) {
  const char* fn = "reformulations";
  std::size_t len = 0;
  const char* text = luaL_checklstring(L, 1, &len);
  const std::string name = luaL_checkstring(L, 2);
  CheckOptions(L, 3, fn, {"profile", "predictions_original", "predictions_reformulation", "tolerance"});
  const std::string profile_name = Opt::String(L, 3, fn, "profile", "kplab");
  const double tolerance = Opt::Number(L, 3, fn, "tolerance", 0.10);
  if (!(tolerance >= 0)) Fail(L, fn, "option 'tolerance' must be >= 0");
  auto profile = ResolveProfile(profile_name);
  if (!profile) Fail(L, fn, profile.error().message);
  auto pairs = homog::ParseReformulations(std::string_view(text, len), name);
  if (!pairs.ok()) return luaL_error(L, "%s", pairs.error().message.c_str());

  std::optional<RawPredictions> preds[2];
  const char* pred_keys[2] = {"predictions_original", "predictions_reformulation"};
  for (int side = 0; side < 2; ++side) {
    int has = LUA_TNIL;
    if (!lua_isnoneornil(L, 3)) {
      has = lua_getfield(L, 3, pred_keys[side]);
      lua_pop(L, 1);
    }
    if (has != LUA_TNIL) preds[side] = LinesPredictions(L, 3, pred_keys[side], pred_keys[side], fn);
  }
  auto study = homog::StudyReformulations(*pairs, name, *profile, std::move(preds[0]), std::move(preds[1]),
                                          tolerance);
  if (!study.ok()) {
    if (study.error().IsInternal()) Fail(L, fn, study.error().message);
    return luaL_error(L, "%s", study.error().message.c_str());
  }
  lua_createtable(L, 0, 3);
  PushCorpus(L, study->original);
  lua_setfield(L, -2, "original");
  PushCorpus(L, study->reformulation);
  lua_setfield(L, -2, "reformulation");
  lua_createtable(L, static_cast<int>(pairs->size()), 0);
  for (std::size_t i = 0; i < pairs->size(); ++i) {
    const homog::ReformulationRow& r = study->rows[i];
    const auto& p = (*pairs)[i];
    lua_createtable(L, 0, 11);
    SetString(L, "id", p.id);
    SetString(L, "method", p.method);
    lua_pushinteger(L, p.line);
    lua_setfield(L, -2, "line");
    lua_pushinteger(L, static_cast<lua_Integer>(r.words_original));
    lua_setfield(L, -2, "words_original");
    lua_pushinteger(L, static_cast<lua_Integer>(r.words_reformulation));
    lua_setfield(L, -2, "words_reformulation");
    SetNumber(L, "wer", r.wer);
    SetNumber(L, "rouge1", r.rouge1);
    lua_pushboolean(L, r.verdict.keep);
    lua_setfield(L, -2, "keep");
    lua_pushboolean(L, r.verdict.keyphrases_ok);
    lua_setfield(L, -2, "keyphrases_ok");
    lua_pushboolean(L, r.verdict.length_ok);
    lua_setfield(L, -2, "length_ok");
    lua_pushinteger(L, static_cast<lua_Integer>(r.verdict.lost_keyphrases));
    lua_setfield(L, -2, "lost");
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  lua_setfield(L, -2, "pairs");
  return 1;
}

// ---- ctx.partners for plugins with needs = {"pairs"} --------------------------------------------------

// ctx.partners(doc) -> {{doc = Document, jaccard = j, index = i}, ...}, identical: the documents paired
// with doc whose index is higher (each pair once), in index order; and how many of the pairs doc opens
// have identical gold sets (listed only under keep_identical), so a plugin can report both totals.
int CtxPartners(lua_State* L) {
  auto* ud = Check<PairsUd>(L, lua_upvalueindex(1), kPairsMeta);
  if (lua_type(L, 1) != LUA_TUSERDATA) return luaL_error(L, "ctx.partners: expected a Document");
  lua_getfield(L, 1, "refs");
  KeyphraseList items;
  const Corpus* c = nullptr;
  const Document* d = nullptr;
  if (!ToKeyphraseListDoc(L, -1, &items, &c, &d) || c != ud->corpus.get() || d == nullptr) {
    return luaL_error(L, "ctx.partners: expected a Document of the run");
  }
  lua_pop(L, 1);
  const auto i = static_cast<std::size_t>(d - c->docs.data());
  const auto& list = ud->pairs->gold.partners.at(i);
  lua_createtable(L, static_cast<int>(list.size()), 0);
  for (std::size_t k = 0; k < list.size(); ++k) {
    lua_createtable(L, 0, 3);
    PushDocument(L, ud->corpus, list[k].first);
    lua_setfield(L, -2, "doc");
    SetNumber(L, "jaccard", list[k].second);
    lua_pushinteger(L, static_cast<lua_Integer>(list[k].first + 1));
    lua_setfield(L, -2, "index");
    lua_rawseti(L, -2, static_cast<lua_Integer>(k + 1));
  }
  lua_pushinteger(L, static_cast<lua_Integer>(ud->pairs->gold.identical.at(i)));
  return 2;
}

// ctx.pairs.normalize(list) -> array of strings: each keyphrase of the list replaced by its nearest
// gold keyphrase of the run (cosine of surface vectors, HNSW search); a keyphrase without a vector
// stays as it is.
int CtxNormalize(lua_State* L) {
  auto* ud = Check<PairsUd>(L, lua_upvalueindex(1), kPairsMeta);
  const PairIndex& px = *ud->pairs;
  KeyphraseList items;
  const Corpus* c = nullptr;
  if (!ToKeyphraseList(L, 1, &items, &c) || c != ud->corpus.get()) {
    return luaL_error(L, "ctx.pairs.normalize: expected a KeyphraseList of the run");
  }
  const EmbeddingSpace& s = *px.space;
  lua_createtable(L, static_cast<int>(items.size()), 0);
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Keyphrase& k = *items[i];
    std::string_view out = k.surface();
    const std::int32_t row = s.Row(*k.phrase, EmbedForm::kSurface);
    if (row >= 0 && s.has[row]) {
      const auto hit = px.vocab.index->Search(s.vecs.data() + static_cast<std::size_t>(row) * s.dims, 1);
      if (!hit.empty()) out = c->phrases[static_cast<std::size_t>(hit[0].first)].surface();
    }
    lua_pushlstring(L, out.data(), out.size());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

const luaL_Reg kFunctions[] = {
    {"cp", Safe<Cp>},
    {"mine_pairs", Safe<MinePairsLua>},
    {"genericity", Safe<GenericityLua>},
    {"wer", Safe<WerLua>},
    {"rouge1", Safe<Rouge1Lua>},
    {"system_stats", Safe<SystemStats>},
    {"reformulations", Safe<Reformulations>},
    {nullptr, nullptr},
};

}  // namespace

void AddPairsCtx(lua_State* L, const std::shared_ptr<const Corpus>& corpus,
                 const std::shared_ptr<const PairIndex>& pairs) {
  // [ctx]
  NewUserdata<PairsUd>(L, kPairsMeta, PairsUd{corpus, pairs});
  lua_pushcclosure(L, Safe<CtxPartners>, 1);
  lua_setfield(L, -2, "partners");
  lua_createtable(L, 0, 5);
  SetNumber(L, "theta", pairs->gold.theta);
  lua_pushinteger(L, static_cast<lua_Integer>(pairs->gold.n_pairs));
  lua_setfield(L, -2, "n");
  lua_pushinteger(L, static_cast<lua_Integer>(pairs->gold.n_identical));
  lua_setfield(L, -2, "identical");
  if (pairs->vocab.index) {
    lua_pushinteger(L, static_cast<lua_Integer>(pairs->vocab.size));
    lua_setfield(L, -2, "vocabulary_size");
    NewUserdata<PairsUd>(L, kPairsMeta, PairsUd{corpus, pairs});
    lua_pushcclosure(L, Safe<CtxNormalize>, 1);
    lua_setfield(L, -2, "normalize");
  }
  lua_setfield(L, -2, "pairs");
}

void InstallHomog(lua_State* L) {
  // [kp]
  static const luaL_Reg kNone[] = {{nullptr, nullptr}};
  DefineType<PairsUd>(L, kPairsMeta, kNone);
  luaL_newlib(L, kFunctions);  // [kp, homog]
  lua_setfield(L, -2, "homog");
}

}  // namespace kplab::host
