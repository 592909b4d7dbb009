// The kplab command line. Exit codes: exit_code.h (docs/cli.md).
//
// Threads: one command runs on the thread that calls it; a command may start threads of its own (--threads),
// each joined before it returns.
#pragma once

#include <string>
#include <vector>

#include "exit_code.h"

namespace kplab::host {

int Main(int argc, char** argv);

class Args;
struct EvalRequest;
// The options `kplab eval` and `kplab cache phrases` share: dataset and predictions formats, --source,
// --profile, --metrics, --plugins, --param (not --dataset and --predictions themselves).
void TakeCorpusOptions(Args& a, EvalRequest& req);
// "+NAME=VALUE" for each --knob NAME=VALUE, to append to a profile spec (ResolveProfile checks them).
std::string KnobSuffix(Args& a);

// Commands in cli_model.cc.
int CmdModel(std::vector<std::string> args);
int CmdNeighbors(std::vector<std::string> args);
int CmdCache(std::vector<std::string> args);

}  // namespace kplab::host
