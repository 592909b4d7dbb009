// Failures that used to be reported by how the host reached them rather than by what went wrong.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;

// A Lua error raised where no protected call catches it -- a metamethod of a value score returned, run
// while the host reads it -- is reported with the plugin's own message and position, as a plugin error
// (exit 3), never as "unprotected Lua error" or an internal error.
TEST(ClearErrors, ALuaErrorTheHostRunsIntoIsThePluginsOwnMessage) {
  const fs::path dir = fs::temp_directory_path() / ("kplab_clear_errors_" + std::to_string(::getpid()));
  fs::create_directories(dir / "plugins");
  std::ofstream(dir / "plugins/tostr.lua")
      << "-- kplab-api: 2\n"
         "return kp.metric{ name = 'tostr', version = '1',\n"
         "  columns = function(c, p) return { x = c:column('x') } end,\n"
         "  score = function(doc, p, ctx, out)\n"
         "    out[setmetatable({}, {__tostring = function() error('my own message') end})] = 1\n"
         "  end }\n";
  const kplab::test::Output o = kplab::test::RunKplab(
      dir, "",
      "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --no-store --plugins " +
          (dir / "plugins").string() + " --metrics tostr");
  fs::remove_all(dir);
  EXPECT_EQ(o.code, 3) << o.err;
  EXPECT_EQ(o.err.find("unprotected"), std::string::npos) << o.err;
  EXPECT_EQ(o.err.find("internal error"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("tostr.lua"), std::string::npos) << o.err;
}

// Numbers a script passes as options are checked, not clamped or read as 0: kp.evaluate's opts.threads
// as the command line's --threads (0 = one per core, up to 64), kp.runs.table's decimals 0..9.
TEST(ClearErrors, ScriptOptionsOutOfRangeAreErrors) {
  const fs::path dir = fs::temp_directory_path() / ("kplab_clear_opts_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string db = (dir / "r.db").string();
  std::ofstream(dir / "s.lua")
      << "local c = kp.load{dataset = 'examples/tiny', predictions = 'examples/tiny/predictions.txt'}\n"
         "for _, t in ipairs{-1, 65, 1.5, 'abc', true} do\n"
         "  local ok, err = pcall(kp.evaluate, c, {'exact'}, nil, {threads = t})\n"
         "  print(ok, err)\n"
         "end\n"
         "print(kp.evaluate(c, {'exact'}, nil, {threads = 2, db = '"
      << db
      << "'}).aggregates['all.p@5.micro'])\n"
         "for _, d in ipairs{-1, 10, 2.5, 'x'} do\n"
         "  print(pcall(kp.runs.table, {db = '"
      << db
      << "', metrics = 'all.p@5.micro', format = 'table', decimals = d}))\n"
         "end\n"
         "print(kp.runs.table{db = '"
      << db << "', metrics = 'all.p@5.micro', format = 'table', decimals = 3}.text)\n";
  const kplab::test::Output o =
      kplab::test::RunKplab(dir, "", "run --allow-write " + dir.string() + " " + (dir / "s.lua").string());
  fs::remove_all(dir);
  ASSERT_EQ(o.code, 0) << o.err;
  std::istringstream lines(o.out);
  std::vector<std::string> got;
  for (std::string l; std::getline(lines, l);) got.push_back(l);
  ASSERT_GE(got.size(), 10u) << o.out;
  const std::string threads = "false\tkp.evaluate: opts.threads must be an integer from 0 (one per core) to 64";
  for (int i = 0; i < 5; ++i) EXPECT_EQ(got[i], threads) << i;
  EXPECT_EQ(got[5], "0.48");  // a valid count runs: examples/tiny's p@5 micro, as file_gate_test reads it
  const std::string decimals = "false\tkp.runs.table: decimals must be an integer from 0 to 9";
  for (int i = 6; i < 10; ++i) EXPECT_EQ(got[i], decimals) << i;
  EXPECT_NE(o.out.find("48.000"), std::string::npos) << o.out;  // three decimals, in percent
}

}  // namespace
