// Every entry point that opens a run store refuses a FIFO at its path (docs/store.md, "Store paths"),
// as a property over the front-ends rather than one path: the CLI commands and subcommands whose help
// names --db, --from or $KPLAB_DB, and the kp.* functions whose stubs (docs/lua/kp.lua) take a `db`,
// are listed from the help and the stubs, and each must have an invocation below that tries a FIFO; a
// new command or function with a store path fails this test until it is added. A FIFO made every
// reading command block for ever before. (Python: tests/python/test_store_safety.py; the C ABI:
// tests/c_api/c_api_test.c; core: tests/core/store_paths_test.cc.)
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.h"

namespace fs = std::filesystem;
using kplab::test::Output;

namespace {

class StorePaths : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_store_paths_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fifo_ = (dir_ / "fifo.db").string();
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0644), 0);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // kplab under `timeout`, so that a command that blocks fails the test instead of hanging it.
  Output Run(const std::string& args, const std::string& env = "", const std::string& input = "") {
    return kplab::test::RunKplab(dir_, "KPLAB_MODELS=" + (dir_ / "models").string() + " " + env + " timeout 60", args,
                                 input);
  }
  std::string Expected() const { return fifo_ + ": a FIFO, not a regular file (expected a kplab database)"; }

  fs::path dir_;
  std::string fifo_;
};

std::string SlurpStoreFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "kplab runs list|show ID|compare A B [--db FILE]" -> {"runs list", "runs show", "runs compare"};
// "kplab eval --dataset PATH" -> {"eval"}: the words after the command, up to the first option, are
// '|'-separated alternatives whose first word is a subcommand when it is a lower-case word.
std::set<std::string> UsageCommands(const std::string& line) {
  std::istringstream words(line);
  std::string kplab, command;
  words >> kplab >> command;
  std::string rest;
  std::getline(words, rest);
  rest = rest.substr(rest.find_first_not_of(' ') == std::string::npos ? rest.size() : rest.find_first_not_of(' '));
  const std::size_t stop = std::min(rest.find(" ["), rest.find(" -"));
  const std::string head = rest.substr(0, stop);
  std::set<std::string> out;
  for (std::size_t start = 0; start <= head.size();) {
    const std::size_t bar = head.find('|', start);
    std::istringstream alt(head.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
    std::string sub;
    alt >> sub;
    const bool word = !sub.empty() && std::all_of(sub.begin(), sub.end(), [](char c) { return c >= 'a' && c <= 'z'; });
    out.insert(word ? command + " " + sub : command);
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return out;
}

// Each CLI command or subcommand that opens a store, with an invocation whose store is DB. Commands
// that need a model get the tiny word-vector one imported in the test.
const std::map<std::string, std::vector<std::string>>& CliInvocations() {
  static const std::map<std::string, std::vector<std::string>> kCases = {
      {"eval",
       {"eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --db DB",
        "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --metrics semrp --model tiny "
        "--no-store --db DB"}},
      {"runs list", {"runs list --db DB"}},
      {"runs show", {"runs show 1 --db DB"}},
      {"runs compare", {"runs compare 1 2 --db DB"}},
      {"runs export", {"runs export 1 --db DB"}},
      {"runs merge", {"runs merge --from DB --db OUT", "runs merge --from GOOD --db DB"}},
      {"runs rm", {"runs rm 1 --db DB"}},
      {"runs doc", {"runs doc 1 d1 --db DB"}},
      {"runs docs", {"runs docs 1 --sort all.p@5 --db DB"}},
      {"runs table", {"runs table --metrics all.p@5* --db DB"}},
      {"report", {"report 1 -o OUT.html --db DB"}},
      {"model info", {"model info tiny --db DB"}},
      {"neighbors", {"neighbors keyphrase --model tiny --db DB"}},
      {"cache add", {"cache add examples/tiny --model tiny --db DB"}},
      {"cache info", {"cache info --db DB"}},
      {"repl", {"repl --db DB"}},
      {"run", {"run --allow-read DIR DIR/list.lua"}},
  };
  return kCases;
}

// The store-taking commands, from `kplab help` and `kplab help COMMAND`: a usage line that names
// --db or --from, every subcommand of a command whose help does, and a command whose help names
// $KPLAB_DB.
TEST_F(StorePaths, EveryCliCommandWithAStorePathIsTried) {
  Output help = Run("help");
  ASSERT_EQ(help.code, 0) << help.err;
  std::set<std::string> store_taking;
  std::regex command_line("^  ([a-z]+) +\\S");
  std::istringstream lines(help.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, command_line)) continue;
    Output h = Run("help " + m[1].str());
    const std::string text = h.out + h.err;
    const bool mentions = text.find("--db") != std::string::npos || text.find("--from") != std::string::npos ||
                          text.find("KPLAB_DB") != std::string::npos;
    if (!mentions) continue;
    std::istringstream usage(text);
    for (std::string u; std::getline(usage, u);) {
      if (!u.starts_with("kplab " + m[1].str())) continue;
      // Every subcommand of a command that takes a store: `runs doc` reads it though its line says so not.
      for (const std::string& c : UsageCommands(u)) {
        const bool own = u.find("--db") != std::string::npos || u.find("--from") != std::string::npos;
        if (own || m[1].str() == "runs" || c == m[1].str()) store_taking.insert(c);
      }
    }
  }
  ASSERT_GT(store_taking.size(), 10u);
  for (const std::string& c : store_taking) {
    EXPECT_TRUE(CliInvocations().count(c)) << "`kplab " << c << "` takes a store path and has no FIFO case here";
  }
}

