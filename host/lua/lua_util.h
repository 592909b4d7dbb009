// Helpers shared by the binding files.
//
// Threads: every helper works on one lua_State, on that state's thread; a BorrowScope is that thread's too.
#pragma once

#include <lua.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>

#include "kplab/safe_text.h"
#include "kplab/utf8.h"

namespace kplab::host {

// Registry table of every userdata type DefineMetatable made in this state: type name ("kplab.Matrix")
// -> its KeptAtLoad, as an integer. Tests enumerate it (every type must have a lifetime test).
inline constexpr const char* kTypesKey = "kplab.types";
// Raw field of a kplab metatable holding the type's KeptAtLoad (metatables are hidden from scripts).
inline constexpr const char* kKeptAtLoadField = "__kplab_kept";

// What plugin API 2's freeze (LuaVm::FreezeState) does with a value of a userdata type that a plugin's
// functions reach after load (made by its top-level chunk): every type says it where it is defined.
enum class KeptAtLoad {
  kRefused = 0,    // the default: the load fails naming the upvalue (types never handed to a plugin at load)
  kImmutable = 1,  // no method changes the value: kept as it is
  kReadOnly = 2,   // the type's "__freeze" metamethod marks this value read-only; its mutators then raise
};

// The lifetime of host memory that userdata borrow instead of owning (a Column's values exist for one
// aggregation). Each such userdata holds a Lease() and checks it before every use: once the scope is
// gone, use raises a Lua error naming the object ("Column 'x' used after its aggregation ended") instead
// of reading freed memory. Userdata that can own what they point to (shared_ptr) must do that instead.
class BorrowScope {
 public:
  BorrowScope() : alive_(std::make_shared<char>()) {}
  BorrowScope(const BorrowScope&) = delete;
  BorrowScope& operator=(const BorrowScope&) = delete;
  std::weak_ptr<const void> Lease() const { return alive_; }

 private:
  std::shared_ptr<char> alive_;
};

// The string argument at idx as a view into the Lua string (alive while it stays on the stack), which must
// be valid UTF-8: a value that is no string (nor number) raises Lua's own "bad argument" error
// (luaL_checklstring), invalid bytes "WHERE: WHAT is not valid UTF-8"
// ("kp.textmetrics.rouge_n: argument #1[2] is not valid UTF-8", "col:add: argument #1 ..."). [-0, +0, v]
inline std::string_view CheckUtf8Arg(lua_State* L, int idx, const std::string& where, const std::string& what) {
  std::size_t n = 0;
  const char* s = luaL_checklstring(L, idx, &n);
  if (!ValidUtf8({s, n})) luaL_error(L, "%s: %s is not valid UTF-8", where.c_str(), what.c_str());
  return {s, n};
}

// Allocates a userdata holding a T constructed from args, with metatable `meta` (must exist) whose
// __gc runs ~T. [-0, +1]
template <class T, class... Args>
T* NewUserdata(lua_State* L, const char* meta, Args&&... args) {
  void* mem = lua_newuserdatauv(L, sizeof(T), 0);
  T* obj = new (mem) T(std::forward<Args>(args)...);
  luaL_setmetatable(L, meta);
  return obj;
}

template <class T>
int GcUserdata(lua_State* L) {
  static_cast<T*>(lua_touserdata(L, 1))->~T();
  return 0;
}

// Registers the metatable on top of the stack under the address of `meta` as well, so Check() can find
// it without hashing the type name. [-0, +0]
inline void RegisterMetatableAddress(lua_State* L, const char* meta) {
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, meta);
}

// luaL_checkudata with the metatable looked up by address (see RegisterMetatableAddress): bindings are
// called per document, and hashing the type name on every argument check was 10% of scoring.
template <class T>
T* Check(lua_State* L, int idx, const char* meta) {
  void* p = lua_touserdata(L, idx);
  if (p != nullptr && lua_getmetatable(L, idx)) {  // [mt]
    lua_rawgetp(L, LUA_REGISTRYINDEX, meta);       // [mt, expected]
    const bool ok = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    if (ok) return static_cast<T*>(p);
  }
  return static_cast<T*>(luaL_checkudata(L, idx, meta));  // raises the standard message
}

// Registry field of a type's method table ("kplab.Match.methods").
inline std::string MethodsKey(const char* meta) { return std::string(meta) + ".methods"; }

