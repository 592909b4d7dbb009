// Metric plugin loading: run the file in its own sandbox env, then check the returned declaration
// field by field with raw accesses only, so validation never runs plugin code (no metamethods).
#include "plugin.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <lua.hpp>

#include "bindings.h"
#include "lua_util.h"
#include "kplab/safe_text.h"
#include <type_traits>
#include <variant>
#include <vector>

namespace kplab::host {
namespace {

constexpr const char* kKnownFields[] = {"name", "version", "doc", "params", "needs", "check", "score",
                                        "aggregate"};
constexpr const char* kKnownFieldsV2[] = {"name", "version", "doc", "params", "needs", "check", "subsets",
                                          "columns", "score", "unmergeable", "prepare"};
constexpr const char* kSubsets[] = {"all", "present", "absent"};
constexpr const char* kKnownNeeds[] = {"source", "embeddings", "embeddings:stems", "model", "neighbors", "pairs",
                                         "tokens"};

// Describes a table key for messages: 'scroe' for strings, [1] for anything else.
std::string KeyText(lua_State* L, int idx) {
  if (lua_type(L, idx) == LUA_TSTRING) return "'" + std::string(lua_tostring(L, idx)) + "'";
  if (lua_type(L, idx) == LUA_TNUMBER) {
    lua_pushvalue(L, idx);  // lua_tostring would convert the key in place and break lua_next
    std::string text = "[" + std::string(lua_tostring(L, -1)) + "]";
    lua_pop(L, 1);
    return text;
  }
  return std::string("[") + luaL_typename(L, idx) + "]";
}

// Reads a needs list at `idx` (absolute) into `needs`; returns "" or the error without the "field "
// prefix ("'needs' must be a list of strings", "'needs[2]' must be one of: ...").
std::string ReadNeeds(lua_State* L, int idx, std::vector<std::string>& needs) {
  if (lua_type(L, idx) != LUA_TTABLE) return "'needs' must be a list of strings";
  const lua_Unsigned n = lua_rawlen(L, idx);
  // Keys other than 1..n would be silently ignored by the loop below; refuse them.
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    lua_pop(L, 1);
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 ||
        static_cast<lua_Unsigned>(lua_tointeger(L, -1)) > n) {
      lua_pop(L, 1);
      return "'needs' must be a list of strings";
    }
  }
  std::string expected;
  for (const char* need : kKnownNeeds) expected += (expected.empty() ? "" : ", ") + std::string(need);
  for (lua_Unsigned i = 1; i <= n; ++i) {
    lua_rawgeti(L, idx, static_cast<lua_Integer>(i));
    bool known = false;
    if (lua_type(L, -1) == LUA_TSTRING) {
      const std::string need = lua_tostring(L, -1);
      for (const char* k : kKnownNeeds) known = known || need == k;
      if (known && std::find(needs.begin(), needs.end(), need) == needs.end()) needs.push_back(need);
    }
    lua_pop(L, 1);
    if (!known) return "'needs[" + std::to_string(i) + "]' must be one of: " + expected;
  }
  return "";
}

// The strings of a non-empty list at idx (absolute) whose keys are exactly 1..n; nullopt for anything
// else (a hole, another key, a non-string item). Raw accesses only.
std::optional<std::vector<std::string>> ReadStringList(lua_State* L, int idx) {
  if (lua_type(L, idx) != LUA_TTABLE) return std::nullopt;
  const lua_Unsigned n = lua_rawlen(L, idx);
  lua_Unsigned keys = 0;
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    lua_pop(L, 1);
    ++keys;
  }
  if (n == 0 || keys != n) return std::nullopt;
  std::vector<std::string> out;
  for (lua_Unsigned i = 1; i <= n; ++i) {
    std::size_t len = 0;
    const bool ok = lua_rawgeti(L, idx, static_cast<lua_Integer>(i)) == LUA_TSTRING;
    if (ok) out.emplace_back(lua_tolstring(L, -1, &len), len);
    lua_pop(L, 1);
    if (!ok) return std::nullopt;
  }
  return out;
}

