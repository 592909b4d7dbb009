// Threads: each function works on one lua_State, on that state's thread.
#pragma once

struct lua_State;

namespace kplab::host {

// Replaces string.rep and table.insert, remove, move, concat, unpack and sort in the global string and
// table libraries of L with versions whose loops are charged to the instruction budget (lua_stdlib.cc).
// Same results and error texts as Lua's. [-0, +0]
void InstallBoundedStdlib(lua_State* L);

}  // namespace kplab::host
