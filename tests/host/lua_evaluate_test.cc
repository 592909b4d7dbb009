// kp.evaluate and kp.runs.table in scripts (the REPL and the Lua module install the same functions):
// the numbers equal `kplab eval`'s and `kplab runs table`'s. Hand value: examples/tiny has P@5 micro
// 12 / 25 = 0.48.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;

class LuaEvaluate : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_luaeval_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  kplab::test::Output Script(const std::string& body) {
    std::ofstream(dir_ / "s.lua") << body;
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + (dir_ / "db").string(),
                                 "run --allow-write " + dir_.string() + " " + (dir_ / "s.lua").string());
  }
  fs::path dir_;
};

// opts.verify_docs (docs/plugins.md, "What a plugin may keep"): an API 1 plugin counting documents fails
// the run (document 2: 2 in one lane, 1 alone) unless verify_docs = 0, which lets the mean count
// (1 + 2 + 3 + 4 + 5) / 5 = 3 through; a value that is not an integer in range is refused.
TEST_F(LuaEvaluate, VerifyDocsOption) {
  fs::create_directories(dir_ / "pl");
  std::ofstream(dir_ / "pl" / "counter.lua") << "-- kplab-api: 1\nlocal n = 0\nreturn kp.metric { name = \"counter\", "
                                                "version = \"1\",\n  score = function(doc, p, ctx) n = n + 1 return "
                                                "{ [\"all.x\"] = n } end }\n";
  auto o = Script(
      "local c = kp.load{dataset = 'examples/tiny', predictions = 'examples/tiny/predictions.txt'}\n"
      "local o = {plugins = {'" +
      (dir_ / "pl").string() +
      "'}, threads = 1}\n"
      "print(pcall(kp.evaluate, c, 'counter', nil, o))\n"
      "o.verify_docs = 0\n"
      "print(kp.evaluate(c, 'counter', nil, o).aggregates['all.x'])\n"
      "o.verify_docs = 2.5\n"
      "print(pcall(kp.evaluate, c, 'counter', nil, o))\n"
      "o.verify_docs, o.random_seed = 0, 'x'\n"
      "print(pcall(kp.evaluate, c, 'counter', nil, o))\n");
  ASSERT_EQ(o.code, 0) << o.err;
  // (Called straight from pcall, the messages carry no script position.)
  EXPECT_EQ(o.out, "false\tkp.evaluate: " + (dir_ / "pl").string() +
                       "/counter.lua: plugin 'counter' carried state across documents (document '2', column 'all.x': 2 "
                       "in the run, 1 alone)\n3.0\n"
                       "false\tkp.evaluate: opts.verify_docs must be an integer from 0 to 1000000 (got 2.5)\n"
                       "false\tkp.evaluate: opts.random_seed must be an integer from 0 to 9223372036854775807 (got "
                       "string)\n");
}

TEST_F(LuaEvaluate, EvaluateScoresAndStores) {
  const std::string db = (dir_ / "db").string();
  auto o = Script("local c = kp.load{dataset = 'examples/tiny', predictions = 'examples/tiny/predictions.txt'}\n"
                  "local r = kp.evaluate(c, 'exact,rprec', {exact = {ks = '5,M'}}, {system = 'mine', db = '" + db + "'})\n"
                  "print(r.aggregates['all.p@5.micro'], #r.columns['all.p@5'], r.columns['all.p@5'][1], r.doc_ids[5], r.run_id)\n"
                  "print(r.aggregates['all.p@10.micro'])\n"
                  "local ok, err = pcall(kp.evaluate, c, {'nosuchmetric'})\n"
                  "print(ok, err)\n");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.substr(0, o.out.find('\n')), "0.48\t5\t0.6\t5\t1") << o.out;
  EXPECT_NE(o.out.find("\nnil\n"), std::string::npos) << "ks = 5,M: no @10" << o.out;
  EXPECT_NE(o.out.find("false\tkp.evaluate: unknown metric 'nosuchmetric'"), std::string::npos) << o.out;
  auto show = kplab::test::RunKplab(dir_, "", "runs show 1 --db " + db + " --output csv");
  EXPECT_NE(show.out.find("all.p@5.micro,0.48\n"), std::string::npos) << show.out;
  // Storing outside the grants is refused before anything is written.
  auto out = Script("local c = kp.load{dataset = 'examples/tiny', predictions = 'examples/tiny/predictions.txt'}\n"
                    "kp.evaluate(c, 'exact', nil, {db = '/tmp/../etc/kplab_nope.db'})\n");
  EXPECT_EQ(out.code, 3);
  EXPECT_NE(out.err.find("kp.evaluate: opts.db"), std::string::npos) << out.err;
}