// The first field that the plugin's API does not know, quoted, or "" (docs/plugins.md).
std::string UnknownField(lua_State* L, int decl, const PluginFile& file) {
  std::set<std::string> unknown;
  lua_pushnil(L);
  while (lua_next(L, decl) != 0) {
    lua_pop(L, 1);
    bool known = false;
    if (lua_type(L, -1) == LUA_TSTRING) {
      const std::string key = lua_tostring(L, -1);
      if (file.api_version >= 2) {
        for (const char* field : kKnownFieldsV2) known = known || key == field;
      } else {
        for (const char* field : kKnownFields) known = known || key == field;
      }
    }
    if (!known) unknown.insert(KeyText(L, -1));
  }
  if (!unknown.empty()) {
    if (file.api_version >= 2 && *unknown.begin() == "'aggregate'") {
      return "unknown field 'aggregate' (plugin API 2 declares aggregates in columns(c, params): c:mean, c:sum, "
             "c:ratio, c:custom; docs/plugins.md)";
    }
    return "unknown field " + *unknown.begin();
  }
  return "";
}

// name (the file's own), version and doc.
std::string ReadIdentity(lua_State* L, int decl, const PluginFile& file, MetricPlugin& plugin) {
  if (RawField(L, decl, "name") != LUA_TSTRING) return "field 'name' must be a string";
  plugin.name = lua_tostring(L, -1);
  lua_pop(L, 1);
  // Names reach tables, JSON and terminals (kplab/safe_text.h).
  if (Status st = CheckName("field 'name'", plugin.name); !st.ok()) return st.message();
  if (plugin.name != file.name) {
    return "field 'name' is '" + plugin.name + "' but the file is " + file.name + ".lua (expected '" + file.name + "')";
  }
  if (RawField(L, decl, "version") != LUA_TSTRING) return "field 'version' must be a string";
  plugin.version = lua_tostring(L, -1);
  lua_pop(L, 1);

  switch (RawField(L, decl, "doc")) {
    case LUA_TNIL:
      break;
    case LUA_TSTRING:
      plugin.doc = lua_tostring(L, -1);
      break;
    default:
      return "field 'doc' must be a string";
  }
  lua_pop(L, 1);
  return "";
}

// params: API 1's plain defaults, or API 2's typed specs (ReadParamSpec).
std::string ReadDeclaredParams(lua_State* L, int decl, const PluginFile& file, MetricPlugin& plugin) {
  const int params_type = RawField(L, decl, "params");  // [params]
  if (params_type != LUA_TNIL) {
    if (params_type != LUA_TTABLE) return "field 'params' must be a table";
    const int params = lua_gettop(L);
    std::string error;
    lua_pushnil(L);
    while (error.empty() && lua_next(L, params) != 0) {  // [params, k, v]
      if (lua_type(L, -2) != LUA_TSTRING) {
        error = "field 'params' has a key " + KeyText(L, -2) + " (parameter names must be strings)";
      } else {
        const std::string key = lua_tostring(L, -2);
        if (Status st = CheckName("field 'params' has a parameter name", key); !st.ok()) {
          error = st.message();
          lua_pop(L, 1);
          continue;
        }
        if (file.api_version >= 2) {
          ParamSpec spec;
          if (std::string e = ReadParamSpec(L, -1, &spec); !e.empty()) {
            error = ParamError("field 'params." + key + "'", e);
          } else {
            plugin.params[key] = spec.default_value;
            plugin.param_specs[key] = std::move(spec);
          }
          lua_pop(L, 1);
          continue;
        }
        switch (lua_type(L, -1)) {
          case LUA_TNUMBER:
            plugin.params[key] = static_cast<double>(lua_tonumber(L, -1));
            break;
          case LUA_TBOOLEAN:
            plugin.params[key] = lua_toboolean(L, -1) != 0;
            break;
          case LUA_TSTRING:
            plugin.params[key] = std::string(lua_tostring(L, -1));
            break;
          default:
            error = "field 'params." + key + "' must be a number, string or boolean";
        }
      }
      lua_pop(L, 1);
    }
    if (!error.empty()) return error;
  }
  lua_pop(L, 1);
  return "";
}

