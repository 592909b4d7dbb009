// Process exit codes of kplab's commands, one per kind of failure (docs/cli.md):
//   0 success; 1 usage error; 2 bad input (file:line error); 3 a metric script failed;
//   4 run-store error; 5 internal error.
// Below both halves of the app: `kplab` (cli/cli.cc) dispatches to `kplab repl` (repl/repl.cc), and the
// REPL returns these codes too, so they live under both instead of in cli.h (which would make cli and
// repl include each other).
//
// Threads: a constant table and pure functions.
#pragma once

#include "kplab/result.h"

namespace kplab::host {

enum ExitCode { kExitOk = 0, kExitUsage = 1, kExitInput = 2, kExitScript = 3, kExitStore = 4, kExitInternal = 5 };

// The one table from an error's kind to each front-end's form of it (docs/library.md, "Errors"):
//   exit_code     `kplab`'s exit status, and what the C ABI's kplab_error_kind() returns after a failure;
//   python_class  the kplab.* exception the Python module raises (UsageError and LimitError are
//                 subclasses of InputError and ScriptError, the classes they were raised as before);
// the message is the Error's in every front-end: after "kplab: " on stderr, as str(exception), as the C
// errptr text, and after "kp.evaluate: " in the Lua error. A limit is reached by a script: exit 3.
struct ErrorForm {
  ErrorKind kind;
  int exit_code;
  const char* python_class;
};

inline constexpr ErrorForm kErrorForms[] = {
    {ErrorKind::kUsage, kExitUsage, "UsageError"},   {ErrorKind::kInput, kExitInput, "InputError"},
    {ErrorKind::kScript, kExitScript, "ScriptError"}, {ErrorKind::kLimit, kExitScript, "LimitError"},
    {ErrorKind::kStore, kExitStore, "StoreError"},   {ErrorKind::kInternal, kExitInternal, "InternalError"},
};

inline const ErrorForm& FormFor(ErrorKind kind) {
  for (const ErrorForm& f : kErrorForms) {
    if (f.kind == kind) return f;
  }
  return kErrorForms[5];  // kInternal
}

// The exit code of a failure of this kind.
inline int ExitCodeFor(ErrorKind kind) { return FormFor(kind).exit_code; }

}  // namespace kplab::host
