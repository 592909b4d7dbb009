// The script-only part of the kp API (`kplab run SCRIPT.lua`): kp.load, kp.runs.list/get, kp.write,
// kp.read, kp.include. See lua_script.cc and docs/scripts.md.
#pragma once

#include <string>

#include "sandbox.h"

struct lua_State;

namespace kplab::host {

// Adds the script API to the VM's kp table; kp.include resolves names against script_path's directory.
void InstallScriptApi(LuaVm& vm, const std::string& script_path);
// The functions InstallScriptApi adds (kp.load, kp.runs, kp.write, kp.read, kp.include), for the kp
// table on top of the stack of any lua_State (the Lua module). [-0, +0]
void InstallScriptModule(lua_State* L);
// Records the environment table on top of the stack as the one kp.include runs files in. [-0, +0]
void SetScriptEnv(lua_State* L);

}  // namespace kplab::host