// needs (a list, or a function resolved per run), check and prepare.
std::string ReadHooks(lua_State* L, int decl, MetricPlugin& plugin) {
  const int needs_type = RawField(L, decl, "needs");  // [needs]
  if (needs_type == LUA_TFUNCTION) {
    plugin.needs_is_function = true;  // resolved per run by ResolveNeeds (profile and params known)
  } else if (needs_type != LUA_TNIL) {
    const std::string error = ReadNeeds(L, lua_gettop(L), plugin.needs);
    if (!error.empty()) return "field " + error;
  }
  lua_pop(L, 1);

  const int check_type = RawField(L, decl, "check");
  lua_pop(L, 1);
  if (check_type != LUA_TNIL && check_type != LUA_TFUNCTION) return "field 'check' must be a function";
  const int prepare_type = RawField(L, decl, "prepare");
  lua_pop(L, 1);
  if (prepare_type != LUA_TNIL && prepare_type != LUA_TFUNCTION) return "field 'prepare' must be a function";
  return "";
}

// score: a Lua function, or a kernel (kp.kernel.x, API 2) whose parameters field 'params' declares.
std::string ReadScore(lua_State* L, int decl, const PluginFile& file, MetricPlugin& plugin) {
  if (RawField(L, decl, "score") != LUA_TFUNCTION) return "field 'score' must be a function";
  if (const char* kernel = lua_iscfunction(L, -1) ? KernelOf(lua_tocfunction(L, -1)) : nullptr) {
    if (file.api_version < 2) return fmt::format("score = kp.kernel.{} needs plugin API 2 (-- kplab-api: 2)", kernel);
    plugin.kernel = kernel;
    for (const KernelParam& want : KernelParams(kernel)) {
      const auto spec = plugin.param_specs.find(want.name);
      if (want.optional && spec == plugin.param_specs.end()) continue;
      if (spec == plugin.param_specs.end() || spec->second.type != want.type) {
        return fmt::format(
            "score = kp.kernel.{} reads parameter '{}' of type {}, which field 'params' must "
            "declare with that type",
            kernel, want.name, ParamTypeName(want.type));
      }
    }
  }
  lua_pop(L, 1);
  return "";
}

// API 2's subsets, unmergeable and columns.
std::string ReadApi2Fields(lua_State* L, int decl, MetricPlugin& plugin) {
  const int subsets_type = RawField(L, decl, "subsets");
  if (subsets_type != LUA_TNIL) {
    const std::string bad = "field 'subsets' must be a list of distinct names among: all, present, absent";
    const std::optional<std::vector<std::string>> names = ReadStringList(L, lua_gettop(L));
    if (!names) return bad;
    for (const std::string& name : *names) {
      bool known = false;
      for (const char* k : kSubsets) known = known || name == k;
      if (!known || std::find(plugin.subsets.begin(), plugin.subsets.end(), name) != plugin.subsets.end()) return bad;
      plugin.subsets.push_back(name);
    }
  }
  lua_pop(L, 1);
  switch (RawField(L, decl, "unmergeable")) {
    case LUA_TNIL:
      break;
    case LUA_TSTRING:
      plugin.unmergeable = lua_tostring(L, -1);
      if (!plugin.unmergeable.empty()) break;
      [[fallthrough]];
    default:
      return "field 'unmergeable' must be a non-empty string saying why shards of a run cannot be merged";
  }
  lua_pop(L, 1);
  const std::string bad_columns =
      "field 'columns' must be a function columns(c, params) or a list of distinct column names (plugin API 2)";
  const int columns_type = RawField(L, decl, "columns");
  if (columns_type == LUA_TTABLE) {
    const std::optional<std::vector<std::string>> names = ReadStringList(L, lua_gettop(L));
    if (!names) return bad_columns;
    std::set<std::string> distinct;
    for (const std::string& name : *names) {
      if (name.empty() || name.size() > 1024 || name.find('\0') != std::string::npos || !distinct.insert(name).second) {
        return bad_columns;
      }
      if (Status st = CheckName("field 'columns' has a column name", name); !st.ok()) return st.message();
    }
  } else if (columns_type != LUA_TFUNCTION) {
    return bad_columns;
  }
  lua_pop(L, 1);
  return "";
}

