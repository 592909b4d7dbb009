// What `kplab run SCRIPT.lua` adds to the plugin API (analysis scripts, not metrics): kp.load (a corpus),
// kp.runs (the run store), kp.write / kp.read (files, written whole or not at all) and kp.include
// (another Lua file of the script's directory, run in the script's own environment). Metric plugins
// never see these: their results must depend on the documents only.
#include "lua_script.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "bindings.h"
#include "eval_store.h"
#include "evaluate.h"
#include "kplab/corpus.h"
#include "kplab/io.h"
#include "kplab/profile.h"
#include "kplab/safe_text.h"
#include "kplab/store.h"
#include "kplab/suggest.h"
#include "kplab/text.h"
#include "lua_util.h"
#include "table.h"

namespace kplab::host {

namespace fs = std::filesystem;

namespace {

const char kEnvKey = 0;     // registry key (by address) of the script's environment table
const char kDirKey = 0;     // registry key of the script's directory (string)
const char kGrantsKey = 0;  // registry key of a GrantsBox; absent = the caller's context (the Lua module)

// The script's grants, held by a userdata in the registry (its __gc releases them).
struct GrantsBox {
  std::shared_ptr<const FileGrants> grants;
};

int GrantsBoxGc(lua_State* L) {
  static_cast<GrantsBox*>(lua_touserdata(L, 1))->~GrantsBox();
  return 0;
}

// The grants InstallScriptApi recorded in L, or null.
std::shared_ptr<const FileGrants> StateGrants(lua_State* L) {
  std::shared_ptr<const FileGrants> grants;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kGrantsKey) == LUA_TUSERDATA) {
    grants = static_cast<const GrantsBox*>(lua_touserdata(L, -1))->grants;
  }
  lua_pop(L, 1);
  return grants;
}

// Every script function runs in the script's file context, however it is reached (a metered call, the
// REPL's printer, a metamethod): what it opens, and what the core code it calls opens, goes through
// GateFile under these grants.
template <lua_CFunction F>
int InGrants(lua_State* L) {
  FileScope scope(StateGrants(L));
  return F(L);
}

// Throws (for Safe<> to raise as "SCRIPT:LINE: ...") "WHAT: PATH: outside the directories scripts may
// read (...)" unless the script's context may open the path. Checked here, before any work, so that the
// message names the argument; the opener checks again (the gate is in every opener).
void CheckAccess(const std::string& what, std::string_view path, FileAccess access) {
  if (Status st = GateFile(path, access); !st.ok()) throw std::runtime_error(what + ": " + st.message());
}

// The string argument at idx, NUL bytes kept (luaL_checkstring would cut the name at the first one).
std::string_view PathArg(lua_State* L, int idx) {
  std::size_t n = 0;
  const char* s = luaL_checklstring(L, idx, &n);
  return {s, n};
}

// The keys a table argument may hold: any other is an error naming the valid ones (and the nearest).
void CheckKeys(lua_State* L, int idx, const char* what, const std::vector<std::string>& keys) {
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {  // [key, value]
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) {
      luaL_error(L, "%s: a key of type %s (expected one of: %s)", what, luaL_typename(L, -1), JoinNames(keys).c_str());
    }
    const std::string key = lua_tostring(L, -1);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      luaL_error(L, "%s: unknown field '%s' (%sexpected one of: %s)", what, key.c_str(), DidYouMean(key, keys).c_str(),
                 JoinNames(keys).c_str());
    }
  }
}

