// The kplab command line. Exit codes: exit_code.h (docs/cli.md).
#pragma once

#include <string>
#include <vector>

#include "exit_code.h"

namespace kplab::host {

int Main(int argc, char** argv);

// Commands in cli_model.cc.
int CmdModel(std::vector<std::string> args);
int CmdNeighbors(std::vector<std::string> args);
int CmdCache(std::vector<std::string> args);

}  // namespace kplab::host