// Checks the declaration table at `decl` (absolute index). Fills `plugin` except the registry refs.
// Returns the error text without the "FILE: " prefix, or "" when the declaration is valid.
std::string CheckDeclaration(lua_State* L, int decl, const PluginFile& file, MetricPlugin& plugin) {
  // Unknown fields first: a misspelt field ('scroe') is the likely cause of a missing required one.
  if (std::string e = UnknownField(L, decl, file); !e.empty()) return e;
  if (std::string e = ReadIdentity(L, decl, file, plugin); !e.empty()) return e;
  if (std::string e = ReadDeclaredParams(L, decl, file, plugin); !e.empty()) return e;
  if (std::string e = ReadHooks(L, decl, plugin); !e.empty()) return e;
  if (std::string e = ReadScore(L, decl, file, plugin); !e.empty()) return e;
  if (file.api_version >= 2) return ReadApi2Fields(L, decl, plugin);
  const int aggregate_type = RawField(L, decl, "aggregate");
  lua_pop(L, 1);
  if (aggregate_type != LUA_TNIL && aggregate_type != LUA_TFUNCTION) {
    return "field 'aggregate' must be a function";
  }
  return "";
}

}  // namespace

namespace {

// Strict read-only views of a plugin's params and ctx.profile: reading a name that is not there is an
// error at the plugin's line ("plugins/x.lua:7: unknown parameter 'thershold' (expected one of: k,
// threshold)"), so a misspelt knob cannot read nil and change a number silently; writing is an error;
// pairs() iterates. Upvalues of __index: [1] the data table, [2] "parameter" or "profile knob".
std::string KnownKeys(lua_State* L, int table) {
  std::vector<std::string> keys;
  lua_pushnil(L);
  while (lua_next(L, table) != 0) {
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TSTRING) keys.emplace_back(lua_tostring(L, -1));
  }
  std::sort(keys.begin(), keys.end());
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out.empty() ? "none" : out;
}

int StrictIndex(lua_State* L) {
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  const std::string what = lua_tostring(L, lua_upvalueindex(2));
  const std::string key = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : luaL_typename(L, 2);
  const std::string known = KnownKeys(L, lua_upvalueindex(1));
  return luaL_error(L, "unknown %s '%s' (expected one of: %s)", what.c_str(), key.c_str(), known.c_str());
}

int StrictNewIndex(lua_State* L) {
  const std::string key = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : luaL_typename(L, 2);
  return luaL_error(L, "attempt to modify read-only table '%s' (field '%s')", lua_tostring(L, lua_upvalueindex(1)),
                    key.c_str());
}

int StrictNext(lua_State* L) {  // iterator(proxy, key) over the data table in upvalue 1
  lua_settop(L, 2);
  if (lua_next(L, lua_upvalueindex(1)) != 0) return 2;
  lua_pushnil(L);
  return 1;
}

