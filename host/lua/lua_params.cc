// kp.int, kp.number, kp.bool, kp.string and kp.cutoffs{...}: parameter declarations for plugin API 2
// (docs/plugins.md). Each checks its fields where the plugin calls it (an error names the plugin's
// line) and returns a plain description table that the loader reads again with raw accesses.
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "bindings.h"
#include "lua_util.h"

namespace kplab::host {
namespace {

constexpr const char* kMarker = "__kplab_param";

ParamType TypeFromName(std::string_view name, bool* ok) {
  *ok = true;
  for (ParamType t : {ParamType::kNumber, ParamType::kInt, ParamType::kBool, ParamType::kString, ParamType::kCutoffs}) {
    if (name == ParamTypeName(t)) return t;
  }
  *ok = false;
  return ParamType::kNumber;
}

const char* Constructor(ParamType type) {
  switch (type) {
    case ParamType::kNumber: return "kp.number";
    case ParamType::kInt: return "kp.int";
    case ParamType::kBool: return "kp.bool";
    case ParamType::kString: return "kp.string";
    case ParamType::kCutoffs: return "kp.cutoffs";
  }
  return "?";
}

// Reads the declaration table at idx (absolute) for `type`, raw accesses only. "" or the error.
std::string ReadFields(lua_State* L, int idx, ParamType type, ParamSpec* spec) {
  spec->type = type;
  const bool numeric = type == ParamType::kNumber || type == ParamType::kInt;
  std::string allowed = "default, doc";
  if (numeric) allowed += ", min, max";
  if (type == ParamType::kString) allowed += ", one_of";
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    lua_pop(L, 1);
    const std::string key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : std::string("[") + luaL_typename(L, -1) + "]";
    const bool known = key == "default" || key == "doc" || key == kMarker || (numeric && (key == "min" || key == "max")) ||
                       (type == ParamType::kString && key == "one_of");
    if (!known) {
      lua_pop(L, 1);
      return fmt::format("unknown field '{}' (expected: {})", key, allowed);
    }
  }
  auto field = [&](const char* name) {
    lua_pushstring(L, name);
    return lua_rawget(L, idx);
  };
  switch (field("doc")) {
    case LUA_TNIL: break;
    case LUA_TSTRING: spec->doc = lua_tostring(L, -1); break;
    default: lua_pop(L, 1); return "field 'doc' must be a string";
  }
  lua_pop(L, 1);
  for (const char* bound : {"min", "max"}) {
    if (!numeric) break;
    const int t = field(bound);
    if (t == LUA_TNUMBER && std::isfinite(lua_tonumber(L, -1))) {
      (bound[1] == 'i' ? spec->min : spec->max) = lua_tonumber(L, -1);
    } else if (t != LUA_TNIL) {
      lua_pop(L, 1);
      return fmt::format("field '{}' must be a finite number", bound);
    }
    lua_pop(L, 1);
  }
  if (spec->min && spec->max && *spec->min > *spec->max) return "field 'min' is greater than 'max'";
  if (type == ParamType::kString) {
    const int t = field("one_of");
    if (t == LUA_TTABLE) {
      const int list = lua_gettop(L);
      const lua_Unsigned n = lua_rawlen(L, list);
      for (lua_Unsigned i = 1; i <= n; ++i) {
        if (lua_rawgeti(L, list, static_cast<lua_Integer>(i)) != LUA_TSTRING) {
          lua_pop(L, 2);
          return "field 'one_of' must be a list of strings";
        }
        spec->one_of.emplace_back(lua_tostring(L, -1));
        lua_pop(L, 1);
      }
      if (spec->one_of.empty()) {
        lua_pop(L, 1);
        return "field 'one_of' must list at least one string";
      }
    } else if (t != LUA_TNIL) {
      lua_pop(L, 1);
      return "field 'one_of' must be a list of strings";
    }
    lua_pop(L, 1);
  }
  switch (field("default")) {
    case LUA_TNIL: lua_pop(L, 1); return "field 'default' is required";
    case LUA_TNUMBER: spec->default_value = static_cast<double>(lua_tonumber(L, -1)); break;
    case LUA_TBOOLEAN: spec->default_value = lua_toboolean(L, -1) != 0; break;
    case LUA_TSTRING: spec->default_value = std::string(lua_tostring(L, -1)); break;
    default: lua_pop(L, 1); return "field 'default' must be a number, boolean or string";
  }
  lua_pop(L, 1);
  if (std::string message = CheckParamValue(*spec, spec->default_value); !message.empty()) {
    return ParamError("field 'default'", message);
  }
  return "";
}

template <ParamType kType>
int Declare(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  ParamSpec spec;
  if (std::string error = ReadFields(L, 1, kType, &spec); !error.empty()) {
    return luaL_error(L, "%s{...}: %s", Constructor(kType), error.c_str());
  }
  PushParamSpec(L, spec);
  return 1;
}

}  // namespace

void PushParamSpec(lua_State* L, const ParamSpec& spec) {
  lua_createtable(L, 0, 6);
  lua_pushstring(L, ParamTypeName(spec.type));
  lua_setfield(L, -2, kMarker);
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, double>) {
          if (spec.type == ParamType::kInt) {
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
      spec.default_value);
  lua_setfield(L, -2, "default");
  if (spec.min) {
    lua_pushnumber(L, *spec.min);
    lua_setfield(L, -2, "min");
  }
  if (spec.max) {
    lua_pushnumber(L, *spec.max);
    lua_setfield(L, -2, "max");
  }
  if (!spec.one_of.empty()) {
    lua_createtable(L, static_cast<int>(spec.one_of.size()), 0);
    for (std::size_t i = 0; i < spec.one_of.size(); ++i) {
      lua_pushlstring(L, spec.one_of[i].data(), spec.one_of[i].size());
      lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
    }
    lua_setfield(L, -2, "one_of");
  }
  if (!spec.doc.empty()) {
    lua_pushlstring(L, spec.doc.data(), spec.doc.size());
    lua_setfield(L, -2, "doc");
  }
}

int DeclareCutoffsParam(lua_State* L) { return Declare<ParamType::kCutoffs>(L); }

std::string ReadParamSpec(lua_State* L, int idx, ParamSpec* spec) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) != LUA_TTABLE) return "must be declared with kp.int, kp.number, kp.bool, kp.string or kp.cutoffs{...}";
  lua_pushstring(L, kMarker);
  const int t = lua_rawget(L, idx);
  bool ok = false;
  const ParamType type = t == LUA_TSTRING ? TypeFromName(lua_tostring(L, -1), &ok) : ParamType::kNumber;
  lua_pop(L, 1);
  if (!ok) return "must be declared with kp.int, kp.number, kp.bool, kp.string or kp.cutoffs{...}";
  return ReadFields(L, idx, type, spec);
}

void InstallParams(lua_State* L) {
  // [kp]; kp.cutoffs (lua_corpus.cc) dispatches a table argument to DeclareCutoffsParam.
  lua_pushcfunction(L, Safe<Declare<ParamType::kInt>>);
  lua_setfield(L, -2, "int");
  lua_pushcfunction(L, Safe<Declare<ParamType::kNumber>>);
  lua_setfield(L, -2, "number");
  lua_pushcfunction(L, Safe<Declare<ParamType::kBool>>);
  lua_setfield(L, -2, "bool");
  lua_pushcfunction(L, Safe<Declare<ParamType::kString>>);
  lua_setfield(L, -2, "string");
}

}  // namespace kplab::host
