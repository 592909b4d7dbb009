// `kplab repl` driven through a real pseudo-terminal (pty_harness.h): keys in, screen text out, as a
// person would use it. Expected values come from arithmetic, the example data files and the stub file,
// never from the REPL's own earlier output.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "../core/temp_dir.h"
#include "cli_harness.h"
#include "pty_harness.h"

namespace kplab::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPrompt = "kp> ";

// A REPL in a pty, run from the source tree, with HOME in a temp dir (the history file goes to
// HOME/.local/state/kplab/history) and the run store given by db.
class Repl {
 public:
  Repl(const TempDir& home, const std::string& db, const std::vector<std::string>& args = {})
      : session_(Argv(args), KPLAB_SOURCE_DIR,
                 {"HOME=" + home.path(), "XDG_STATE_HOME", "KPLAB_HISTORY", "KPLAB_DB=" + db, "TERM=xterm"}) {}
  PtySession& s() { return session_; }
  // Types a line (Enter is \r on a terminal) and waits for `expect`.
  bool Line(const std::string& text, const std::string& expect) {
    session_.Send(text + "\r");
    return session_.WaitFor(expect);
  }

 private:
  static std::vector<std::string> Argv(const std::vector<std::string>& extra) {
    std::vector<std::string> v = {KPLAB_BINARY, "repl"};
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  }
  PtySession session_;
};

std::string CollapseSpaces(const std::string& s) { return std::regex_replace(s, std::regex(" +"), " "); }

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

class ReplTest : public ::testing::Test {
 protected:
  TempDir home_;
  std::string db_ = home_.File("runs.db");
};

TEST_F(ReplTest, ExpressionIsPrintedAndQuitEndsTheSession) {
  Repl r(home_, db_);
  ASSERT_TRUE(r.s().started()) << r.s().start_error();
  ASSERT_TRUE(r.s().WaitFor(kPrompt)) << r.s().Text();
  // lua.c's convention: the line is tried as `return 1+1` first.
  ASSERT_TRUE(r.Line("1+1", "\n2\n")) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  // Several values print tab-separated, like print.
  ASSERT_TRUE(r.Line("6*7, 'x'", "42\tx\n")) << r.s().Text();
  // A statement (no value) is run as is.
  ASSERT_TRUE(r.Line("y = 10", kPrompt));
  ASSERT_TRUE(r.Line("y * 3", "30\n")) << r.s().Text();
  r.s().Send(":quit\r");
  EXPECT_EQ(r.s().WaitExit(), 0) << r.s().Text();
}

TEST_F(ReplTest, IncompleteInputAsksForContinuationLines) {
  Repl r(home_, db_);
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  ASSERT_TRUE(r.Line("for i = 1, 2 do", ">> ")) << r.s().Text();
  ASSERT_TRUE(r.Line("  print(i * 10)", ">> ")) << r.s().Text();
  ASSERT_TRUE(r.Line("end", "10\n20\n")) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  // A multi-line function definition, then a call.
  ASSERT_TRUE(r.Line("function sq(x)", ">> "));
  ASSERT_TRUE(r.Line("return x * x end", kPrompt));
  ASSERT_TRUE(r.Line("sq(12)", "144\n")) << r.s().Text();
}

TEST_F(ReplTest, ErrorPrintsTracebackAndThePromptStaysUsable) {
  Repl r(home_, db_);
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  ASSERT_TRUE(r.Line("local function f() error('boom') end f()", "stdin:1: boom")) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor("stack traceback:")) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor("in local 'f'")) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  // A syntax error that is not merely incomplete is reported at once.
  ASSERT_TRUE(r.Line("x = = 1", "stdin:1:")) << r.s().Text();
  ASSERT_TRUE(r.Line("2^10", "1024.0\n")) << r.s().Text();
}