// kp.load{dataset=, predictions=, profile=, and the dataset options of every front-end (docs/scripts.md):
// dataset_format=, predictions_format=, hulth_keys=, semeval_answers=, split=, references=, refs_stemmed=,
// source=} -> Corpus, imported and built by the same code as `kplab eval` (LoadCorpusFor), so the REPL and
// a stored run see the same documents.
int LuaLoad(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  static const std::vector<std::string> kKeys = {"dataset",      "predictions", "profile",         "dataset_format",
                                                 "predictions_format", "hulth_keys", "semeval_answers", "split",
                                                 "references",   "refs_stemmed", "source"};
  CheckKeys(L, 1, "kp.load", kKeys);
  auto field = [&](const char* k) -> std::optional<std::string> {
    lua_getfield(L, 1, k);
    std::optional<std::string> v;
    std::size_t n = 0;
    if (lua_isstring(L, -1)) {
      const char* s = lua_tolstring(L, -1, &n);
      v = std::string(s, n);
    } else if (!lua_isnil(L, -1)) {
      luaL_error(L, "kp.load: field '%s' must be a string (got %s)", k, luaL_typename(L, -1));
    }
    lua_pop(L, 1);
    return v;
  };
  // Every file kp.load reads is under the grants: the paths given, checked before reading...
  for (const char* k : {"dataset", "predictions", "source", "references"}) {
    if (auto path = field(k)) CheckAccess(std::string("kp.load: field '") + k + "'", *path, FileAccess::kRead);
  }
  EvalRequest req;
  const auto dataset_path = field("dataset");
  if (!dataset_path) return luaL_error(L, "kp.load: field 'dataset' must be a path string");
  req.dataset_path = *dataset_path;
  req.predictions_path = field("predictions").value_or("");
  req.predictions_format = field("predictions_format").value_or("");
  req.profile = field("profile").value_or("kplab");
  req.source_path = field("source");
  DatasetOptions& dopt = req.dataset_options;
  dopt.format = field("dataset_format").value_or("");
  dopt.hulth_keys = field("hulth_keys").value_or("");
  dopt.split = field("split").value_or("");
  dopt.references = field("references").value_or("");
  dopt.semeval_answers = field("semeval_answers").value_or("");
  if (const auto& a = dopt.semeval_answers; !a.empty() && a != "combined" && a != "author" && a != "reader" && a != "liaad") {
    CheckAccess("kp.load: field 'semeval_answers'", a, FileAccess::kRead);
  }
  lua_getfield(L, 1, "refs_stemmed");
  if (!lua_isnil(L, -1) && !lua_isboolean(L, -1)) {
    return luaL_error(L, "kp.load: field 'refs_stemmed' must be a boolean (got %s)", luaL_typename(L, -1));
  }
  dopt.refs_stemmed = lua_toboolean(L, -1) != 0;
  lua_pop(L, 1);
  auto ds = ImportRequestDataset(req);
  if (!ds) return luaL_error(L, "%s", ds.error().message.c_str());
  // ...and the files a dataset directory led to (a symbolic link in it may point anywhere), before any
  // of their content reaches the script.
  for (const std::string& file : ds->files) CheckAccess("kp.load: dataset file", file, FileAccess::kRead);
  auto corpus = LoadCorpusFor(*ds, req);
  if (!corpus) return luaL_error(L, "kp.load: %s", corpus.error().message.c_str());
  // As `kplab eval` says them (stemmed gold, ...): on stderr, not into the script's values.
  // A warning quotes the data (the stemmed-gold warning an example word): escaped.
  for (const std::string& w : corpus->warnings) std::fprintf(stderr, "kplab: kp.load: %s\n", TerminalText(w).c_str());
  PushCorpus(L, std::make_shared<const Corpus>(std::move(*corpus)));
  return 1;
}

RunStore OpenStore(lua_State* L, int arg, const char* fn) {
  std::size_t n = 0;
  const std::string default_path = RunStore::DefaultPath();
  const char* p = luaL_optlstring(L, arg, default_path.c_str(), &n);
  const std::string path(p, n);
  if (path != ":memory:") CheckAccess(fn, path, FileAccess::kRead);
  if (path != ":memory:" && !fs::exists(path)) {
    luaL_error(L, "%s: %s: no such run store (expected a kplab database; see `kplab runs list --db FILE`)", fn,
               path.c_str());
  }
  // Scripts only read the store: read-only, so a write-protected file or directory serves them too.
  auto store = RunStore::Open(path, RunStore::Mode::kReadOnly);
  if (!store) luaL_error(L, "%s: %s", fn, store.error().message.c_str());
  return std::move(*store);
}

