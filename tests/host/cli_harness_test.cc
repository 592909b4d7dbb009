// The end-to-end tests' runner (cli_harness.h) starts kplab without a shell when the command needs none:
// it must split words as the shell does, leave to the shell what it cannot split, and give what the
// shell would give.
#include "cli_harness.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using kplab::test::PlainWords;
using kplab::test::RunKplab;

// The words dash makes of a fragment: `printf '<%s>\n' FRAGMENT`, run by /bin/sh itself.
std::vector<std::string> ShellWords(const std::string& fragment) {
  const fs::path out = fs::temp_directory_path() / ("kplab_harness_words_" + std::to_string(::getpid()));
  const std::string cmd = "printf '<%s>\\n' " + fragment + " > " + out.string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::vector<std::string> words;
  std::string text = kplab::test::Slurp(out);
  fs::remove(out);
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = text.find(">\n<", at);
    const std::size_t stop = end == std::string::npos ? text.size() - 2 : end;
    words.push_back(text.substr(at + 1, stop - at - 1));
    at = stop + 2;
  }
  return words;
}

TEST(CliHarness, PlainWordsAreTheShellsWords) {
  for (const std::string fragment :
       {"eval --dataset examples/tiny --metrics exact", "  two   blanks\tand a tab ", "--param 'a.b=x y' next", "''",
        "a'' ''b", "\"double quoted\" 'single'\"mixed\"", "k=v --x=1,2 -- -", "a'b c'd",
        // What a shell would expand, inside quotes: literal, so plain.
        "'$HOME * ; | `id`'", "\"a;b|c <d> *\"", "'line\nbreak' x"}) {
    const auto words = PlainWords(fragment);
    ASSERT_TRUE(words.has_value()) << fragment;
    EXPECT_EQ(*words, ShellWords(fragment)) << fragment;
  }
}

TEST(CliHarness, WhatTheShellWouldExpandIsLeftToTheShell) {
  for (const std::string fragment : {"$HOME", "a*", "x;y", "a|b", "a&b", "<in", ">out", "`id`", "$(id)", "\"$HOME\"",
                                     "a\\ b", "~/x", "#c", "(a)", "{a,b}", "'unclosed", "x?"}) {
    EXPECT_FALSE(PlainWords(fragment).has_value()) << fragment;
  }
}

// The same commands through the direct start and through the shell (`: && ` before them needs the
// shell): the same exit code and the same bytes on both streams. The last assignment of a name wins,
// as in the shell; a command that cannot be started is 127, as the shell's.
TEST(CliHarness, DirectStartGivesWhatTheShellGives) {
  const fs::path dir = fs::temp_directory_path() / ("kplab_harness_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string db = (dir / "runs.db").string();
  const fs::path spin = dir / "spin.lua";  // within the instruction budget, and prints only at its end
  std::ofstream(spin) << "local n = 0\nfor i = 1, 3e7 do n = n + i end\nprint(n)\n";
  struct Case {
    std::string env, args, input;
  };
  const std::vector<Case> cases = {
      {"", "--version", ""},
      {"", "eval --no-such-option", ""},
      {"", "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --metrics exact --no-store", ""},
      {"KPLAB_DB=" + (dir / "first.db").string() + " KPLAB_DB=" + db, "runs list", ""},
      {"", "stem", "running\nflies\n"},
      {"timeout 60", "--version", ""},
      {"no-such-program-kplab", "--version", ""},
      {"9X=1", "--version", ""},  // not a name: a command, which cannot be started
      // Killed by SIGKILL at the first clock tick it runs through (RLIMIT_CPU is checked on ticks): 128 + 9.
      // It must outlast a tick: `--version` is done within one as often as not, the loop takes ~0.1 s.
      {"prlimit --cpu=0", "run " + spin.string(), ""},
  };
  ASSERT_EQ(
      RunKplab(dir, "KPLAB_DB=" + db, "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt").code,
      0);
  for (const Case& c : cases) {
    ASSERT_TRUE(PlainWords(c.env) && PlainWords(c.args)) << c.args;
    const kplab::test::Output direct = RunKplab(dir, c.env, c.args, c.input);
    const std::string through_shell = ": && " + c.env;  // `&&`: PlainWords refuses it, the shell runs `:` first
    ASSERT_FALSE(PlainWords(through_shell));
    const kplab::test::Output shell = RunKplab(dir, through_shell, c.args, c.input);
    EXPECT_EQ(direct.code, shell.code) << c.env << " " << c.args;
    EXPECT_EQ(direct.out, shell.out) << c.env << " " << c.args;
    if (c.env == "prlimit --cpu=0") {
      EXPECT_EQ(direct.code, 137);
    }
    if (c.env != "no-such-program-kplab" && c.env != "9X=1" && c.env != "prlimit --cpu=0") {
      // The shell's own messages (not found, Killed) are not kplab's.
      EXPECT_EQ(direct.err, shell.err) << c.env << " " << c.args;
    }
  }
  EXPECT_FALSE(fs::exists(dir / "first.db"));
  fs::remove_all(dir);
}

}  // namespace
