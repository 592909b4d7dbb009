// The script-only part of the kp API (`kplab run SCRIPT.lua`): kp.load, kp.runs.list/get, kp.write,
// kp.read, kp.include. See lua_script.cc and docs/scripts.md.
//
// Threads: a FileGrants is a plain value; the functions that take a LuaVm or a lua_State use it on that VM's
// thread only (a script, the REPL and each of their VMs are single-threaded).
#pragma once

#include <string>
#include <vector>

#include <lua.hpp>

#include "kplab/file_gate.h"
#include "kplab/result.h"
#include "sandbox.h"

struct lua_State;

namespace kplab::host {

// Where a script's kp.read, kp.write, kp.load, kp.runs, kp.include and kp.evaluate may reach
// (docs/scripts.md): the grants of kplab/file_gate.h, whose GateFile every opener calls. Reading is
// allowed under `read` and `write`, writing under `write`; a path is checked after resolving it, so
// neither ".." nor a symbolic link leads out. FileGrants::User() (the Lua module, where io.* exists
// anyway) checks nothing.
using kplab::FileGrants;

// The grants of `kplab run` and the REPL: the current directory (read and write), every --allow-read
// DIR (read) and --allow-write DIR (read and write), and the run store $KPLAB_DB names and `store` (the
// REPL's --db) with the side files SQLite keeps beside it (-wal, -shm, -journal: read). Errors name the
// option: "--allow-read: a\0b: path contains a NUL byte".
Result<FileGrants> MakeFileGrants(const std::vector<std::string>& allow_read,
                                  const std::vector<std::string>& allow_write, const std::string& store = "");

// Adds the script API to the VM's kp table and makes `grants` the VM's file context (LuaVm::
// SetFileGrants: the script's code and every kp function it calls open files under them); kp.include
// resolves names against script_path's directory (which kp.include, and only it, may read besides the
// grants).
// What the user names on the command line is theirs to read: every argument of `kplab run SCRIPT ...`
// (or the value of --opt=VALUE) that names an existing file or directory is added to the script's read
// grants, so `kplab run scripts/analysis/x.lua --db ../runs.db` works from any directory. Plugins stay
// confined: a plugin reads only the files its string parameters name (kplab/file_gate.h).
void GrantNamedPaths(FileGrants& grants, const std::vector<std::string>& args);
// The same for a VM whose script API is installed (the REPL's :load DATASET PREDICTIONS): each existing
// path is added to the VM's grants (LuaVm::file_grants and the ones kp functions check).
void GrantNamedPaths(LuaVm& vm, const std::vector<std::string>& paths);

void InstallScriptApi(LuaVm& vm, const std::string& script_path, const FileGrants& grants);
// The functions InstallScriptApi adds (kp.load, kp.runs, kp.write, kp.read, kp.include), for the kp
// table on top of the stack of any lua_State (the Lua module: unconfined unless grants were recorded
// in that state by InstallScriptApi). [-0, +0]
void InstallScriptModule(lua_State* L);
// The environment of `kplab run SCRIPT`: InstallScriptApi(vm, script_path, grants), then a sandboxed
// environment recorded for kp.include (SetScriptEnv) with print. The VM has the kp modules (InstallAll).
// [-0, +1]
void PushScriptEnv(LuaVm& vm, const std::string& script_path, const FileGrants& grants);
// kp.load itself (the REPL's :load calls it without looking it up in a session's globals).
lua_CFunction KpLoadFunction();
// Records the environment table on top of the stack as the one kp.include runs files in. [-0, +0]
void SetScriptEnv(lua_State* L);

}  // namespace kplab::host