// kp.runs.list([db]) -> {{id=, created_at=, status=, dataset=, system=, profile=, n_docs=}, ...}, newest first.
int RunsList(lua_State* L) {
  RunStore store = OpenStore(L, 1, "kp.runs.list");
  auto runs = store.ListRuns();
  if (!runs) return luaL_error(L, "kp.runs.list: %s", runs.error().message.c_str());
  lua_createtable(L, static_cast<int>(runs->size()), 0);
  for (std::size_t i = 0; i < runs->size(); ++i) {
    const RunSummary& r = (*runs)[i];
    lua_createtable(L, 0, 7);
    lua_pushinteger(L, r.id);
    lua_setfield(L, -2, "id");
    SetString(L, "created_at", r.created_at);
    SetString(L, "status", r.status);
    SetString(L, "dataset", r.dataset_name);
    SetString(L, "system", r.system);
    SetString(L, "profile", r.profile);
    lua_pushinteger(L, r.n_docs);
    lua_setfield(L, -2, "n_docs");
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

// kp.runs.get(id [, db [, metrics]]) -> the run's record: id, status, dataset, dataset_path,
// dataset_format, system, predictions_path, profile, params_json, embedder, created_at, doc_ids = {...},
// aggregates = {name = value}, scores = {name = {value per document, NaN where undefined}} (only the
// names in `metrics`, a list, when given).
int RunsGet(lua_State* L) {
  const lua_Integer id = luaL_checkinteger(L, 1);
  RunStore store = OpenStore(L, 2, "kp.runs.get");
  std::optional<std::vector<std::string>> only;
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    only.emplace();
    const lua_Integer n = luaL_len(L, 3);
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_rawgeti(L, 3, i);
      if (!lua_isstring(L, -1)) return luaL_error(L, "kp.runs.get: metrics[%d] must be a string", static_cast<int>(i));
      only->push_back(lua_tostring(L, -1));
      lua_pop(L, 1);
    }
  }
  auto run = store.GetRun(id);
  if (!run) return luaL_error(L, "kp.runs.get: %s", run.error().message.c_str());
  auto aggs = store.GetAggregates(id);
  if (!aggs) return luaL_error(L, "kp.runs.get: %s", aggs.error().message.c_str());
  auto scores = store.GetScores(id);
  if (!scores) return luaL_error(L, "kp.runs.get: %s", scores.error().message.c_str());
  lua_createtable(L, 0, 16);
  lua_pushinteger(L, run->id);
  lua_setfield(L, -2, "id");
  SetString(L, "status", run->status);
  SetString(L, "dataset", run->dataset_name);
  SetString(L, "dataset_path", run->dataset_path);
  SetString(L, "dataset_format", run->dataset_format);
  SetString(L, "system", run->system);
  SetString(L, "predictions_path", run->predictions_path);
  SetString(L, "profile", run->profile);
  SetString(L, "params_json", run->params_json);
  SetString(L, "embedder", run->embedder_fingerprint);
  SetString(L, "created_at", run->created_at);
  lua_createtable(L, static_cast<int>(run->doc_ids.size()), 0);
  for (std::size_t i = 0; i < run->doc_ids.size(); ++i) {
    lua_pushlstring(L, run->doc_ids[i].data(), run->doc_ids[i].size());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  lua_setfield(L, -2, "doc_ids");
  lua_createtable(L, 0, static_cast<int>(aggs->size()));
  for (const AggregateValue& a : *aggs) SetNumber(L, a.metric.c_str(), a.value);
  lua_setfield(L, -2, "aggregates");
  lua_createtable(L, 0, static_cast<int>(scores->metrics.size()));
  for (std::size_t m = 0; m < scores->metrics.size(); ++m) {
    const std::string& name = scores->metrics[m];
    if (only && std::find(only->begin(), only->end(), name) == only->end()) continue;
    const std::vector<double>& col = scores->columns[m];
    lua_createtable(L, static_cast<int>(col.size()), 0);
    for (std::size_t i = 0; i < col.size(); ++i) {
      lua_pushnumber(L, col[i]);
      lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
    }
    lua_setfield(L, -2, name.c_str());
  }
  lua_setfield(L, -2, "scores");
  return 1;
}

// A string (or number) field of the table at `table`, NUL bytes kept (a path or name with one is then
// refused, not cut at it); nullopt when absent or of another type.
std::optional<std::string> StringField(lua_State* L, int table, const char* key) {
  lua_getfield(L, table, key);
  std::optional<std::string> v;
  if (lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER) {
    std::size_t n = 0;
    const char* s = lua_tolstring(L, -1, &n);
    v = std::string(s, n);
  }
  lua_pop(L, 1);
  return v;
}

// Names given as a list of strings or one comma-separated string ("exact,rprec"), blanks dropped.
std::vector<std::string> NameList(lua_State* L, int idx, const char* what) {
  std::vector<std::string> out;
  if (lua_type(L, idx) == LUA_TSTRING) {
    for (auto m : SplitOn(lua_tostring(L, idx), ",")) {
      const std::string_view t = Strip(m);
      if (!t.empty()) out.emplace_back(t);
    }
    return out;
  }
  if (lua_type(L, idx) != LUA_TTABLE) luaL_error(L, "%s must be a list of names or a comma-separated string", what);
  const lua_Integer n = luaL_len(L, idx);
  for (lua_Integer i = 1; i <= n; ++i) {
    if (lua_rawgeti(L, idx, i) != LUA_TSTRING) luaL_error(L, "%s[%d] must be a string", what, static_cast<int>(i));
    out.emplace_back(lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  return out;
}

// kp.evaluate(corpus, metrics [, params [, opts]]) -> {aggregates = {name = v}, columns = {name = {...}},
// doc_ids = {...}, run_id = id or nil}: scores a Corpus (kp.load) with metric plugins, as `kplab eval` does.
// metrics: a list or a comma-separated string; params: {metric = {name = value}}; opts: system (default
// "lua"), db (store the run there), model (embedding model), plugins (a list of plugin directories),
// threads, verify_docs (as --verify-docs), random_seed (as --random-seed). A plugin error is raised with
// its file:line.
int LuaEvaluate(lua_State* L) {
  std::shared_ptr<const Corpus> corpus = CheckCorpusArg(L, 1);
  EvalRequest req;
  req.metrics = NameList(L, 2, "kp.evaluate: metrics");
  if (req.metrics.empty()) return luaL_error(L, "kp.evaluate: no metric given");
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, 3) != 0) {
      if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TTABLE) {
        return luaL_error(L, "kp.evaluate: params must map metric names to tables of parameters");
      }
      const std::string metric = lua_tostring(L, -2);
      lua_pushnil(L);
      while (lua_next(L, -2) != 0) {
        if (lua_type(L, -2) != LUA_TSTRING) return luaL_error(L, "kp.evaluate: params.%s has a non-string key", metric.c_str());
        const std::string name = lua_tostring(L, -2);
        std::string value;
        if (lua_type(L, -1) == LUA_TBOOLEAN) {
          value = lua_toboolean(L, -1) ? "true" : "false";
        } else if (lua_type(L, -1) == LUA_TNUMBER || lua_type(L, -1) == LUA_TSTRING) {
          lua_pushvalue(L, -1);
          std::size_t n = 0;
          const char* s = lua_tolstring(L, -1, &n);
          value = std::string(s, n);  // NUL bytes kept: a path with one is refused, not cut at it
          lua_pop(L, 1);
        } else {
          return luaL_error(L, "kp.evaluate: params.%s.%s must be a number, string or boolean", metric.c_str(),
                            name.c_str());
        }
        if (Status st = AddParam(req.params, metric, name, std::move(value)); !st.ok()) {
          return luaL_error(L, "kp.evaluate: %s", st.message().c_str());
        }
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
  }
  std::optional<std::string> db;
  req.system = "lua";
  if (!lua_isnoneornil(L, 4)) {
    luaL_checktype(L, 4, LUA_TTABLE);
    CheckKeys(L, 4, "kp.evaluate: opts", {"system", "db", "model", "plugins", "threads", "verify_docs", "random_seed"});
    auto opt = [&](const char* k) { return StringField(L, 4, k); };
    if (auto v = opt("system")) req.system = *v;
    if (auto v = opt("model")) req.model = *v;
    lua_getfield(L, 4, "threads");
    if (!lua_isnil(L, -1)) {
      // As the command line's --threads (0: one per core): "abc" or -1 is an error, not 0 or a clamp.
      if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0 || lua_tointeger(L, -1) > kMaxThreads) {
        return luaL_error(L, "kp.evaluate: opts.threads must be an integer from 0 (one per core) to %d", kMaxThreads);
      }
      req.threads = static_cast<int>(lua_tointeger(L, -1));
    }
    lua_pop(L, 1);
    // Integers checked here: a fraction or a string would otherwise run with a setting nobody asked for.
    auto integer = [&](const char* k, lua_Integer lo, lua_Integer hi, lua_Integer def) {
      const int t = lua_getfield(L, 4, k);
      if (t == LUA_TNIL) {
        lua_pop(L, 1);
        return def;
      }
      if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < lo || lua_tointeger(L, -1) > hi) {
        // A number is shown (no metamethod runs for one); anything else by its type.
        const std::string got = t == LUA_TNUMBER ? fmt::format("{}", lua_tonumber(L, -1)) : luaL_typename(L, -1);
        luaL_error(L, "kp.evaluate: opts.%s must be an integer from %I to %I (got %s)", k, static_cast<LUAI_UACINT>(lo),
                   static_cast<LUAI_UACINT>(hi), got.c_str());
      }
      const lua_Integer v = lua_tointeger(L, -1);
      lua_pop(L, 1);
      return v;
    };
    req.verify_docs = static_cast<int>(integer("verify_docs", 0, kMaxVerifyDocs, kDefaultVerifyDocs));
    req.random_seed = static_cast<std::uint64_t>(integer("random_seed", 0, LUA_MAXINTEGER, 0));
    db = opt("db");
    if (lua_getfield(L, 4, "plugins") == LUA_TTABLE) {
      const lua_Integer n = luaL_len(L, -1);
      for (lua_Integer i = 1; i <= n; ++i) {
        lua_rawgeti(L, -1, i);
        if (lua_isstring(L, -1)) {
          // Plugins are code the run executes: their directories are under the read grants too.
          CheckAccess("kp.evaluate: opts.plugins", lua_tostring(L, -1), FileAccess::kRead);
          req.plugin_dirs.emplace_back(lua_tostring(L, -1));
        }
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  if (db && *db != ":memory:") CheckAccess("kp.evaluate: opts.db", *db, FileAccess::kWrite);
  req.profile = corpus->profile.name;
  // No db: the phrase cache is the user's default store (EvaluateCorpus opens it in the user's context).
  req.cache_db = db.value_or("");
  // The seam every front-end calls (eval_store.h): a run whose plugin fails is recorded as failed in the
  // db, as `kplab eval` records it, before the error is raised.
  std::optional<PathSink> sink;
  if (db) sink.emplace(*db);
  auto stored = EvaluateAndStore(req, corpus, sink ? &*sink : nullptr);
  if (!stored) return luaL_error(L, "kp.evaluate: %s", stored.error().message.c_str());
  const EvalResult* res = &stored->result;
  std::optional<std::int64_t> run_id;
  if (db) run_id = stored->run_id;
  lua_createtable(L, 0, 4);
  if (run_id) {
    lua_pushinteger(L, *run_id);
    lua_setfield(L, -2, "run_id");
  }
  lua_createtable(L, 0, static_cast<int>(res->aggregates.size()));
  for (const AggregateValue& a : res->aggregates) SetNumber(L, a.metric.c_str(), a.value);
  lua_setfield(L, -2, "aggregates");
  lua_createtable(L, 0, static_cast<int>(res->scores.metrics.size()));
  for (std::size_t m = 0; m < res->scores.metrics.size(); ++m) {
    const auto& col = res->scores.columns[m];
    lua_createtable(L, static_cast<int>(col.size()), 0);
    for (std::size_t i = 0; i < col.size(); ++i) {
      lua_pushnumber(L, col[i]);
      lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
    }
    lua_setfield(L, -2, res->scores.metrics[m].c_str());
  }
  lua_setfield(L, -2, "columns");
  lua_createtable(L, static_cast<int>(corpus->docs.size()), 0);
  for (std::size_t i = 0; i < corpus->docs.size(); ++i) {
    lua_pushlstring(L, corpus->docs[i].id.data(), corpus->docs[i].id.size());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  lua_setfield(L, -2, "doc_ids");
  return 1;
}

// kp.runs.table{metrics = "a,b" or {...}, baseline=, system=, dataset=, profile=, runs = {ids},
// resamples=, seed=, db=, format = nil | "table" | "markdown" | "latex" | "csv" | "json", decimals=,
// fraction=, labels = {[name] = text}, layout=, fit=, float=, caption=} -> {columns = {{dataset=,
// metric=}...}, rows = {{system=, cells = {{mean=, sd=, n=, best=, p=, p_holm=, significant=} or false,
// ...}}, ...}, family=, text = the rendered table when format given}. The options are `kplab runs table`'s
// (docs/tables.md), set through the same setters (host/table.h); an unknown key is an error naming them.
// The table as kp.runs.table returns it (without the text).
void PushTable(lua_State* L, const Table& t) {
  lua_createtable(L, 0, 5);
  lua_createtable(L, static_cast<int>(t.columns.size()), 0);
  for (std::size_t c = 0; c < t.columns.size(); ++c) {
    lua_createtable(L, 0, 2);
    SetString(L, "dataset", t.columns[c].dataset);
    SetString(L, "metric", t.columns[c].metric);
    lua_rawseti(L, -2, static_cast<lua_Integer>(c + 1));
  }
  lua_setfield(L, -2, "columns");
  lua_createtable(L, static_cast<int>(t.systems.size()), 0);
  for (std::size_t r = 0; r < t.systems.size(); ++r) {
    lua_createtable(L, 0, 2);
    SetString(L, "system", t.systems[r]);
    lua_createtable(L, static_cast<int>(t.columns.size()), 0);
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
      const TableCell& cell = t.cells[r][c];
      if (!cell.present) {
        lua_pushboolean(L, 0);
      } else {
        lua_createtable(L, 0, 7);
        SetNumber(L, "mean", cell.mean);
        SetNumber(L, "sd", cell.sd);
        lua_pushinteger(L, cell.n);
        lua_setfield(L, -2, "n");
        lua_pushboolean(L, cell.best);
        lua_setfield(L, -2, "best");
        if (cell.tested) {
          SetNumber(L, "p", cell.p);
          SetNumber(L, "p_holm", cell.p_holm);
          lua_pushboolean(L, cell.significant);
          lua_setfield(L, -2, "significant");
        }
      }
      lua_rawseti(L, -2, static_cast<lua_Integer>(c + 1));
    }
    lua_setfield(L, -2, "cells");
    lua_rawseti(L, -2, static_cast<lua_Integer>(r + 1));
  }
  lua_setfield(L, -2, "rows");
  lua_pushinteger(L, static_cast<lua_Integer>(t.family));
  lua_setfield(L, -2, "family");
}

RenderOptions RunsTableRender(lua_State* L) {
  const OptionSpelling spell{"", "format"};
  auto check = [&](const Status& st) {
    if (!st.ok()) luaL_error(L, "kp.runs.table: %s", st.error().message.c_str());
  };
  RenderOptions ro;
  if (auto format = StringField(L, 1, "format")) {
    ro.format = *format;
    if (ro.format != "table" && ro.format != "markdown" && ro.format != "latex" && ro.format != "csv" && ro.format != "json") {
      luaL_error(L, "kp.runs.table: format must be table, markdown, latex, csv or json (got '%s')", format->c_str());
    }
  }
  lua_getfield(L, 1, "decimals");
  if (!lua_isnil(L, -1)) {
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0 || lua_tointeger(L, -1) > 9) {
      luaL_error(L, "kp.runs.table: decimals must be an integer from 0 to 9");
    }
    ro.decimals = static_cast<int>(lua_tointeger(L, -1));
  }
  lua_pop(L, 1);
  auto flag = [&](const char* k) {
    lua_getfield(L, 1, k);
    if (!lua_isnil(L, -1) && !lua_isboolean(L, -1)) {
      luaL_error(L, "kp.runs.table: %s must be a boolean (got %s)", k, luaL_typename(L, -1));
    }
    const bool on = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return on;
  };
  ro.percent = !flag("fraction");
  ro.fit = flag("fit");
  if (lua_getfield(L, 1, "labels") != LUA_TNIL) {
    if (!lua_istable(L, -1)) luaL_error(L, "kp.runs.table: labels must be a table {[name] = text}");
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING) {
        luaL_error(L, "kp.runs.table: labels must map names to texts (got a %s key with a %s value)",
                   luaL_typename(L, -2), luaL_typename(L, -1));
      }
      check(SetLabel(ro, lua_tostring(L, -2), lua_tostring(L, -1), spell));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  if (auto v = StringField(L, 1, "layout")) check(SetLayout(ro, *v, spell));
  if (auto v = StringField(L, 1, "float")) check(SetFloat(ro, *v, spell));
  if (auto v = StringField(L, 1, "caption")) ro.caption = *v;
  check(CheckRenderShape(ro, spell));
  return ro;
}

int RunsTable(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  CheckKeys(L, 1, "kp.runs.table",
            {"metrics", "runs", "baseline", "system", "dataset", "profile", "resamples", "seed", "db", "format",
             "decimals", "fraction", "labels", "layout", "fit", "float", "caption"});
  auto field = [&](const char* k) { return StringField(L, 1, k); };
  lua_getfield(L, 1, "format");
  const bool render = !lua_isnil(L, -1);
  lua_pop(L, 1);
  for (const char* k : {"decimals", "fraction", "labels", "layout"}) {
    lua_getfield(L, 1, k);
    const bool given = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (given && !render) return luaL_error(L, "kp.runs.table: %s shapes the text: add format", k);
  }
  const RenderOptions ro = RunsTableRender(L);
  TableOptions opt;
  lua_getfield(L, 1, "metrics");
  if (!lua_isnil(L, -1)) opt.metrics = NameList(L, lua_gettop(L), "kp.runs.table: metrics");
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "runs") == LUA_TTABLE) {
    const lua_Integer n = luaL_len(L, -1);
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_rawgeti(L, -1, i);
      if (!lua_isinteger(L, -1)) return luaL_error(L, "kp.runs.table: runs[%d] must be a run id", static_cast<int>(i));
      opt.runs.push_back(lua_tointeger(L, -1));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  opt.baseline = field("baseline");
  opt.system = field("system");
  opt.dataset = field("dataset");
  opt.profile = field("profile");
  lua_getfield(L, 1, "resamples");
  if (!lua_isnil(L, -1)) {
    // As the command line's --resamples: an integer from 100 to 10,000,000 (the tests run natively).
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 100 || lua_tointeger(L, -1) > 10000000) {
      return luaL_error(L, "kp.runs.table: resamples must be an integer from 100 to 10000000");
    }
    opt.resamples = static_cast<int>(lua_tointeger(L, -1));
  }
  lua_pop(L, 1);
  lua_getfield(L, 1, "seed");
  if (!lua_isnil(L, -1)) {
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0) return luaL_error(L, "kp.runs.table: seed must be an integer >= 0");
    opt.seed = static_cast<std::uint64_t>(lua_tointeger(L, -1));
  }
  lua_pop(L, 1);
  if (auto db = field("db")) {
    lua_pushstring(L, db->c_str());
  } else {
    lua_pushnil(L);
  }
  RunStore store = OpenStore(L, lua_gettop(L), "kp.runs.table");
  lua_pop(L, 1);
  opt.charge = [L](double steps) { ChargeNative(L, steps); };  // the randomization tests run natively
  auto t = BuildTable(store, opt);
  if (!t) return luaL_error(L, "kp.runs.table: %s", t.error().message.c_str());
  if (render) {
    if (Status st = CheckRenderOptions(*t, ro, OptionSpelling{"", "format"}); !st.ok()) {
      return luaL_error(L, "kp.runs.table: %s", st.error().message.c_str());
    }
  }
  PushTable(L, *t);
  if (render) SetString(L, "text", RenderTable(*t, ro));
  return 1;
}

