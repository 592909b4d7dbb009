// The one table of what each C function a sandboxed script can reach may cost (docs/plugins.md,
// Limits). Host code runs a script's code only through LuaVm::Call, whose count hook meters it; what a C
// function does on its own must be bounded too, or a script could spend it past every limit with one
// instruction. tests/host/sandbox_rules_test.cc walks the environments of a plugin, a script and the
// REPL (with the values the host hands them) and fails on any C function missing from this table.
//
// Threads: a constant table, read from any thread.
#pragma once

#include <span>
#include <string_view>

namespace kplab::host {

enum class CostKind {
  kConstant,  // O(1), or O(number of arguments and results): the Lua stack bounds them
  kSize,      // O(size of its arguments or result): values that already live in the VM (so the memory cap
              // bounds them; a result of 1 MiB or more is charged by the allocator) or in the loaded data
  kCharged,   // charges its work to the instruction budget before or while doing it (ChargeNative,
              // CheckNative) and checks native buffers against the memory cap first (ReserveNative)
  kScript,    // calls the script's code (a function or metamethod it is given), metered by the count
              // hook; its own work is O(1) per call
};

struct CostEntry {
  std::string_view name;   // "string.rep", "kp.stats.mean", "Matrix:get", "Matrix.__len", "(proxy).__len"
  CostKind kind;
  std::string_view bound;  // the bound, and what checks it first
  bool run_only = false;   // made by the runner during a run only (ctx.unit): not in the tests' environments
};

std::span<const CostEntry> CostTable();

}  // namespace kplab::host