TEST_F(ReplTest, CtrlCInterruptsARunningLoopAndReturnsToThePrompt) {
  Repl r(home_, db_);
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  // A pure Lua loop.
  // The loop announces itself first, so the Ctrl-C surely lands while it runs, not at the prompt.
  r.s().Send("print('looping') while true do end\r");
  ASSERT_TRUE(r.s().WaitFor("looping\n")) << r.s().Text();
  r.s().Drain(100);
  r.s().Send("\x03");
  ASSERT_TRUE(r.s().WaitFor("interrupted!", 5000)) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor(kPrompt, 5000)) << r.s().Text();
  ASSERT_TRUE(r.Line("40 + 2", "42\n")) << r.s().Text();
  // A loop that spends its time in native calls: the hook fires between them.
  r.s().Send("print('stemming') while true do kp.stem('generalizations') end\r");
  ASSERT_TRUE(r.s().WaitFor("stemming\n")) << r.s().Text();
  r.s().Drain(100);
  r.s().Send("\x03");
  ASSERT_TRUE(r.s().WaitFor("interrupted!", 5000)) << r.s().Text();
  ASSERT_TRUE(r.Line("'still here'", "still here\n")) << r.s().Text();
  // Ctrl-C at the prompt drops the half-typed line.
  r.s().Send("this is not lua");
  r.s().Drain(100);
  r.s().Send("\x03");
  ASSERT_TRUE(r.s().WaitFor("^C\n", 5000)) << r.s().Text();
  ASSERT_TRUE(r.Line("1 + 2", "3\n")) << r.s().Text();
  // ... and an unfinished chunk at the continuation prompt.
  ASSERT_TRUE(r.Line("for i = 1, 2 do", ">> ")) << r.s().Text();
  r.s().Send("\x03");
  ASSERT_TRUE(r.s().WaitFor("^C\n", 5000)) << r.s().Text();
  ASSERT_TRUE(r.Line("5", "5\n")) << r.s().Text();
  // Ctrl-D on an empty line leaves. The pause lets libedit put the terminal in its raw mode first: a
  // ^D that reaches the terminal while it is still in canonical mode is the tty's end-of-file, which is
  // not a key libedit ever sees (a person cannot type that fast after the prompt).
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  r.s().Drain(300);
  r.s().Send("\x04");
  EXPECT_EQ(r.s().WaitExit(), 0) << r.s().Text();
}

TEST_F(ReplTest, HistoryPersistsAcrossSessions) {
  {
    Repl r(home_, db_);
    ASSERT_TRUE(r.s().WaitFor(kPrompt));
    ASSERT_TRUE(r.Line("3 * 7", "21\n")) << r.s().Text();
    r.s().Send(":quit\r");
    ASSERT_EQ(r.s().WaitExit(), 0);
  }
  const fs::path file = fs::path(home_.path()) / ".local/state/kplab/history";
  ASSERT_TRUE(fs::exists(file));
  {
    Repl r(home_, db_);
    ASSERT_TRUE(r.s().WaitFor(kPrompt));
    // Up arrow twice: the previous session's ":quit", then "3 * 7" (after the pause that lets libedit
    // take the terminal, as for Ctrl-D above).
    r.s().Drain(300);
    r.s().Send("\x1b[A");
    ASSERT_TRUE(r.s().WaitFor(":quit")) << r.s().Text();
    r.s().Send("\x1b[A");
    ASSERT_TRUE(r.s().WaitFor("3 * 7")) << r.s().Text();
    r.s().Send("\r");
    ASSERT_TRUE(r.s().WaitFor("21\n")) << r.s().Text();
  }
}