// kp.write(path, text): writes the whole text to a temporary file beside path, then renames it over
// path, so a reader never sees half a file; missing parent directories are created.
int Write(lua_State* L) {
  const std::string_view name = PathArg(L, 1);
  std::size_t n = 0;
  const char* text = luaL_checklstring(L, 2, &n);
  CheckAccess("kp.write", name, FileAccess::kWrite);
  const fs::path path(name);
  std::error_code ec;
  // The file is replaced by a rename: only a regular file may be replaced (not a device such as
  // /dev/null, a FIFO, a directory or a symbolic link, which rename would destroy).
  if (const auto st = fs::symlink_status(path, ec); !ec && fs::exists(st) && !fs::is_regular_file(st)) {
    return luaL_error(L, "kp.write: %s: not a regular file (expected a file path to create or replace)", path.c_str());
  }
  ec.clear();
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (ec) return luaL_error(L, "kp.write: %s: cannot create directory (%s)", path.parent_path().c_str(), ec.message().c_str());
  const fs::path tmp = path.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return luaL_error(L, "kp.write: %s: cannot open for writing (%s)", tmp.c_str(), std::strerror(errno));
    out.write(text, static_cast<std::streamsize>(n));
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      return luaL_error(L, "kp.write: %s: write failed", path.c_str());
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return luaL_error(L, "kp.write: %s: cannot rename into place", path.c_str());
  }
  return 0;
}

