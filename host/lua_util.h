// Helpers shared by the binding files.
#pragma once

#include <lua.hpp>

#include <cstdio>
#include <new>
#include <string>
#include <utility>

namespace kplab::host {

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

// Creates metatable `meta` with the given methods (also reachable through __index unless the caller
// sets its own __index) and __gc for T. [-0, +0]
template <class T>
void DefineType(lua_State* L, const char* meta, const luaL_Reg* methods, lua_CFunction index = nullptr) {
  luaL_newmetatable(L, meta);  // [mt]
  RegisterMetatableAddress(L, meta);
  luaL_setfuncs(L, methods, 0);
  lua_pushcfunction(L, &GcUserdata<T>);
  lua_setfield(L, -2, "__gc");
  if (index) {
    lua_pushcfunction(L, index);
  } else {
    lua_pushvalue(L, -1);
  }
  lua_setfield(L, -2, "__index");
  lua_pushstring(L, meta);
  lua_setfield(L, -2, "__name");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");  // hide the metatable from scripts
  lua_pop(L, 1);
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

// Every lua_CFunction of the bindings goes through Safe<>: a std::exception thrown by core code is
// caught inside this frame and raised as a Lua error (prefixed with luaL_where) after the C++ objects of
// the call are gone. Lua's own errors (not std::exception) pass through untouched.
template <lua_CFunction F>
int Safe(lua_State* L) {
  {
    std::string message;
    try {
      return F(L);
    } catch (const std::exception& e) {
      message = e.what();
    }
    luaL_where(L, 1);
    lua_pushlstring(L, message.data(), message.size());
    lua_concat(L, 2);
  }  // message is gone before lua_error: in the Lua module (C Lua) lua_error longjmps past destructors
  return lua_error(L);
}

// Lua's print for scripts and the REPL: arguments through tostring, tab-separated, one write to stdout.
inline int LuaPrint(lua_State* L) {
  const int n = lua_gettop(L);
  std::string out;
  for (int i = 1; i <= n; ++i) {
    if (i > 1) out.push_back('\t');
    out += luaL_tolstring(L, i, nullptr);
    lua_pop(L, 1);
  }
  out.push_back('\n');
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace kplab::host