TEST_F(LuaEvaluate, RunsTableMatchesTheCommand) {
  const std::string db = (dir_ / "db").string();
  for (const char* sys : {"a", "b"}) {
    auto e = kplab::test::RunKplab(dir_, "", std::string("eval --dataset examples/tiny --predictions "
                                                         "examples/tiny/predictions.txt --output csv --db ") +
                                                 db + " --system " + sys);
    ASSERT_EQ(e.code, 0) << e.err;
  }
  auto o = Script("local t = kp.runs.table{metrics = {'all.p@5.macro'}, baseline = 'a', db = '" + db +
                  "', format = 'csv', resamples = 200}\n"
                  "print(#t.rows, t.rows[2].system, t.rows[2].cells[1].mean, t.rows[2].cells[1].n, t.family, "
                  "t.rows[2].cells[1].significant)\nprint(t.text)\n");
  ASSERT_EQ(o.code, 0) << o.err;
  auto cli = kplab::test::RunKplab(dir_, "", "runs table --metrics all.p@5.macro --baseline a --output csv "
                                             "--resamples 200 --db " + db);
  EXPECT_EQ(o.out, "2\tb\t0.48\t1\t1\tfalse\n" + cli.out + "\n");
}

// kp.runs.table takes `kplab runs table`'s render options (docs/tables.md) under the same names, through
// the same setters: labels, layout, fit, float and caption give the command's own text byte for byte.
// Every misuse is an error with the command's message spelled the Lua way, and an unknown key is an
// error naming the valid ones (the options table is strict).
TEST_F(LuaEvaluate, RunsTableTakesTheCommandsRenderOptions) {
  const std::string db = (dir_ / "db").string();
  for (const char* sys : {"a", "b"}) {
    auto e = kplab::test::RunKplab(dir_, "", std::string("eval --dataset examples/tiny --predictions "
                                                         "examples/tiny/predictions.txt --output csv --db ") +
                                                 db + " --system " + sys);
    ASSERT_EQ(e.code, 0) << e.err;
  }
  const std::string base = "metrics = 'all.p@5.macro,present.f1@M.macro_hm', db = '" + db + "', ";
  auto o = Script("print(kp.runs.table{" + base +
                  "format = 'latex', labels = {['all.p@5.macro'] = 'P@5', tiny = 'Tiny'}, layout = 'metrics', "
                  "fit = true, float = 'table*', caption = 'Tiny results', baseline = 'a', resamples = 200}.text)\n"
                  "print(kp.runs.table{" + base + "format = 'markdown', labels = {present = 'Pres.'}}.text)\n");
  ASSERT_EQ(o.code, 0) << o.err;
  auto latex = kplab::test::RunKplab(dir_, "", "runs table --metrics all.p@5.macro,present.f1@M.macro_hm --output "
                                               "latex --label all.p@5.macro=P@5 --label tiny=Tiny --layout metrics "
                                               "--fit --float 'table*' --caption 'Tiny results' --baseline a "
                                               "--resamples 200 --db " + db);
  auto md = kplab::test::RunKplab(dir_, "", "runs table --metrics all.p@5.macro,present.f1@M.macro_hm --output "
                                            "markdown --label present=Pres. --db " + db);
  ASSERT_EQ(latex.code, 0) << latex.err;
  EXPECT_NE(latex.out.find("\\begin{table*}[t]"), std::string::npos) << latex.out;
  EXPECT_NE(latex.out.find("Tiny"), std::string::npos) << latex.out;
  EXPECT_EQ(o.out, latex.out + "\n" + md.out + "\n");

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"format = 'latex', lables = {}", "kp.runs.table: unknown field 'lables' (did you mean 'labels'? expected one "
                                        "of: metrics, runs, baseline, system, dataset, profile, resamples, seed, db, "
                                        "format, decimals, fraction, labels, layout, fit, float, caption)"},
      {"format = 'latex', layout = 'rows'", "kp.runs.table: layout must be datasets (datasets over metrics) or "
                                            "metrics (metrics over datasets) (got 'rows')"},
      {"format = 'latex', float = 'figure'", "kp.runs.table: float must be table, table* or none (got 'figure')"},
      {"format = 'latex', float = 'none', caption = 'x'",
       "kp.runs.table: caption needs a float (LaTeX allows \\caption only in one): drop float none"},
      {"format = 'markdown', fit = true", "kp.runs.table: fit, float and caption shape LaTeX only (add format latex)"},
      {"fit = true", "kp.runs.table: fit, float and caption shape LaTeX only (add format latex)"},
      {"fit = 1, format = 'latex'", "kp.runs.table: fit must be a boolean (got number)"},
      {"labels = {tiny = 'T'}", "kp.runs.table: labels shapes the text: add format"},
      {"format = 'csv', labels = {tiny = ''}", "kp.runs.table: label 'tiny=': expected NAME=TEXT (a metric, dataset "
                                               "or subset, and its printed name, e.g. all.f1@5.macro_hm=F1@5)"},
      {"format = 'csv', labels = {'x'}", "kp.runs.table: labels must map names to texts (got a number key with a "
                                         "string value)"},
      {"format = 'csv', labels = {nope = 'x'}",
       "kp.runs.table: label nope=...: 'nope' is no metric, dataset or subset of the table (expected one of: "
       "all, all.p@5.macro, present, present.f1@M.macro_hm, tiny)"},
  };
  std::string script;
  for (const auto& [opts, msg] : bad) script += "print(select(2, pcall(kp.runs.table, {" + base + opts + "})))\n";
  auto e = Script(script);
  ASSERT_EQ(e.code, 0) << e.err;
  std::istringstream lines(e.out);
  for (const auto& [opts, msg] : bad) {
    std::string line;
    std::getline(lines, line);
    EXPECT_NE(line.find(msg), std::string::npos) << opts << "\n got: " << line;
  }
}

// kp.write replaces its target by a rename: a symbolic link (or any non-regular file) is refused and
// left as it was, instead of being destroyed.
TEST_F(LuaEvaluate, WriteRefusesToReplaceANonRegularFile) {
  fs::create_symlink(dir_ / "elsewhere.txt", dir_ / "link.txt");
  auto o = Script("kp.write('" + (dir_ / "link.txt").string() + "', 'x')\n");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("link.txt: not a regular file"), std::string::npos) << o.err;
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.txt"));
  EXPECT_FALSE(fs::exists(dir_ / "elsewhere.txt"));
}

// Plugin directories given to kp.evaluate are code the run executes: under the read grants like any path.
TEST_F(LuaEvaluate, PluginDirectoriesAreUnderTheGrants) {
  auto o = Script("local c = kp.load{dataset = 'examples/tiny', predictions = 'examples/tiny/predictions.txt'}\n"
                  "kp.evaluate(c, {'exact'}, nil, {plugins = {'/etc'}})\n");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("kp.evaluate: opts.plugins: /etc: outside"), std::string::npos) << o.err;
}

}  // namespace