// kp.read(path) -> the file's bytes, or nil and a message (no such file, not a regular file, ...).
// A path outside the grants is an error, not a nil.
int Read(lua_State* L) {
  const std::string path(PathArg(L, 1));
  CheckAccess("kp.read", path, FileAccess::kRead);
  Result<std::string> bytes = ReadRegularFile(path, "a readable regular file");
  if (!bytes) {
    lua_pushnil(L);
    lua_pushstring(L, bytes.error().message.c_str());
    return 2;
  }
  lua_pushlstring(L, bytes->data(), bytes->size());
  return 1;
}

// kp.include(name) -> what the Lua file `name` (relative to the running script's directory) returns;
// it runs in the script's own environment, with errors as "dir/name.lua:LINE: ...".
int Include(lua_State* L) {
  const std::string name(PathArg(L, 1));
  lua_rawgetp(L, LUA_REGISTRYINDEX, &kDirKey);
  const fs::path dir = lua_isstring(L, -1) ? lua_tostring(L, -1) : ".";
  lua_pop(L, 1);
  const fs::path path = fs::path(name).is_absolute() ? fs::path(name) : dir / name;
  // The script's own directory is readable for its includes even when it is not granted.
  std::shared_ptr<const FileGrants> grants = CurrentFileGrants();
  if (Result<std::string> own_dir = ResolvePath(dir.native()); own_dir && grants->confined()) {
    auto with_dir = std::make_shared<FileGrants>(*grants);
    with_dir->read.push_back(*own_dir);
    grants = std::move(with_dir);
  }
  FileScope scope(grants);
  CheckAccess("kp.include", path.native(), FileAccess::kRead);
  Result<std::string> bytes = ReadRegularFile(path, "a Lua file");
  if (!bytes) throw std::runtime_error("kp.include: " + bytes.error().message);
  const std::string& src = *bytes;
  const std::string chunk = "@" + path.lexically_normal().string();
  if (luaL_loadbufferx(L, src.data(), src.size(), chunk.c_str(), "t") != LUA_OK) return lua_error(L);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &kEnvKey);
  if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);  // the chunk's _ENV
  lua_call(L, 0, 1);
  return 1;
}

}  // namespace