TEST_F(ReplTest, TabCompletesKpNamesGlobalsAndCommands) {
  Repl r(home_, db_);
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  // kp.st is ambiguous (stats, stem): both are listed.
  r.s().Send("kp.st\t");
  ASSERT_TRUE(r.s().WaitFor("stats")) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor("stem(")) << r.s().Text();
  // One more letter makes it unique: the completion inserts "m(".
  r.s().Send("e\t");
  r.s().Drain(200);
  ASSERT_TRUE(r.Line("'running')", "run\n")) << r.s().Text();  // Porter: running -> run (step 1b)
  // A sub-module.
  r.s().Send("kp.stats.spe\t");
  r.s().Drain(200);
  ASSERT_TRUE(r.Line("{1, 2, 3}, {3, 2, 1})", "-1.0")) << r.s().Text();  // reversed ranks: rho = -1
  // A user global and a :command.
  ASSERT_TRUE(r.Line("my_long_name = 5", kPrompt));
  r.s().Send("my_lo\t");
  r.s().Drain(200);
  ASSERT_TRUE(r.Line(" + 1", "6\n")) << r.s().Text();
  // Inside a string: metric plugin names.
  r.s().Send("help('rpr\t");
  r.s().Drain(200);
  ASSERT_TRUE(r.Line("')", "metric plugin rprec")) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  r.s().Send(":qu\t");
  r.s().Drain(200);
  r.s().Send("\r");
  EXPECT_EQ(r.s().WaitExit(), 0) << r.s().Text();
}

TEST_F(ReplTest, LoadPrettyPrintsListsDocumentsAndMatrices) {
  Repl r(home_, db_);
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  const std::size_t n_docs = ReadLines(std::string(KPLAB_SOURCE_DIR) + "/examples/tiny/tiny_context.txt").size();
  ASSERT_TRUE(r.Line(":load examples/tiny examples/tiny/predictions.txt",
                     "tiny = Corpus(tiny: " + std::to_string(n_docs) + " documents"))
      << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  // The references of document 1 are the first line of tiny_allkeywords.txt, in file order; "batch
  // jobs" occurs verbatim in that document's text, so it is marked present.
  const std::string refs_line = ReadLines(std::string(KPLAB_SOURCE_DIR) + "/examples/tiny/tiny_allkeywords.txt")[0];
  std::vector<std::string> refs;
  std::stringstream ss(refs_line);
  for (std::string p; std::getline(ss, p, ';');) refs.push_back(p);
  ASSERT_TRUE(r.Line("tiny:doc(1).refs", "KeyphraseList (" + std::to_string(refs.size()) + " phrases)"))
      << r.s().Text();
  for (std::size_t i = 0; i < refs.size(); ++i) {
    ASSERT_TRUE(r.s().WaitFor(std::to_string(i + 1) + "  [")) << r.s().Text();
    ASSERT_TRUE(r.s().WaitFor("] " + refs[i] + "\n")) << r.s().Text();
  }
  EXPECT_NE(r.s().Text().find("[P] batch jobs"), std::string::npos) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  // `corpus` is the last loaded one; a Document shows its id and both lists.
  ASSERT_TRUE(r.Line("corpus:doc(2)", "Document \"2\" (source text: yes")) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor("references:\n")) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor("predictions:\n")) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  // A Matrix: aligned columns with row and column numbers.
  r.s().Send("kp.matrix{{1, 2, 3}, {4, 5.5, 6}}\r");
  ASSERT_TRUE(r.s().WaitFor("Matrix 2x3\n")) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  const std::string text = CollapseSpaces(r.s().Text());
  EXPECT_NE(text.find(" 1 2 3\n1 1.0000 2.0000 3.0000\n2 4.0000 5.5000 6.0000\n"), std::string::npos) << text;
  // Nested tables print inline when short.
  ASSERT_TRUE(r.Line("{1, 'a', {x = true}}", "{ 1, \"a\", { x = true } }")) << r.s().Text();
}

