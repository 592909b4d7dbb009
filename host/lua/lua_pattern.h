// The VM's own string library: string.find/match/gmatch/gsub with every matcher step charged to the
// budget (lua_pattern.cc). A header of its own because LuaVm (sandbox.cc) installs it and must not
// depend on the kp module bindings (bindings.h), which depend on the VM.
//
// Threads: InstallBudgetedPatterns works on one lua_State, on that state's thread.
#pragma once

struct lua_State;

namespace kplab::host {

// Replaces the pattern functions of the string table on top of the stack. [-0, +0]
void InstallBudgetedPatterns(lua_State* L);

}  // namespace kplab::host