Result<FileGrants> MakeFileGrants(const std::vector<std::string>& allow_read,
                                  const std::vector<std::string>& allow_write, const std::string& store) {
  FileGrants grants = FileGrants::Script();
  auto add = [](const std::string& option, const std::string& path, std::vector<std::string>& to) -> Status {
    Result<std::string> resolved = ResolvePath(path);
    if (!resolved)
      return Error(resolved.error().kind,
                   option + ": " + path.substr(0, path.find('\0')) + ": " + resolved.error().message);
    to.push_back(*resolved);
    return Status::Ok();
  };
  if (Status st = add("current directory", ".", grants.write); !st) return st.error();
  for (const auto& dir : allow_read) {
    if (Status st = add("--allow-read", dir, grants.read); !st) return st.error();
  }
  for (const auto& dir : allow_write) {
    if (Status st = add("--allow-write", dir, grants.write); !st) return st.error();
  }
  // The user named this store (in the environment, or the REPL's --db): kp.runs.* may read it wherever
  // it is, with the side files the store's checks look at (store_internal::CheckStorePath).
  auto add_store = [&](const std::string& option, const std::string& db) -> Status {
    if (db.empty() || db == ":memory:") return Status::Ok();
    for (const char* side : {"", "-wal", "-shm", "-journal"}) {
      if (Status st = add(option, db + side, grants.read); !st) return st;
    }
    return Status::Ok();
  };
  if (const char* db = std::getenv("KPLAB_DB"); db != nullptr) {
    if (Status st = add_store("$KPLAB_DB", db); !st) return st.error();
  }
  if (Status st = add_store("--db", store); !st) return st.error();
  return grants;
}

