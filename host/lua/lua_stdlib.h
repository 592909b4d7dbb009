// Threads: each function works on one lua_State, on that state's thread.
#pragma once

struct lua_State;

namespace kplab::host {

// Replaces string.rep and table.insert, remove, move, concat, unpack and sort in the global string and
// table libraries of L with versions whose loops are charged to the instruction budget (lua_stdlib.cc).
// Same results and error texts as Lua's, except that table.sort is stable: equal elements keep their
// order, so ties come out one way on every run (Lua's picks pivots from the clock). [-0, +0]
void InstallBoundedStdlib(lua_State* L);

}  // namespace kplab::host
