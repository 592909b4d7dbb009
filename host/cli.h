// The kplab command line. Exit codes (docs/cli.md):
//   0 success; 1 usage error; 2 bad input (file:line error); 3 a metric script failed;
//   4 run-store error; 5 internal error.
#pragma once

#include "kplab/result.h"

#include <string>
#include <vector>

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

int Main(int argc, char** argv);

class Args;
struct EvalRequest;
// The options `kplab eval` and `kplab cache phrases` share: dataset and predictions formats, --source,
// --profile, --metrics, --plugins, --param (not --dataset and --predictions themselves).
void TakeCorpusOptions(Args& a, EvalRequest& req);

// Commands in cli_model.cc.
int CmdModel(std::vector<std::string> args);
int CmdNeighbors(std::vector<std::string> args);
int CmdCache(std::vector<std::string> args);

}  // namespace kplab::host