namespace {
// The existing paths among args (a --opt=VALUE gives its VALUE), resolved.
std::vector<std::string> ExistingPaths(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& a : args) {
    const std::string p = a.starts_with("--") && a.find('=') != std::string::npos ? a.substr(a.find('=') + 1) : a;
    std::error_code ec;
    if (p.empty() || p.find('\0') != std::string::npos || !fs::exists(p, ec)) continue;
    if (Result<std::string> r = ResolvePath(p)) out.push_back(*std::move(r));
  }
  return out;
}
}  // namespace

void GrantNamedPaths(FileGrants& grants, const std::vector<std::string>& args) {
  if (!grants.confined()) return;
  for (std::string& p : ExistingPaths(args)) grants.read.push_back(std::move(p));
}

void GrantNamedPaths(LuaVm& vm, const std::vector<std::string>& paths) {
  const std::shared_ptr<const FileGrants> now = vm.file_grants();
  if (now == nullptr || !now->confined()) return;
  auto more = std::make_shared<FileGrants>(*now);
  for (std::string& p : ExistingPaths(paths)) more->read.push_back(std::move(p));
  std::shared_ptr<const FileGrants> shared = std::move(more);
  lua_State* L = vm.state();
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kGrantsKey) == LUA_TUSERDATA) {
    static_cast<GrantsBox*>(lua_touserdata(L, -1))->grants = shared;
  }
  lua_pop(L, 1);
  vm.SetFileGrants(std::move(shared));
}