int StrictPairs(lua_State* L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushcclosure(L, StrictNext, 1);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

// Replaces the table on top of the stack by its strict read-only view. [-1, +1]
void MakeStrict(lua_State* L, const char* what, const char* table_name) {
  lua_createtable(L, 0, 0);  // [data, proxy]
  lua_createtable(L, 0, 4);  // [data, proxy, mt]
  lua_pushvalue(L, -3);
  lua_pushstring(L, what);
  lua_pushcclosure(L, StrictIndex, 2);
  lua_setfield(L, -2, "__index");
  lua_pushstring(L, table_name);
  lua_pushcclosure(L, StrictNewIndex, 1);
  lua_setfield(L, -2, "__newindex");
  lua_pushvalue(L, -3);
  lua_pushcclosure(L, StrictPairs, 1);
  lua_setfield(L, -2, "__pairs");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);  // [data, proxy]
  lua_remove(L, -2);        // [proxy]
}

}  // namespace

void PushParams(lua_State* L, const MetricPlugin& plugin) {
  lua_createtable(L, 0, static_cast<int>(plugin.params.size()));
  for (const auto& [name, value] : plugin.params) {
    if (auto spec = plugin.param_specs.find(name);
        spec != plugin.param_specs.end() && spec->second.type == ParamType::kCutoffs) {
      // Checked when declared and applied: a read-only list {5, 10, "M"}.
      Result<std::vector<Cutoff>> ks = ParseCutoffs(std::get<std::string>(value));
      PushCutoffs(L, ks ? *ks : std::vector<Cutoff>{});
      PushReadOnlyProxy(L, -1, "params." + name);
      lua_remove(L, -2);
      lua_setfield(L, -2, name.c_str());
      continue;
    }
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, double>) {
            if (std::floor(v) == v && std::abs(v) < 1e15) {
              lua_pushinteger(L, static_cast<lua_Integer>(v));
            } else {
              lua_pushnumber(L, v);
            }
          } else if constexpr (std::is_same_v<T, bool>) {
            lua_pushboolean(L, v);
          } else {
            lua_pushlstring(L, v.data(), v.size());
          }
        },
        value);
    lua_setfield(L, -2, name.c_str());
  }
  MakeStrict(L, "parameter", "params");
}


void PushProfile(lua_State* L, const Profile& profile) {
  lua_createtable(L, 0, 24);
  lua_pushlstring(L, profile.name.data(), profile.name.size());
  lua_setfield(L, -2, "name");
  for (const auto& [knob, value] : profile.Knobs()) {
    if (value == "true" || value == "false") {
      lua_pushboolean(L, value == "true");
    } else {
      lua_pushlstring(L, value.data(), value.size());
    }
    lua_setfield(L, -2, knob.c_str());
  }
  MakeStrict(L, "profile knob", "profile");
}

void SeedForDocument(lua_State* L, const MetricPlugin& plugin, std::uint64_t run_seed, std::string_view doc_id) {
  SeedOwnRandom(L, plugin.random_ref, SeedKey(plugin.name, doc_id), run_seed);
}

void SeedForCall(lua_State* L, const MetricPlugin& plugin, std::string_view call) {
  SeedOwnRandom(L, plugin.random_ref, SeedKey(plugin.name, std::string("\x01").append(call)), 0);
}

Status ResolveNeeds(LuaVm& vm, MetricPlugin& plugin, const Profile& profile) {
  if (!plugin.needs_is_function) return Status::Ok();
  lua_State* L = vm.state();
  const int top = lua_gettop(L);
  SeedForCall(L, plugin, "needs");
  lua_rawgeti(L, LUA_REGISTRYINDEX, plugin.needs_ref);
  PushProfile(L, profile);
  PushParams(L, plugin);
  if (std::optional<ScriptError> err = vm.Call(2, 1, plugin.name)) return Error::Script(err->Format());
  std::vector<std::string> needs;
  const std::string error = ReadNeeds(L, lua_gettop(L), needs);
  lua_settop(L, top);
  if (!error.empty()) return Error::Script(plugin.file.display_name + ": needs() returned a bad list: " + error);
  plugin.needs = std::move(needs);
  return Status::Ok();
}