TEST_F(ReplTest, HelpComesFromTheStubFile) {
  Repl r(home_, db_);
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  // The first description line of kp.stem in docs/lua/kp.lua.
  const auto stubs = ReadLines(std::string(KPLAB_SOURCE_DIR) + "/docs/lua/kp.lua");
  std::string first_line;
  for (std::size_t i = 0; i < stubs.size(); ++i) {
    if (stubs[i].starts_with("function kp.stem(")) {
      std::size_t j = i;
      while (j > 0 && stubs[j - 1].starts_with("---")) --j;
      first_line = stubs[j].substr(3);
      break;
    }
  }
  ASSERT_FALSE(first_line.empty());
  ASSERT_TRUE(r.Line("help(kp.stem)", "kp.stem(word, mode)\n")) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor(first_line)) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  // A userdata method, found through its metatable.
  ASSERT_TRUE(r.Line("help(kp.matrix{{1}}.assign)", "Matrix:assign()\n")) << r.s().Text();
  // A metric plugin's doc string, by name.
  ASSERT_TRUE(r.Line("help('exact')", "metric plugin exact")) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor("Exact-match precision")) << r.s().Text();
  // API 2: a parameter's declared type and doc.
  ASSERT_TRUE(r.s().WaitFor("  ks = \"5,10,M,O\"  (a cut-off list (integers from 1 to 100000, M or O, comma-separated))  "
                            "integers >= 1, M (#predictions), O (#references)"))
      << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  // A module lists its members.
  ASSERT_TRUE(r.Line("help(kp.stats)", "kp.stats.wilcoxon(x, y, opts)")) << r.s().Text();
}

TEST_F(ReplTest, MetricsAndRunsCommandsPrintAlignedTables) {
  // A stored run to list: `kplab eval` on the example, with a system name of our own.
  const Output eval = RunKplab(fs::path(home_.path()), "",
                               "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt "
                               "--system repl-sys --db " + db_);
  ASSERT_EQ(eval.code, 0) << eval.err;
  Repl r(home_, db_);
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  // Every shipped plugin with its declared version (read from the plugin file).
  ASSERT_TRUE(r.Line(":metrics", "name")) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor(kPrompt)) << r.s().Text();
  const std::string metrics = CollapseSpaces(r.s().Text());
  for (const char* plugin : {"exact", "rank", "rprec"}) {
    std::ifstream in(std::string(KPLAB_SOURCE_DIR) + "/plugins/" + plugin + ".lua");
    std::stringstream src;
    src << in.rdbuf();
    std::smatch m;
    const std::string s = src.str();
    ASSERT_TRUE(std::regex_search(s, m, std::regex("version = \"([^\"]+)\"")));
    EXPECT_NE(metrics.find(std::string("\n") + plugin + " " + m[1].str() + " plugins/" + plugin + ".lua"),
              std::string::npos)
        << metrics;
  }
  ASSERT_TRUE(r.Line(":runs", "id")) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor("repl-sys")) << r.s().Text();
  ASSERT_TRUE(r.s().WaitFor(kPrompt));
  const std::string runs = CollapseSpaces(r.s().Text());
  EXPECT_NE(runs.find("id created status dataset system profile docs\n"), std::string::npos) << runs;
  EXPECT_NE(runs.find(" ok tiny repl-sys kplab 5\n"), std::string::npos) << runs;
  // kp.runs.list() prints as the same kind of table.
  ASSERT_TRUE(r.Line("kp.runs.list()", "repl-sys")) << r.s().Text();
  ASSERT_TRUE(r.Line(":nonsense", "unknown command ':nonsense'")) << r.s().Text();
  r.s().Send(":quit\r");
  EXPECT_EQ(r.s().WaitExit(), 0);
}

TEST(ReplPipe, ReadsPlainLinesWithoutATerminal) {
  TempDir dir;
  Output o = RunKplab(fs::path(dir.path()), "HOME=" + dir.path(), "repl",
                      "1+1\nfor i = 1, 3 do\nprint(i)\nend\n:quit\n");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "2\n1\n2\n3\n");
  // Any error makes the exit status 3 (a script error), after the rest has run.
  o = RunKplab(fs::path(dir.path()), "HOME=" + dir.path(), "repl", "error('bad')\nprint('after')\n");
  EXPECT_EQ(o.code, 3);
  EXPECT_EQ(o.out, "after\n");
  EXPECT_NE(o.err.find("stdin:1: bad"), std::string::npos) << o.err;
  // No history file is written without a terminal.
  EXPECT_FALSE(fs::exists(fs::path(dir.path()) / ".local/state/kplab/history"));
}

}  // namespace
}  // namespace kplab::test
