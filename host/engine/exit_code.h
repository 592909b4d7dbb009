// Process exit codes of kplab's commands, one per kind of failure (docs/cli.md):
//   0 success; 1 usage error; 2 bad input (file:line error); 3 a metric script failed;
//   4 run-store error; 5 internal error.
// Below both halves of the app: `kplab` (cli/cli.cc) dispatches to `kplab repl` (repl/repl.cc), and the
// REPL returns these codes too, so they live under both instead of in cli.h (which would make cli and
// repl include each other).
#pragma once

#include "kplab/result.h"

namespace kplab::host {

enum ExitCode { kExitOk = 0, kExitUsage = 1, kExitInput = 2, kExitScript = 3, kExitStore = 4, kExitInternal = 5 };

// The exit code of a failure of this kind (a limit is reached by a script: 3).
inline int ExitCodeFor(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage: return kExitUsage;
    case ErrorKind::kInput: return kExitInput;
    case ErrorKind::kScript:
    case ErrorKind::kLimit: return kExitScript;
    case ErrorKind::kStore: return kExitStore;
    case ErrorKind::kInternal: return kExitInternal;
  }
  return kExitInternal;
}

}  // namespace kplab::host
