// The Lua module `kplab` for a stock Lua 5.4 interpreter (Debian's lua5.4, built as C):
//
//   local kp = require "kplab"
//
// returns a table with the same functions as the kp of `kplab run` scripts: the native modules of
// AllModules() (kp.stem, kp.stats, kp.plot, KeyphraseList:match, ...), kp.log and kp.metric, and the
// script API (kp.load, kp.runs, kp.write, kp.read, kp.include). Unlike inside the host, nothing is
// sandboxed or read-only: the module runs with whatever the interpreter allows.
//
// Errors. The interpreter is C Lua, where lua_error is a longjmp: a Lua error raised inside a binding
// skips the destructors of its C++ frames. Two measures (docs/library.md, "Errors in the Lua module"):
//  * every function the module hands to Lua is wrapped in Safe<> (lua_util.h), which catches C++
//    exceptions inside the binding and raises the Lua error only after the binding's frames are gone;
//  * this file defines luaL_error for the module's own code (the symbol is local to kplab.so, so the
//    interpreter and other modules keep theirs): it formats the message like luaL_error and throws it
//    as a C++ exception, which Safe<> turns into the same Lua error once the C++ objects are destroyed.
//  * the same for lauxlib's argument checks (luaL_check*, luaL_opt*, luaL_argerror, luaL_typeerror,
//    luaL_checkstack, luaL_len), defined below from the reference manual: a failing argument check
//    throws, so 100,000 failing calls leak nothing (tests/lua_module/leak.lua).
// What still longjmps over C++ frames: errors raised inside the interpreter's core API while a binding
// runs (memory errors, errors of metamethods and of Lua callbacks called with lua_call).
#include <cstdarg>
#include <cstring>
#include <string_view>
#include <stdexcept>
#include <string>

#include <lua.hpp>

#include "bindings.h"
#include "lua_script.h"
#include "sandbox.h"