// Creates metatable `meta` from `methods`: entries named "__x" are metamethods, the others methods.
// Methods live in a table of their own, never handed to scripts: __index is that table (or `index`,
// which finds methods through PushMethod), so `x.__gc`, `x.__index` and the metatable stay out of
// reach, and no script can replace a method another plugin calls. `gc` (may be null) is __gc. `kept`
// says what the freeze of plugin API 2 does with a value made at load (kReadOnly: `methods` has a
// "__freeze"). The type is listed in the registry's kTypesKey table. [-0, +0]
inline void DefineMetatable(lua_State* L, const char* meta, const luaL_Reg* methods, lua_CFunction index,
                            lua_CFunction gc, KeptAtLoad kept = KeptAtLoad::kRefused) {
  luaL_newmetatable(L, meta);  // [mt]
  RegisterMetatableAddress(L, meta);
  lua_pushinteger(L, static_cast<lua_Integer>(kept));
  lua_setfield(L, -2, kKeptAtLoadField);
  if (lua_getfield(L, LUA_REGISTRYINDEX, kTypesKey) != LUA_TTABLE) {  // [mt, types]
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, kTypesKey);
  }
  lua_pushinteger(L, static_cast<lua_Integer>(kept));
  lua_setfield(L, -2, meta);
  lua_pop(L, 1);    // [mt]
  lua_newtable(L);  // [mt, methods]
  for (const luaL_Reg* r = methods; r->name != nullptr; ++r) {
    const bool meta_method = r->name[0] == '_' && r->name[1] == '_';
    lua_pushcfunction(L, r->func);
    lua_setfield(L, meta_method ? -3 : -2, r->name);
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, MethodsKey(meta).c_str());
  if (index != nullptr) {
    lua_pop(L, 1);
    lua_pushcfunction(L, index);
  }
  lua_setfield(L, -2, "__index");  // [mt]
  if (gc != nullptr) {
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pushstring(L, meta);
  lua_setfield(L, -2, "__name");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");  // getmetatable(x) -> false; setmetatable refuses
  lua_pop(L, 1);
}

// Creates metatable `meta` (see DefineMetatable) with __gc running ~T. [-0, +0]
template <class T>
void DefineType(lua_State* L, const char* meta, const luaL_Reg* methods, lua_CFunction index = nullptr,
                KeptAtLoad kept = KeptAtLoad::kRefused) {
  DefineMetatable(L, meta, methods, index, &GcUserdata<T>, kept);
}

// For a custom __index: pushes the method named by the value at `key` (nil when there is none; never
// a metamethod). [-0, +1]
inline void PushMethod(lua_State* L, const char* meta, int key) {
  key = lua_absindex(L, key);
  lua_getfield(L, LUA_REGISTRYINDEX, MethodsKey(meta).c_str());
  lua_pushvalue(L, key);
  lua_rawget(L, -2);
  lua_remove(L, -2);
}

// Pushes t[key] for the value t at idx read raw (no metamethod runs); nil when that value is not a
// table. What the host reads of a script's values outside a metered call it reads this way. [-0, +1]
inline int RawField(lua_State* L, int idx, const char* key) {
  if (lua_type(L, idx) != LUA_TTABLE) {
    lua_pushnil(L);
    return LUA_TNIL;
  }
  idx = lua_absindex(L, idx);
  lua_pushstring(L, key);
  return lua_rawget(L, idx);
}

// The value at idx as tostring shows it when no metamethod is involved ("x", "12", "true", "nil",
// "table: 0x5561..."), made without running any: __tostring and __name are the script's code (or data)
// and the host may be outside a metered call. [-0, +0]
inline std::string RawText(lua_State* L, int idx) {
  switch (lua_type(L, idx)) {
    case LUA_TSTRING:
    case LUA_TNUMBER: {
      lua_pushvalue(L, idx);  // lua_tolstring converts a number in place: convert a copy
      std::size_t n = 0;
      const char* s = lua_tolstring(L, -1, &n);
      std::string out(s, n);
      lua_pop(L, 1);
      return out;
    }
    case LUA_TBOOLEAN:
      return lua_toboolean(L, idx) ? "true" : "false";
    case LUA_TNIL:
      return "nil";
    default: {
      std::string out = lua_pushfstring(L, "%s: %p", luaL_typename(L, idx), lua_topointer(L, idx));
      lua_pop(L, 1);
      return out;
    }
  }
}

inline void SetNumber(lua_State* L, const char* key, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, key);
}
inline void SetString(lua_State* L, const char* key, std::string_view v) {
  lua_pushlstring(L, v.data(), v.size());
  lua_setfield(L, -2, key);
}

}  // namespace kplab::host

#include <exception>