void InstallScriptApi(LuaVm& vm, const std::string& script_path, const FileGrants& grants) {
  lua_State* L = vm.state();
  const std::string dir = fs::path(script_path).parent_path().string();
  lua_pushstring(L, dir.empty() ? "." : dir.c_str());
  lua_rawsetp(L, LUA_REGISTRYINDEX, &kDirKey);
  auto shared = std::make_shared<const FileGrants>(grants);
  new (lua_newuserdatauv(L, sizeof(GrantsBox), 0)) GrantsBox{shared};
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, GrantsBoxGc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &kGrantsKey);
  vm.SetFileGrants(std::move(shared));
  vm.Install(&InstallScriptModule);
}

void InstallScriptModule(lua_State* L) {  // [kp]
  lua_pushcfunction(L, Safe<InGrants<LuaLoad>>);
  lua_setfield(L, -2, "load");
  lua_pushcfunction(L, Safe<InGrants<Write>>);
  lua_setfield(L, -2, "write");
  lua_pushcfunction(L, Safe<InGrants<Read>>);
  lua_setfield(L, -2, "read");
  lua_pushcfunction(L, Safe<InGrants<Include>>);
  lua_setfield(L, -2, "include");
  lua_pushcfunction(L, Safe<InGrants<LuaEvaluate>>);
  lua_setfield(L, -2, "evaluate");
  lua_createtable(L, 0, 3);
  lua_pushcfunction(L, Safe<InGrants<RunsTable>>);
  lua_setfield(L, -2, "table");
  lua_pushcfunction(L, Safe<InGrants<RunsList>>);
  lua_setfield(L, -2, "list");
  lua_pushcfunction(L, Safe<InGrants<RunsGet>>);
  lua_setfield(L, -2, "get");
  lua_setfield(L, -2, "runs");
}

lua_CFunction KpLoadFunction() { return Safe<LuaLoad>; }

void PushScriptEnv(LuaVm& vm, const std::string& script_path, const FileGrants& grants) {
  InstallScriptApi(vm, script_path, grants);
  lua_State* L = vm.state();
  vm.PushSandboxEnv(script_path);  // [env]
  SetScriptEnv(L);
  // Scripts (unlike metric plugins) may print.
  lua_pushstring(L, "print");
  lua_pushcfunction(L, LuaPrint);
  lua_rawset(L, -3);
}

void SetScriptEnv(lua_State* L) {
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &kEnvKey);
}

}  // namespace kplab::host
