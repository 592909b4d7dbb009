// The kplab command line. Exit codes (docs/cli.md):
//   0 success; 1 usage error; 2 bad input (file:line error); 3 a metric script failed;
//   4 run-store error; 5 internal error.
#pragma once

#include <string>
#include <vector>

namespace kplab::host {

enum ExitCode { kExitOk = 0, kExitUsage = 1, kExitInput = 2, kExitScript = 3, kExitStore = 4, kExitInternal = 5 };

int Main(int argc, char** argv);

// Commands in cli_model.cc.
int CmdModel(std::vector<std::string> args);
int CmdNeighbors(std::vector<std::string> args);
int CmdCache(std::vector<std::string> args);

}  // namespace kplab::host