TEST_F(StorePaths, EveryCliInvocationRefusesAFifo) {
  Output imported = Run("model import tiny tests/data/embed/tiny.txt --backend wordvec");
  ASSERT_EQ(imported.code, 0) << imported.err;
  const std::string good = (dir_ / "good.db").string();
  for (int i : {0, 1}) {
    Output shard = Run("eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --shard " +
                       std::to_string(i) + "/2 --db " + good);
    ASSERT_EQ(shard.code, 0) << shard.err;
  }
  std::ofstream(dir_ / "list.lua") << "print(#kp.runs.list())\n";
  for (const auto& [command, invocations] : CliInvocations()) {
    for (std::string args : invocations) {
      args = std::regex_replace(args, std::regex("\\bDB\\b"), fifo_);
      args = std::regex_replace(args, std::regex("\\bGOOD\\b"), good);
      args = std::regex_replace(args, std::regex("\\bOUT\\b"), (dir_ / "out").string());
      args = std::regex_replace(args, std::regex("\\bDIR\\b"), dir_.string());
      const std::string env = command == "run" ? "KPLAB_DB=" + fifo_ : "";
      Output o = Run(args, env, command == "repl" ? ":runs\n" : "");
      EXPECT_NE(o.code, 124) << "kplab " << args << " blocked on the FIFO";
      EXPECT_NE(o.err.find(Expected()), std::string::npos) << "kplab " << args << "\n" << o.err << o.out;
      // Store errors name the file themselves; a front-end that prefixes it again says it twice.
      EXPECT_EQ(o.err.find(fifo_ + ": " + fifo_), std::string::npos) << "kplab " << args << "\n" << o.err;
      if (command != "run" && command != "repl") {
        EXPECT_EQ(o.code, 4) << "kplab " << args;
      }
    }
  }
  // $KPLAB_DB names the default store of every command without --db.
  Output env = Run("runs list", "KPLAB_DB=" + fifo_);
  EXPECT_EQ(env.code, 4);
  EXPECT_NE(env.err.find(Expected()), std::string::npos) << env.err;
}

// A reading command never makes a store: an empty file (a `touch`ed path, a download that failed) is
// refused as no kplab database and stays empty. `runs list` used to give it a schema (1.5 MB) and list
// nothing (a hostile pass).
TEST_F(StorePaths, ReadingCommandsLeaveAnEmptyFileEmpty) {
  const std::string empty = (dir_ / "empty.db").string();
  std::ofstream(empty).close();
  std::ofstream(dir_ / "list.lua") << "print(#kp.runs.list())\n";
  for (const std::string& args :
       {"runs list --db " + empty, "runs show 1 --db " + empty, "runs export 1 --db " + empty,
        "report 1 -o " + (dir_ / "r.html").string() + " --db " + empty, "run " + (dir_ / "list.lua").string()}) {
    const Output o = Run(args, "KPLAB_DB=" + empty);
    EXPECT_EQ(o.code, args.starts_with("run ") ? 3 : 4) << args << "\n" << o.err;
    EXPECT_NE(o.err.find(empty + ": not a kplab database (it has no tables)"), std::string::npos) << args << "\n"
                                                                                                  << o.err;
    EXPECT_EQ(fs::file_size(empty), 0u) << args;
  }
}

// The kp.* functions whose stubs take a store (`db`, or an opts table with `db`), each with a chunk
// that tries the FIFO through it.
TEST_F(StorePaths, EveryLuaFunctionWithAStorePathRefusesAFifo) {
  const std::map<std::string, std::string> cases = {
      {"kp.runs.list", "kp.runs.list(DB)"},
      {"kp.runs.get", "kp.runs.get(1, DB)"},
      {"kp.runs.table", "kp.runs.table{metrics = 'all.p@5', db = DB}"},
      {"kp.evaluate",
       "kp.evaluate(kp.load{dataset = 'examples/tiny', predictions = 'examples/tiny/predictions.txt'}, 'exact', nil, "
       "{db = DB})"},
  };
  const std::string stubs = SlurpStoreFile(std::string(KPLAB_SOURCE_DIR) + "/docs/lua/kp.lua");
  std::set<std::string> store_taking;
  std::istringstream lines(stubs);
  std::string params;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("---@param")) params += line + "\n";
    if (line.starts_with("function ")) {
      const std::string name = line.substr(9, line.find('(') - 9);
      if (std::regex_search(params, std::regex("@param db\\?? |[{,] *db\\??:"))) store_taking.insert(name);
      params.clear();
    }
  }
  EXPECT_EQ(store_taking.size(), cases.size());
  for (const std::string& f : store_taking) {
    ASSERT_TRUE(cases.count(f)) << f << " takes a store path and has no FIFO case here";
    std::ofstream(dir_ / "s.lua") << "local DB = '" << fifo_ << "'\nlocal ok, e = pcall(function() return "
                                  << cases.at(f) << " end)\nprint(ok, e)\n";
    Output o =
        Run("run --allow-read " + dir_.string() + " --allow-write " + dir_.string() + " " + (dir_ / "s.lua").string());
    EXPECT_EQ(o.code, 0) << f << ": " << o.err;
    EXPECT_NE(o.out.find("false"), std::string::npos) << f << ": " << o.out;
    EXPECT_NE(o.out.find(Expected()), std::string::npos) << f << ": " << o.out << o.err;
  }
}

}  // namespace
