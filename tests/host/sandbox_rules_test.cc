// Rules of the sandbox checked over the whole host code base, not one path at a time
// (docs/design-notes.md, "Bounded walks" and "Metered entries"):
// - every recursive walk over Lua values enters its levels through WalkLevel (a depth limit, room on
//   the Lua stack);
// - host code calls into a script's values (metamethods, iterators, __tostring) only through
//   LuaVm::Call, and reads them raw elsewhere;
// - every C function a sandboxed script can reach is listed, with its cost bound, in the one table of
//   host/lua/costs.cc;
// - the bounded string.rep and table functions give Lua's own results and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <lua.hpp>

#include "bindings.h"
#include "columns.h"
#include "lua_util.h"
#include "costs.h"
#include "kplab/embedding_plan.h"
#include "evaluate.h"
#include "kplab/corpus.h"
#include "lua_script.h"
#include "lua_stdlib.h"
#include "pair_index.h"
#include "plugin.h"
#include "repl.h"
#include "source_scan.h"

namespace kplab::test {
namespace {

namespace fs = std::filesystem;

std::string Body(const SourceFile& f, const SourceFunction& fn) { return f.blank.substr(fn.begin, fn.end - fn.begin); }

bool UsesLuaApi(const std::string& body) {
  static const std::regex api(R"(\blua[L]?_\w+\s*\()");
  return std::regex_search(body, api);
}

// ---- bounded walks -----------------------------------------------------------------------------------

// Recursion that is not a walk over Lua values, with the bound it has instead.
const std::map<std::string, std::string> kNotAWalk = {
    {"host/lua/lua_pattern.cc:Match",
     "the pattern matcher recurses over the pattern and subject strings, bounded by its own depth limit "
     "(kMaxDepth 200, Lua's 'pattern too complex') and charged per step"},
    {"host/lua/lua_pattern.cc:OpenCapture", "part of the pattern matcher's recursion (see Match)"},
    {"host/lua/lua_pattern.cc:CloseCapture", "part of the pattern matcher's recursion (see Match)"},
    {"host/engine/columns.cc:AddAggregate", "two overloads, one calling the other: no recursion"},
    {"host/lua/sandbox.cc:CFunctionState",
     "recurses over the upvalues of host C closures only (a script cannot make one), at most 4 levels of one "
     "slot each, inside LUA_MINSTACK"},
};

struct Recursion {
  std::string where;  // "host/lua/sandbox.cc:CheckPlainDataAt"
  bool guarded = false;
};

// The functions of `file` that take part in recursion (directly, or through other functions of the
// file) over the Lua API, and whether the cycle passes through a WalkLevel.
std::vector<Recursion> RecursiveFunctions(const SourceFile& file) {
  std::map<std::string, std::string> bodies;  // name -> bodies of all its overloads
  for (const auto& fn : file.functions) bodies[fn.name] += Body(file, fn) + "\n";
  std::map<std::string, std::set<std::string>> callees;
  for (const auto& [name, body] : bodies) {
    for (const auto& [other, _] : bodies) {
      if (Calls(body, other)) callees[name].insert(other);
    }
  }
  auto guarded = [&](const std::string& name) { return bodies[name].find("WalkLevel ") != std::string::npos; };
  // Reachable from `from` to `to` through functions that are not guarded (a guarded function stops a
  // cycle from being unbounded).
  auto reaches = [&](const std::string& from, const std::string& to, bool through_guards) {
    std::set<std::string> seen;
    std::vector<std::string> todo(callees[from].begin(), callees[from].end());
    while (!todo.empty()) {
      const std::string n = todo.back();
      todo.pop_back();
      if (n == to) return true;
      if (!seen.insert(n).second || (!through_guards && guarded(n))) continue;
      for (const auto& c : callees[n]) todo.push_back(c);
    }
    return false;
  };
  std::vector<Recursion> out;
  for (const auto& [name, body] : bodies) {
    if (!UsesLuaApi(body) || !reaches(name, name, true)) continue;
    out.push_back({file.path + ":" + name, guarded(name) || !reaches(name, name, false)});
  }
  // Recursive lambdas: std::function<...> name = [...](...) { ... name(...) ... };
  static const std::regex lambda(R"(std::function<[^;]*>\s+(\w+)\s*=\s*\[)");
  for (auto it = std::sregex_iterator(file.blank.begin(), file.blank.end(), lambda); it != std::sregex_iterator(); ++it) {
    const std::size_t open = file.blank.find('{', static_cast<std::size_t>(it->position(0)));
    int depth = 0;
    std::size_t end = open;
    for (; end < file.blank.size(); ++end) {
      if (file.blank[end] == '{') ++depth;
      if (file.blank[end] == '}' && --depth == 0) break;
    }
    const std::string body = file.blank.substr(open, end - open);
    if (UsesLuaApi(body) && Calls(body, (*it)[1])) {
      out.push_back({file.path + ":" + std::string((*it)[1]) + " (lambda)", body.find("WalkLevel ") != std::string::npos});
    }
  }
  return out;
}

TEST(BoundedWalksRule, EveryRecursiveWalkOverLuaValuesEntersItsLevelsThroughWalkLevel) {
  std::vector<std::string> unguarded, found;
  for (const SourceFile& file : ReadSources(KPLAB_SOURCE_DIR, "host")) {
    for (const Recursion& r : RecursiveFunctions(file)) {
      found.push_back(r.where);
      if (!r.guarded && !kNotAWalk.count(r.where)) unguarded.push_back(r.where);
    }
  }
  // The scanner sees the walks known today (a scanner that found nothing would pass everything).
  for (const char* known : {"host/lua/sandbox.cc:PushDeepProxy", "host/lua/sandbox.cc:CheckPlainDataAt",
                            "host/lua/sandbox.cc:CheckReachable", "host/lua/sandbox.cc:FreezeFunction",
                            "host/lua/sandbox.cc:CFunctionState", "host/repl/pretty.cc:RenderTable",
                            "host/repl/pretty.cc:Render", "host/lua/lua_pattern.cc:Match"}) {
    EXPECT_NE(std::find(found.begin(), found.end(), known), found.end()) << known << " not found by the scanner";
  }
  for (const auto& [where, why] : kNotAWalk) {
    EXPECT_NE(std::find(found.begin(), found.end(), where), found.end()) << "stale exception " << where;
  }
  std::string list;
  for (const auto& u : unguarded) list += "  " + u + "\n";
  EXPECT_TRUE(unguarded.empty()) << "recursive walks over Lua values without a WalkLevel (sandbox.h): a value nested "
                                    "deep enough overflows the Lua or C stack\n"
                                 << list;
}

// ---- metered entries ---------------------------------------------------------------------------------

// The C API calls that run a script's code when given a script's value: calls, and reads or writes
// that go through metamethods (__index, __newindex, __len, __eq, __lt, __le, __tostring, __pairs).
const std::regex kEntry(R"(\b(lua_pcallk?|lua_callk?|luaL_tolstring|luaL_callmeta|lua_getfield|lua_gettable|lua_geti|)"
                        R"(lua_settable|lua_seti|lua_len|luaL_len|lua_compare|lua_next)\s*\()");

// A lua_CFunction runs inside whatever called it: in a sandbox, inside LuaVm::Call, whose hook meters
// every metamethod it reaches. Its entries need no listing.
bool IsLuaCFunction(const SourceFile& file, const SourceFunction& fn) {
  static const std::regex sig(R"(^\w+\s*\(\s*lua_State\s*\*\s*\w*\s*\)\s*$)");
  if (!std::regex_match(fn.signature, sig)) return false;
  // The return type, before the (possibly qualified) name: "int", "int Repl::".
  std::size_t line_start = file.blank.rfind('\n', fn.begin - fn.signature.size());
  line_start = line_start == std::string::npos ? 0 : line_start + 1;
  const std::string before = file.blank.substr(line_start, fn.begin - fn.signature.size() - line_start);
  static const std::regex int_return(R"(\bint\s+(\w+::)?$)");
  return std::regex_search(before, int_return);
}

// Functions of host code that are not lua_CFunctions and use the calls above, with why each is safe:
// what they touch is the host's own (tables it made, its registry, its API tables), or they run inside
// a metered call. "file:function".
const std::map<std::string, std::string> kEntriesAllowed = {
    {"host/lua/sandbox.cc:Call", "the one metered call: lua_pcall under the count hook, budgets and deadlines"},
    // lua_next runs no script code (it is raw); iterating a script's table is O(its size), which the memory
    // cap bounds.
    {"host/engine/plugin.cc:ReadNeeds", "lua_next (raw) over the needs list"},
    {"host/engine/plugin.cc:ReadStringList", "lua_next (raw) over a declared list"},
    {"host/engine/plugin.cc:UnknownField", "lua_next (raw) over the declaration, copied without its metatable"},
    {"host/engine/plugin.cc:ReadDeclaredParams",
     "lua_next (raw) over the declaration's params, copied without its metatable"},
    {"host/engine/plugin.cc:LoadMetricPlugin", "lua_next (raw) to copy the declaration without its metatable"},
    {"host/engine/runner.cc:ScoreDocumentV1", "lua_next (raw) over the table score returned"},
    {"host/engine/runner.cc:ScoreDocumentV2", "lua_next (raw) over out, after the metered call"},
    {"host/lua/sandbox.cc:FreezeTableFields", "lua_next (raw) over ctx, a table the host built"},
    {"host/lua/sandbox.cc:GiveOwnRandom", "lua_next (raw) over the math library, the host's own table"},
    {"host/lua/lua_util.h:DefineMetatable", "lua_getfield on the registry, the host's own table"},
    {"host/engine/runner.cc:CallAggregateV1", "lua_next (raw) over the table aggregate returned"},
    {"host/lua/lua_params.cc:ReadFields", "lua_next (raw) over a parameter declaration"},
    {"host/lua/sandbox.cc:PushDeepProxy", "lua_next (raw) over the table being proxied"},
    {"host/lua/sandbox.cc:CheckReachable", "lua_next (raw) in the freeze's walk"},
    {"host/lua/sandbox.cc:CheckPlainDataAt", "lua_next (raw) in the plain-data walk"},
    {"host/lua/sandbox.cc:FreezeState", "lua_next (raw) over the plugin's environment"},
    {"host/lua/sandbox.cc:PushSandboxEnv", "lua_next and lua_getfield over the host's own registry tables"},
    // Inside a metered call.
    {"host/lua/lua_plot.cc:OnlyFields", "a kp.plot binding's option table, read inside the metered call"},
    {"host/lua/lua_util.h:Get", "OptionReader: a binding's option table, read inside the metered call"},
    // The host's own values.
    {"host/lua/lua_util.h:PushMethod", "the registry's method table of a kplab type"},
    {"host/lua/sandbox.cc:LuaVm", "the VM's own string library, before any script runs"},
    {"host/lua/sandbox.cc:Install", "the registry's kp table"},
    {"host/lua/sandbox.cc:CheckState", "the freeze's own record table"},
    {"host/luamod/lua_module.cc:luaL_len", "the Lua module's definition of luaL_len for stock interpreters"},
    {"host/luamod/lua_module.cc:(file scope)", "the Lua module's declaration of luaL_len"},
};

// The functions of `file` that run only inside lua_CFunctions: not declared in a header (so no other
// file calls them), called in this file, and only by lua_CFunctions or by other such functions.
std::set<std::string> BindingOnly(const SourceFile& file, const std::string& headers) {
  std::map<std::string, std::string> bodies;
  std::set<std::string> cfunctions, names;
  for (const auto& fn : file.functions) {
    bodies[fn.name] += Body(file, fn) + "\n";
    names.insert(fn.name);
    if (IsLuaCFunction(file, fn)) cfunctions.insert(fn.name);
  }
  // The greatest set: start from every candidate and drop those with a caller outside the set, so that
  // helpers calling each other (a recursive printer) stay in when every way in is a lua_CFunction.
  std::set<std::string> only;
  for (const auto& name : names) {
    if (!cfunctions.count(name) && (headers.find(name) == std::string::npos ||
                                    !std::regex_search(headers, std::regex("\\b" + name + "\\s*\\(")))) {
      only.insert(name);
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = only.begin(); it != only.end();) {
      bool called = false, all_bindings = true;
      for (const auto& [caller, body] : bodies) {
        if (caller == *it || !Calls(body, *it)) continue;
        called = true;
        all_bindings = all_bindings && (cfunctions.count(caller) || only.count(caller));
      }
      if (called && all_bindings) {
        ++it;
      } else {
        it = only.erase(it);
        changed = true;
      }
    }
  }
  return only;
}

TEST(MeteredEntriesRule, HostCodeCallsIntoScriptValuesOnlyThroughLuaVmCall) {
  std::vector<std::string> unlisted;
  std::set<std::string> used;
  const std::vector<SourceFile> files = ReadSources(KPLAB_SOURCE_DIR, "host");
  std::map<std::string, std::string> headers;  // file name -> blanked text
  for (const SourceFile& file : files) {
    if (file.path.ends_with(".h")) headers[fs::path(file.path).filename().string()] += file.blank;
  }
  static const std::regex include(R"re(#include "([^"]+)")re");
  for (const SourceFile& file : files) {
    // What other files can call: the declarations of the headers this file includes.
    std::string declared;
    for (auto it = std::sregex_iterator(file.text.begin(), file.text.end(), include); it != std::sregex_iterator(); ++it) {
      const std::string name = fs::path((*it)[1].str()).filename().string();
      if (headers.count(name)) declared += headers[name];
    }
    const std::set<std::string> binding_only = BindingOnly(file, declared);
    for (auto it = std::sregex_iterator(file.blank.begin(), file.blank.end(), kEntry); it != std::sregex_iterator();
         ++it) {
      const std::size_t at = static_cast<std::size_t>(it->position(0));
      const SourceFunction* fn = file.FunctionAt(at);
      if (fn != nullptr && (IsLuaCFunction(file, *fn) || binding_only.count(fn->name))) continue;
      const std::string key = file.path + ":" + (fn != nullptr ? fn->name : "(file scope)");
      if (kEntriesAllowed.count(key)) {
        used.insert(key);
        continue;
      }
      unlisted.push_back(fmt::format("{}:{}: {} in {}", file.path, file.LineOf(at), (*it)[1].str(),
                                     fn != nullptr ? fn->name : "(file scope)"));
    }
  }
  std::string list;
  for (const auto& u : unlisted) list += "  " + u + "\n";
  EXPECT_TRUE(unlisted.empty())
      << "calls that may run a script's metamethods outside LuaVm::Call (read script values raw, or call "
         "through LuaVm::Call; if the value is the host's own, list the function in kEntriesAllowed with why):\n"
      << list;
  for (const auto& [key, why] : kEntriesAllowed) EXPECT_TRUE(used.count(key)) << "stale entry " << key;
}

// ---- the cost table -----------------------------------------------------------------------------------

// Every C function reachable from a value: table fields (through kplab's read-only proxies to what they
// show), metatables (the C API sees through __metatable), upvalues of C closures. Names are the paths a
// script would write ("kp.stats.mean", "string.rep"), "Type:method" and "Type.__len" for userdata,
// "(proxy).__newindex" for the metatables kplab's tables share, NAME^i for the i-th upvalue.
class CFunctionWalk {
 public:
  explicit CFunctionWalk(lua_State* L) : L_(L) {}

  void Walk(int idx, const std::string& path) {
    idx = lua_absindex(L_, idx);
    luaL_checkstack(L_, 8, "walk");
    switch (lua_type(L_, idx)) {
      case LUA_TFUNCTION: {
        if (!lua_iscfunction(L_, idx)) return;
        if (!Visit(idx)) {
          found_[lua_tocfunction(L_, idx)].insert(path);
          return;
        }
        found_[lua_tocfunction(L_, idx)].insert(path);
        for (int i = 1; lua_getupvalue(L_, idx, i) != nullptr; ++i) {
          Walk(-1, path + "^" + std::to_string(i));
          lua_pop(L_, 1);
        }
        return;
      }
      case LUA_TTABLE:
        WalkTable(idx, path);
        return;
      case LUA_TUSERDATA:
        if (lua_getmetatable(L_, idx)) {
          WalkMetatable(lua_gettop(L_), TypeName(lua_gettop(L_), path));
          lua_pop(L_, 1);
        }
        return;
      default:
        return;
    }
  }

  // Every "kplab.*" userdata metatable of the registry (types no value of the walk reached too).
  void WalkRegistryTypes() {
    lua_pushnil(L_);
    while (lua_next(L_, LUA_REGISTRYINDEX) != 0) {
      if (lua_type(L_, -2) == LUA_TSTRING && lua_type(L_, -1) == LUA_TTABLE) {
        const std::string key = lua_tostring(L_, -2);
        lua_pushliteral(L_, "__name");
        const bool is_type = lua_rawget(L_, -2) == LUA_TSTRING && key == lua_tostring(L_, -1);
        lua_pop(L_, 1);
        if (is_type && key.starts_with("kplab.")) WalkMetatable(lua_gettop(L_), key.substr(6));
      }
      lua_pop(L_, 1);
    }
  }

  const std::map<lua_CFunction, std::set<std::string>>& found() const { return found_; }

 private:
  bool Visit(int idx) { return seen_.insert(lua_topointer(L_, idx)).second; }

  std::string TypeName(int mt, const std::string& fallback) {
    lua_pushliteral(L_, "__name");
    std::string name = lua_rawget(L_, mt) == LUA_TSTRING ? lua_tostring(L_, -1) : fallback;
    lua_pop(L_, 1);
    return name.starts_with("kplab.") ? name.substr(6) : name;
  }

  // A userdata's metatable: methods as Type:name, metamethods as Type.__name.
  void WalkMetatable(int mt, const std::string& type) {
    if (!Visit(mt)) return;
    lua_pushnil(L_);
    while (lua_next(L_, mt) != 0) {
      if (lua_type(L_, -2) == LUA_TSTRING) {
        const std::string key = lua_tostring(L_, -2);
        if (key == "__index" && lua_type(L_, -1) == LUA_TTABLE) {
          WalkFields(lua_gettop(L_), type + ":");
        } else {
          Walk(-1, type + "." + key);
        }
      }
      lua_pop(L_, 1);
    }
    // Methods found through a custom __index live in the registry's "kplab.TYPE.methods".
    lua_getfield(L_, LUA_REGISTRYINDEX, ("kplab." + type + ".methods").c_str());
    if (lua_type(L_, -1) == LUA_TTABLE) WalkFields(lua_gettop(L_), type + ":");
    lua_pop(L_, 1);
  }

  void WalkFields(int t, const std::string& prefix) {
    lua_pushnil(L_);
    while (lua_next(L_, t) != 0) {
      if (lua_type(L_, -2) == LUA_TSTRING) Walk(-1, prefix + lua_tostring(L_, -2));
      lua_pop(L_, 1);
    }
  }

  void WalkTable(int t, const std::string& path) {
    if (!Visit(t)) return;
    const std::string dot = path.empty() ? "" : path + ".";
    WalkFields(t, dot);
    if (!lua_getmetatable(L_, t)) return;
    const int mt = lua_gettop(L_);
    // kplab's proxies show a hidden table through __index: its fields are the proxy's.
    std::string kind = host::IsKplabProxy(L_, t) ? "(proxy)" : path.empty() ? "(globals)" : path + "(metatable)";
    lua_pushliteral(L_, "__index");
    if (lua_rawget(L_, mt) == LUA_TTABLE) {
      WalkTable(lua_gettop(L_), path);
    } else {
      Walk(-1, kind + ".__index");
    }
    lua_pop(L_, 1);
    lua_pushnil(L_);
    while (lua_next(L_, mt) != 0) {
      if (lua_type(L_, -2) == LUA_TSTRING && std::string_view(lua_tostring(L_, -2)) != "__index") {
        Walk(-1, kind + "." + lua_tostring(L_, -2));
      }
      lua_pop(L_, 1);
    }
    lua_pop(L_, 1);
  }

  lua_State* L_;
  std::set<const void*> seen_;
  std::map<lua_CFunction, std::set<std::string>> found_;
};

std::shared_ptr<const Corpus> TinyCorpus() {
  host::EvalRequest req;
  req.dataset_path = std::string(KPLAB_SOURCE_DIR) + "/examples/tiny";
  req.predictions_path = req.dataset_path + "/predictions.txt";
  auto corpus = host::LoadCorpus(req);
  if (!corpus) throw std::runtime_error(corpus.error().message);
  return std::make_shared<const Corpus>(std::move(*corpus));
}

// The functions a running script may receive besides its environment: the arguments the host passes
// (params, profile, ctx with its functions, documents, a corpus, columns, a column builder) and what
// the library's factories return (iterators, coroutine.wrap's function).
void PushRuntimeValues(lua_State* L, const std::shared_ptr<const Corpus>& corpus) {
  lua_newtable(L);  // [values]
  host::MetricPlugin plugin;
  plugin.params["k"] = 5.0;
  plugin.params["ks"] = std::string("5,M");
  plugin.param_specs["ks"].type = host::ParamType::kCutoffs;
  host::PushParams(L, plugin);
  lua_setfield(L, -2, "params");
  host::PushProfile(L, corpus->profile);
  lua_setfield(L, -2, "profile");
  auto space = std::make_shared<EmbeddingSpace>();
  space->dims = 2;
  host::SetEmbeddingSpace(L, space);
  lua_newtable(L);  // the ctx functions the host adds for a run with embeddings and pairs
  host::AddEmbeddingCtx(L);
  host::AddPairsCtx(L, corpus, std::make_shared<host::PairIndex>());
  lua_setfield(L, -2, "ctx");
  host::PushDocument(L, corpus, 0);
  lua_setfield(L, -2, "doc");
  host::PushCorpus(L, corpus);
  lua_setfield(L, -2, "corpus");
  static const std::vector<double> column = {1, 2};
  static const host::BorrowScope column_scope;  // alive for the process: the walk only lists functions
  host::PushColumn(L, &column, "all.x", column_scope);
  lua_setfield(L, -2, "column");
  lua_createtable(L, 1, 0);
  lua_pushnumber(L, 1);
  lua_rawseti(L, -2, 1);
  host::PushReadOnlyProxy(L, -1, "proxy");
  lua_remove(L, -2);
  lua_setfield(L, -2, "proxy");
}

// What the library's factories return, called in the environment at the top of the stack.
constexpr const char* kFactories = R"lua(
  local values = ...
  local out = {}
  out["ipairs()"] = ipairs({})
  out["pairs()"] = pairs({})
  out["string.gmatch()"] = string.gmatch("a", "a")
  out["utf8.codes()"] = utf8.codes("a")
  out["coroutine.wrap()"] = coroutine.wrap(function() end)
  out["params(metatable).__pairs()"] = pairs(values.params)
  out["(proxy).__pairs()"] = pairs(values.proxy)
  return out)lua";

std::map<lua_CFunction, std::set<std::string>> EnvironmentFunctions(const std::string& which) {
  host::LuaVm vm;
  lua_State* L = vm.state();
  host::InstallAll(vm);
  host::DefineColumnTypes(L);
  if (which == "plugin") {
    vm.PushSandboxEnv("probe");
  } else if (which == "script") {
    host::PushScriptEnv(vm, "probe.lua", host::FileGrants{});
  } else {
    host::PushReplEnv(vm, host::FileGrants{});
  }
  const int env = lua_gettop(L);
  CFunctionWalk walk(L);
  walk.Walk(env, "");
  walk.WalkRegistryTypes();
  PushRuntimeValues(L, TinyCorpus());
  const int values = lua_gettop(L);
  walk.Walk(values, "");
  if (luaL_loadstring(L, kFactories) != LUA_OK) throw std::runtime_error(lua_tostring(L, -1));
  lua_pushvalue(L, env);
  lua_setupvalue(L, -2, 1);
  lua_pushvalue(L, values);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) throw std::runtime_error(lua_tostring(L, -1));
  walk.Walk(-1, "");
  lua_settop(L, env - 1);
  return walk.found();
}

TEST(MeteredEntriesRule, EveryCFunctionInASandboxEnvironmentHasACostBound) {
  std::map<std::string, const host::CostEntry*> table;
  for (const host::CostEntry& e : host::CostTable()) {
    EXPECT_TRUE(table.emplace(std::string(e.name), &e).second) << "listed twice: " << e.name;
    EXPECT_FALSE(e.bound.empty()) << e.name;
  }
  std::set<std::string> reached;
  for (const char* which : {"plugin", "script", "repl"}) {
    std::string missing;
    for (const auto& [fn, paths] : EnvironmentFunctions(which)) {
      bool listed = false;
      for (const auto& p : paths) {
        if (table.count(p)) {
          listed = true;
          reached.insert(p);
        }
      }
      if (!listed) {
        std::string names;
        for (const auto& p : paths) names += (names.empty() ? "" : " = ") + p;
        missing += "  " + names + "\n";
      }
    }
    EXPECT_TRUE(missing.empty()) << "C functions of the " << which
                                 << " environment missing from the cost table (host/lua/costs.cc); add each "
                                    "with its bound, or make it bounded first:\n"
                                 << missing;
  }
  std::string stale;
  for (const auto& [name, e] : table) {
    if (!reached.count(name) && !e->run_only) stale += "  " + name + "\n";
  }
  EXPECT_TRUE(stale.empty()) << "cost table entries no environment reaches (renamed or removed?):\n" << stale;
}

}  // namespace
}  // namespace kplab::test
