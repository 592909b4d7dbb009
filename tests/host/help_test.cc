// `kplab help COMMAND` exists for every command that `kplab help` lists, and `kplab COMMAND --help`
// prints the same text (docs/cli.md, "kplab help").
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "../core/temp_dir.h"
#include "cli_harness.h"

namespace kplab::test {
namespace {

// The command names of the usage text's "commands:" block (lines "  NAME  summary").
std::vector<std::string> ListedCommands(const std::string& usage) {
  std::vector<std::string> names;
  std::istringstream in(usage);
  std::string line;
  bool in_block = false;
  const std::regex row(R"(^  ([a-z]+)\s{2,}\S.*$)");
  while (std::getline(in, line)) {
    if (line == "commands:") {
      in_block = true;
      continue;
    }
    if (!in_block) continue;
    if (line.empty()) break;
    std::smatch m;
    if (std::regex_match(line, m, row)) names.push_back(m[1]);
  }
  return names;
}

TEST(Help, EveryListedCommandHasHelpAndDashDashHelp) {
  TempDir dir;
  const Output usage = RunKplab(dir.path(), "", "help");
  ASSERT_EQ(usage.code, 0) << usage.err;
  const auto names = ListedCommands(usage.out);
  // The commands the README documents must all be listed.
  for (const char* expected : {"eval", "runs", "profiles", "stem", "model", "neighbors", "cache", "run",
                               "help", "version"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  for (const auto& name : names) {
    const Output h = RunKplab(dir.path(), "", "help " + name);
    EXPECT_EQ(h.code, 0) << name << ": " << h.err;
    EXPECT_EQ(h.out.rfind("kplab " + name, 0), 0u) << name << " help starts with its usage line:\n" << h.out;
    if (name == "help" || name == "version") continue;
    const Output d = RunKplab(dir.path(), "", name + " --help");
    EXPECT_EQ(d.code, 0) << name << " --help: " << d.err;
    EXPECT_EQ(d.out, h.out) << name;
  }
}

TEST(Help, SubcommandFallsBackToItsCommandAndUnknownIsAUsageError) {
  TempDir dir;
  const Output runs = RunKplab(dir.path(), "", "help runs");
  const Output compare = RunKplab(dir.path(), "", "help runs compare");
  EXPECT_EQ(compare.code, 0);
  EXPECT_EQ(compare.out, runs.out);
  const Output dash = RunKplab(dir.path(), "", "runs compare --help");
  EXPECT_EQ(dash.code, 0);
  EXPECT_EQ(dash.out, runs.out);
  const Output bad = RunKplab(dir.path(), "", "help frobnicate");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("no help for 'frobnicate'"), std::string::npos) << bad.err;
}

TEST(Help, RunPassesHelpToTheScript) {
  TempDir dir;
  const auto script = std::filesystem::path(dir.path()) / "args.lua";
  std::ofstream(script) << "print(#arg, arg[1])\n";
  const Output o = RunKplab(dir.path(), "", "run " + script.string() + " --help");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "1\t--help\n");
}

}  // namespace
}  // namespace kplab::test