namespace kplab::host {

// sandbox.cc: after a binding returns, raises the kill if the call's deadline passed meanwhile or
// Ctrl-C came (a loop of slow native calls runs few instructions between two count hooks).
void AfterNative(lua_State* L);

// Every lua_CFunction of the bindings goes through Safe<>: a std::exception thrown by core code is
// caught inside this frame and raised as a Lua error (prefixed with luaL_where) after the C++ objects of
// the call are gone. Lua's own errors (not std::exception) pass through untouched.
template <lua_CFunction F>
int Safe(lua_State* L) {
  {
    std::string message;
    try {
      const int n = F(L);
      AfterNative(L);
      return n;
    } catch (const std::bad_alloc&) {
      // Native memory ran out (the process's, not the VM's cap): a clear error, and the run fails.
      message = "out of memory (a native allocation failed)";
    } catch (const std::exception& e) {
      message = e.what();
    }
    luaL_where(L, 1);
    lua_pushlstring(L, message.data(), message.size());
    lua_concat(L, 2);
  }  // message is gone before lua_error: in the Lua module (C Lua) lua_error longjmps past destructors
  return lua_error(L);
}

// Lua's print for `kplab run` scripts: arguments through tostring, tab-separated, one write to stdout.
inline int LuaPrint(lua_State* L) {
  const int n = lua_gettop(L);
  std::string out;
  for (int i = 1; i <= n; ++i) {
    if (i > 1) out.push_back('\t');
    out += luaL_tolstring(L, i, nullptr);
    lua_pop(L, 1);
  }
  out.push_back('\n');
  // Escaped as every text kplab writes for a terminal (kplab/safe_text.h): a script prints what a
  // dataset or a store holds. Tabs and line breaks are kept.
  const std::string safe = TerminalText(out, Newlines::kKeep);
  std::fwrite(safe.data(), 1, safe.size(), stdout);
  return 0;
}

// Typed readers of an options table at stack index idx (none or nil = no options: every read gives its
// default). A value of the wrong type is reported through the module's Fail(L, fn, message), which
// names the function ("kp.stats.bootstrap_ci: option 'n' must be an integer (got string)").
template <void (*Fail)(lua_State*, const char*, const std::string&)>
struct OptionReader {
  // Pushes options[key], nil when there are no options; returns its type. [-0, +1]
  static int Get(lua_State* L, int idx, const char* key) {
    if (lua_isnoneornil(L, idx)) {
      lua_pushnil(L);
      return LUA_TNIL;
    }
    return lua_getfield(L, idx, key);
  }
  static double Number(lua_State* L, int idx, const char* fn, const char* key, double def) {
    const int t = Get(L, idx, key);
    if (t != LUA_TNIL && t != LUA_TNUMBER) WrongType(L, fn, key, "a number", luaL_typename(L, -1));
    const double v = t == LUA_TNIL ? def : lua_tonumber(L, -1);
    lua_pop(L, 1);
    return v;
  }
  static lua_Integer Integer(lua_State* L, int idx, const char* fn, const char* key, lua_Integer def) {
    const int t = Get(L, idx, key);
    int isint = 1;
    const lua_Integer v = t == LUA_TNIL ? def : lua_tointegerx(L, -1, &isint);
    if (t != LUA_TNIL && (t != LUA_TNUMBER || !isint)) {
      WrongType(L, fn, key, "an integer", t == LUA_TNUMBER ? "a non-integer number" : luaL_typename(L, -1));
    }
    lua_pop(L, 1);
    return v;
  }
  static bool Bool(lua_State* L, int idx, const char* fn, const char* key, bool def) {
    const int t = Get(L, idx, key);
    if (t != LUA_TNIL && t != LUA_TBOOLEAN) WrongType(L, fn, key, "a boolean", luaL_typename(L, -1));
    const bool v = t == LUA_TNIL ? def : lua_toboolean(L, -1) != 0;
    lua_pop(L, 1);
    return v;
  }
  static std::string String(lua_State* L, int idx, const char* fn, const char* key, const char* def) {
    const int t = Get(L, idx, key);
    if (t != LUA_TNIL && t != LUA_TSTRING) WrongType(L, fn, key, "a string", luaL_typename(L, -1));
    std::string v = t == LUA_TNIL ? def : lua_tostring(L, -1);
    lua_pop(L, 1);
    return v;
  }

 private:
  [[noreturn]] static void WrongType(lua_State* L, const char* fn, const char* key, const char* expected,
                                     const char* got) {
    Fail(L, fn, std::string("option '") + key + "' must be " + expected + " (got " + got + ")");
    std::abort();  // unreachable: Fail raises a Lua error
  }
};

}  // namespace kplab::host
