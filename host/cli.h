// The kplab command line. Exit codes (docs/cli.md):
//   0 success; 1 usage error; 2 bad input (file:line error); 3 a metric script failed;
//   4 run-store error; 5 internal error.
#pragma once

namespace kplab::host {

enum ExitCode { kExitOk = 0, kExitUsage = 1, kExitInput = 2, kExitScript = 3, kExitStore = 4, kExitInternal = 5 };

int Main(int argc, char** argv);

}  // namespace kplab::host
