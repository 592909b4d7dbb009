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
// What still longjmps over C++ frames: errors raised inside the interpreter's own API while a binding
// runs (luaL_check* argument errors, memory errors, errors of Lua callbacks called with lua_call).
#include <cstdarg>
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

// Replaces the interpreter's luaL_error for the code linked into kplab.so (see the file comment). The
// message is formatted by lua_pushvfstring, as luaL_error does; Safe<> prefixes the same luaL_where(L, 1)
// luaL_error would have.
extern "C" int luaL_error(lua_State* L, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  const char* text = lua_pushvfstring(L, fmt, args);
  va_end(args);
  std::string message = text != nullptr ? text : "";
  lua_pop(L, 1);
  throw kplab::host::ModuleLuaError(message);
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