Status CheckParams(LuaVm& vm, const MetricPlugin& plugin, const Profile& profile) {
  if (plugin.check_ref < 0) return Status::Ok();
  lua_State* L = vm.state();
  const int top = lua_gettop(L);
  SeedForCall(L, plugin, "check");
  lua_rawgeti(L, LUA_REGISTRYINDEX, plugin.check_ref);
  PushParams(L, plugin);
  PushProfile(L, profile);
  if (std::optional<ScriptError> err = vm.Call(2, 1, plugin.name)) return Error::Script(err->Format());
  const int type = lua_type(L, -1);
  std::string message = type == LUA_TSTRING ? lua_tostring(L, -1) : "";
  lua_settop(L, top);
  if (type == LUA_TNIL) return Status::Ok();
  if (type != LUA_TSTRING) {
    return Error::Script(fmt::format("{}: check() must return nil or a message string (got {})",
                                     plugin.file.display_name, lua_typename(L, type)));
  }
  return Error::Usage(fmt::format("plugin '{}': {}", plugin.name, message));
}

Result<MetricPlugin> LoadMetricPlugin(LuaVm& vm, const PluginFile& file) {
  lua_State* L = vm.state();
  const int top = lua_gettop(L);
  // The plugin's top level runs with a plugin's file grants (none), even in a script's or the REPL's VM
  // (help(name) loads a plugin there).
  struct PluginGrants {
    LuaVm& vm;
    std::shared_ptr<const FileGrants> saved = vm.file_grants();
    ~PluginGrants() { vm.SetFileGrants(saved); }
  } plugin_grants{vm};
  vm.SetFileGrants(std::make_shared<const FileGrants>(FileGrants::Plugin()));
  vm.PushSandboxEnv(file.name);  // [env]
  // Its own math.random, seeded for the top-level chunk from the plugin's name: what the chunk draws is
  // the same in every lane and every run.
  const int random_ref = vm.GiveOwnRandom(-1, SeedKey(file.name, "\x01load"), 0);
  lua_pushvalue(L, -1);          // [env, env]
  if (std::optional<ScriptError> err = vm.RunChunk(file.source, file.display_name, 1)) {
    luaL_unref(L, LUA_REGISTRYINDEX, random_ref);
    lua_settop(L, top);
    return Error::Script(err->Format());
  }
  // [env, decl]
  const int decl = lua_gettop(L);
  if (lua_type(L, decl) != LUA_TTABLE) {
    std::string got = luaL_typename(L, decl);
    luaL_unref(L, LUA_REGISTRYINDEX, random_ref);
    lua_settop(L, top);
    return Error::Script(file.display_name + ": must return kp.metric{...} (got " + got + ")");
  }
  MetricPlugin plugin;
  plugin.file = file;
  plugin.api = file.api_version;
  plugin.random_ref = random_ref;
  // The checks read a table the plugin built; a metatable on it could run code, so
  // look at the raw table through a copy without metatable.
  lua_newtable(L);  // [env, decl, raw]
  lua_pushnil(L);
  while (lua_next(L, decl) != 0) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -4);
  }
  const int raw = lua_gettop(L);
  const std::string error = CheckDeclaration(L, raw, file, plugin);
  if (!error.empty()) {
    ReleaseMetricPlugin(vm, plugin);
    lua_settop(L, top);
    return Error::Script(file.display_name + ": " + error);
  }
  RawField(L, raw, "score");
  plugin.score_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  if (RawField(L, raw, "aggregate") == LUA_TNIL) {
    lua_pop(L, 1);
    plugin.aggregate_ref = LUA_NOREF;
  } else {
    plugin.aggregate_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  if (plugin.needs_is_function) {
    RawField(L, raw, "needs");
    plugin.needs_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  if (RawField(L, raw, "check") == LUA_TNIL) {
    lua_pop(L, 1);
  } else {
    plugin.check_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  if (plugin.api >= 2) {
    if (RawField(L, raw, "prepare") == LUA_TNIL) {
      lua_pop(L, 1);
    } else {
      plugin.prepare_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    RawField(L, raw, "columns");
    plugin.columns_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    // Nothing may carry values from one document to the next: freeze what the functions can reach.
    lua_createtable(L, 4, 0);  // [env, decl, raw, fns]
    int n = 0;
    for (const char* f : {"score", "columns", "check", "needs", "prepare"}) {
      if (RawField(L, raw, f) == LUA_TFUNCTION) {
        lua_rawseti(L, -2, ++n);
      } else {
        lua_pop(L, 1);
      }
    }
    Result<int> frozen = vm.FreezeState(decl - 1, lua_gettop(L), file.display_name);
    if (!frozen) {
      ReleaseMetricPlugin(vm, plugin);
      lua_settop(L, top);
      return frozen.error();
    }
    plugin.state_ref = *frozen;
  }
  lua_pushvalue(L, decl - 1);
  plugin.env_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_settop(L, top);
  return plugin;
}

void ReleaseMetricPlugin(LuaVm& vm, MetricPlugin& plugin) {
  for (int* ref : {&plugin.score_ref, &plugin.aggregate_ref, &plugin.env_ref, &plugin.needs_ref, &plugin.check_ref,
                   &plugin.columns_ref, &plugin.state_ref, &plugin.prepare_ref, &plugin.random_ref}) {
    if (*ref >= 0) luaL_unref(vm.state(), LUA_REGISTRYINDEX, *ref);
    *ref = LUA_NOREF;
  }
}

bool ComparesWithinDocuments(const MetricPlugin& plugin) {
  const bool kernel = plugin.kernel == "exact" || plugin.kernel == "rank" || plugin.kernel == "rprec";
  return kernel && plugin.needs.empty() && !plugin.needs_is_function && plugin.prepare_ref < 0;
}

Status ApplyParams(MetricPlugin& plugin, const std::map<std::string, std::string>& overrides) {
  // Checked on a copy so that a failing override leaves the plugin's parameters untouched.
  std::map<std::string, ParamValue> params = plugin.params;
  std::vector<std::string> readable_files = plugin.readable_files;
  const std::string prefix = "plugin '" + plugin.name + "': ";
  for (const auto& [key, text] : overrides) {
    auto it = params.find(key);
    if (it == params.end()) {
      std::string expected;
      for (const auto& [name, value] : params) expected += (expected.empty() ? "" : ", ") + name;
      if (expected.empty()) {
        return Error::Usage(prefix + "unknown parameter '" + key + "' (the plugin declares no parameters)");
      }
      return Error::Usage(prefix + "unknown parameter '" + key + "' (expected one of: " + expected + ")");
    }
    ParamValue& value = it->second;
    if (auto spec = plugin.param_specs.find(key); spec != plugin.param_specs.end()) {
      Result<ParamValue> parsed = ParseParamText(spec->second, text);
      if (!parsed) {
        return Error(parsed.error().kind, prefix + ParamError("parameter '" + key + "'", parsed.error().message));
      }
      value = *std::move(parsed);
      // A string the user set may name a file for the plugin, if the user's context may read it: a
      // script cannot hand a plugin a path outside its own grants.
      if (spec->second.type == ParamType::kString && GateFile(text, FileAccess::kRead).ok()) {
        if (Result<std::string> file = ResolvePath(text)) readable_files.push_back(*std::move(file));
      }
      continue;
    }
    if (std::holds_alternative<double>(value)) {
      double d = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
      if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(d)) {
        return Error::Usage(prefix + "parameter '" + key + "' must be a number (got '" + text + "')");
      }
      value = d;
    } else if (std::holds_alternative<bool>(value)) {
      if (text == "true" || text == "1") {
        value = true;
      } else if (text == "false" || text == "0") {
        value = false;
      } else {
        return Error::Usage(prefix + "parameter '" + key + "' must be a boolean: true, false, 1 or 0 (got '" + text +
                            "')");
      }
    } else {
      value = text;
    }
  }
  plugin.params = std::move(params);
  plugin.readable_files = std::move(readable_files);
  return Status::Ok();
}

}  // namespace kplab::host