namespace kplab::host {
namespace {

// A luaL_error raised by kplab code inside the module, carried to Safe<> as a C++ exception.
class ModuleLuaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace
}  // namespace kplab::host

// The argument checks of lauxlib, for the same reason: the interpreter's raise by longjmp, skipping the
// destructors of the binding that called them (100,000 failing alpha_ndcg calls grew the process by
// 50 MB). These module-local versions follow the reference manual's description of each function and
// throw instead, with the message the interpreter's would produce ("bad argument #2 to 'f' (number
// expected, got string)"), so Safe<> raises the same Lua error after the binding's frames are gone.
// (Inside the C++ host, Lua is built as C++ and its errors unwind C++ frames anyway.)
namespace {

// Formats like luaL_error (lua_pushvfstring), for a message thrown as ModuleLuaError; Safe<> prefixes
// the same luaL_where(L, 1) luaL_error would have.
std::string VFormat(lua_State* L, const char* fmt, va_list args) {
  const char* text = lua_pushvfstring(L, fmt, args);
  std::string message = text != nullptr ? text : "";
  lua_pop(L, 1);
  return message;
}

[[noreturn]] void ThrowLua(lua_State* L, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string message = VFormat(L, fmt, args);
  va_end(args);
  throw kplab::host::ModuleLuaError(message);
}

}  // namespace

// Replaces the interpreter's luaL_error for the code linked into kplab.so (see the file comment).
extern "C" int luaL_error(lua_State* L, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string message = VFormat(L, fmt, args);
  va_end(args);
  throw kplab::host::ModuleLuaError(message);
}

extern "C" int luaL_argerror(lua_State* L, int arg, const char* extramsg) {
  lua_Debug ar;
  if (!lua_getstack(L, 0, &ar)) ThrowLua(L, "bad argument #%d (%s)", arg, extramsg);
  lua_getinfo(L, "n", &ar);
  if (ar.namewhat != nullptr && std::string_view(ar.namewhat) == "method") {
    --arg;  // the receiver does not count
    if (arg == 0) ThrowLua(L, "calling '%s' on bad self (%s)", ar.name != nullptr ? ar.name : "?", extramsg);
  }
  ThrowLua(L, "bad argument #%d to '%s' (%s)", arg, ar.name != nullptr ? ar.name : "?", extramsg);
}

extern "C" int luaL_typeerror(lua_State* L, int arg, const char* tname) {
  std::string got;
  if (luaL_getmetafield(L, arg, "__name") == LUA_TSTRING) {
    got = lua_tostring(L, -1);
    lua_pop(L, 1);
  } else if (lua_type(L, arg) == LUA_TLIGHTUSERDATA) {
    got = "light userdata";
  } else {
    got = luaL_typename(L, arg);
  }
  const std::string message = std::string(tname) + " expected, got " + got;
  return luaL_argerror(L, arg, message.c_str());
}

extern "C" const char* luaL_checklstring(lua_State* L, int arg, size_t* len) {
  const char* s = lua_tolstring(L, arg, len);
  if (s == nullptr) luaL_typeerror(L, arg, lua_typename(L, LUA_TSTRING));
  return s;
}

extern "C" const char* luaL_optlstring(lua_State* L, int arg, const char* def, size_t* len) {
  if (lua_isnoneornil(L, arg)) {
    if (len != nullptr) *len = def != nullptr ? std::strlen(def) : 0;
    return def;
  }
  return luaL_checklstring(L, arg, len);
}

extern "C" lua_Number luaL_checknumber(lua_State* L, int arg) {
  int isnum = 0;
  const lua_Number d = lua_tonumberx(L, arg, &isnum);
  if (!isnum) luaL_typeerror(L, arg, lua_typename(L, LUA_TNUMBER));
  return d;
}

extern "C" lua_Number luaL_optnumber(lua_State* L, int arg, lua_Number def) {
  return lua_isnoneornil(L, arg) ? def : luaL_checknumber(L, arg);
}

extern "C" lua_Integer luaL_checkinteger(lua_State* L, int arg) {
  int isnum = 0;
  const lua_Integer d = lua_tointegerx(L, arg, &isnum);
  if (!isnum) {
    if (lua_isnumber(L, arg)) luaL_argerror(L, arg, "number has no integer representation");
    luaL_typeerror(L, arg, lua_typename(L, LUA_TNUMBER));
  }
  return d;
}

extern "C" lua_Integer luaL_optinteger(lua_State* L, int arg, lua_Integer def) {
  return lua_isnoneornil(L, arg) ? def : luaL_checkinteger(L, arg);
}

extern "C" void luaL_checktype(lua_State* L, int arg, int t) {
  if (lua_type(L, arg) != t) luaL_typeerror(L, arg, lua_typename(L, t));
}

extern "C" void luaL_checkany(lua_State* L, int arg) {
  if (lua_type(L, arg) == LUA_TNONE) luaL_argerror(L, arg, "value expected");
}

extern "C" void* luaL_checkudata(lua_State* L, int ud, const char* tname) {
  void* p = luaL_testudata(L, ud, tname);
  if (p == nullptr) luaL_typeerror(L, ud, tname);
  return p;
}

extern "C" void luaL_checkstack(lua_State* L, int space, const char* msg) {
  if (!lua_checkstack(L, space)) {
    if (msg != nullptr) ThrowLua(L, "stack overflow (%s)", msg);
    ThrowLua(L, "stack overflow");
  }
}

extern "C" lua_Integer luaL_len(lua_State* L, int idx) {
  lua_len(L, idx);
  int isnum = 0;
  const lua_Integer n = lua_tointegerx(L, -1, &isnum);
  lua_pop(L, 1);
  if (!isnum) ThrowLua(L, "object length is not an integer");
  return n;
}

extern "C" __attribute__((visibility("default"))) int luaopen_kplab(lua_State* L) {
  using namespace kplab::host;
  lua_settop(L, 0);  // require's arguments (name, file) are not needed
  lua_newtable(L);   // [kp]
  bool failed = false;
  {
    std::string failure;
    try {
      InstallKpBase(L);
      for (const ModuleInstaller& install : AllModules()) install(L);
      InstallScriptModule(L);
    } catch (const std::exception& e) {
      // Installers only build tables: this is an out-of-memory or a bug.
      failure = e.what();
    }
    if (!failure.empty()) {
      lua_pushfstring(L, "kplab: cannot open the module: %s", failure.c_str());
      failed = true;
    }
  }
  if (failed) return lua_error(L);  // no C++ object alive in this frame any more
  // kp.include runs files in the interpreter's globals (inside `kplab run`, in the script's env).
  lua_pushglobaltable(L);
  SetScriptEnv(L);
  lua_pop(L, 1);
  return 1;
}
