// Names are valid UTF-8 without control characters where they are made, and every text from data, a
// store or a plugin reaches the terminal escaped (kplab/safe_text.h). Checked as a property: hostile
// texts (invalid UTF-8, ESC sequences, newlines, tabs, C1 controls, U+2028, bidi overrides) in document
// ids, keyphrases, plugin messages and -- written into the store behind kplab's back -- system,
// dataset, metric and profile names, through every output of every read command in every format: no
// stream carries a raw control byte other than the format's own line breaks (and a TSV's or table's
// tabs), all of it is UTF-8, and every JSON output parses.
#include <gtest/gtest.h>
#include <unistd.h>

#include <simdjson.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using kplab::test::Output;

// The code points that must not reach a terminal raw, as the test's own list (independent of
// kplab::IsUnsafeCodePoint): C0 but what the format writes itself (line breaks; tabs in a TSV, an aligned
// table and a Lua traceback), DEL, C1, line/paragraph separators, bidirectional controls.
bool Unsafe(char32_t cp, bool tabs) {
  if (cp == '\n' || (tabs && cp == '\t')) return false;
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0x061C || cp == 0x200E ||
         cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

// "" when s is UTF-8 with no unsafe code point; else what and where. A decoder of its own (RFC 3629).
std::string RawProblem(const std::string& s, bool tabs) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return "invalid UTF-8 at byte " + std::to_string(i);
    char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (std::size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return "invalid UTF-8 at byte " + std::to_string(i);
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return "invalid UTF-8 at byte " + std::to_string(i);
    }
    if (Unsafe(cp, tabs)) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
      return std::string("raw ") + buf + " at byte " + std::to_string(i) + " in: " + s.substr(i > 40 ? i - 40 : 0, 80);
    }
    i += n;
  }
  return "";
}

std::string JsonProblem(const std::string& text, bool lines) {
  simdjson::dom::parser parser;
  std::vector<std::string> docs;
  if (lines) {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) docs.push_back(l);
  } else {
    docs.push_back(text);
  }
  for (const auto& d : docs) {
    simdjson::dom::element e;
    if (auto err = parser.parse(d).get(e); err) return std::string("invalid JSON: ") + simdjson::error_message(err);
  }
  return "";
}

void WriteNamed(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

class HostileNames : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_hostile_names_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "r.db").string();
    // Three documents whose ids and keyphrases carry an ESC sequence, U+2028, U+202E (RLO), a newline,
    // a C1 CSI and a tab (JSON escapes, so the files themselves are valid UTF-8).
    const char* ids[] = {"d\\u001b[2J1", "d\\u20282", "d\\u202e3"};
    std::string ds, preds;
    for (const char* id : ids) {
      ds += std::string("{\"id\": \"") + id +
            "\", \"source\": \"a title [sep] text about kp red and line break\", \"target\": \"kp red;bidi "
            "text;line\\nbreak\"}\n";
      preds += std::string("{\"id\": \"") + id +
               "\", \"predictions\": [\"kp\\u001b[31m red\", \"line\\nbreak\", \"bidi\\u202etext\", \"c1\\u009bx\", "
               "\"tab\\there\"]}\n";
    }
    WriteNamed(dir_ / "ds.jsonl", ds);
    WriteNamed(dir_ / "preds.jsonl", preds);
  }
  void TearDown() override { fs::remove_all(dir_); }
  Output Run(const std::string& args, const std::string& input = "") {
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + db_, args, input);
  }
  std::string Eval(const std::string& extra) {
    return "eval --dataset " + (dir_ / "ds.jsonl").string() + " --predictions " + (dir_ / "preds.jsonl").string() +
           " " + extra;
  }
  // Both streams are safe; stdout parses when the format is JSON and the command succeeded.
  void ExpectSafe(const Output& o, const std::string& what, const std::string& format = "text") {
    const bool tabs = format == "tsv" || format == "table";
    EXPECT_EQ(RawProblem(o.out, tabs), "") << what << " (stdout)";
    EXPECT_EQ(RawProblem(o.err, true), "") << what << " (stderr)";  // a traceback's lines start with a tab
    if (o.code == 0 && (format == "json" || format == "jsonl") && !o.out.empty()) {
      EXPECT_EQ(JsonProblem(o.out, format == "jsonl"), "") << what << ": " << o.out;
    }
  }
  fs::path dir_;
  std::string db_;
};

const std::string kExpectedName = " (expected UTF-8 text without control characters)\n";

// Where a name is made, a hostile one is refused, naming the field and the byte.
TEST_F(HostileNames, NamesAreRefusedWhereTheyAreMade) {
  struct Case {
    std::string arg, shown, problem;
  };
  const std::vector<Case> cases = {
      {"'a\\033[2Jb'", "a\\x1b[2Jb", "control character U+001B at byte 2"},
      {"'bad\\377'", "bad\\xff", "invalid UTF-8 at byte 4 (0xFF)"},
      {"'rlo\\342\\200\\256X'", "rlo\\u202eX", "formatting character U+202E at byte 4"},
      {"'two\\nlines'", "two\\nlines", "control character U+000A at byte 4"},
      {"'ls\\342\\200\\250x'", "ls\\u2028x", "formatting character U+2028 at byte 3"},
      {"'c1\\302\\233x'", "c1\\u009bx", "control character U+009B at byte 3"},
      {"'del\\177'", "del\\x7f", "control character U+007F at byte 4"},
  };
  for (const Case& c : cases) {
    const Output o = Run(Eval("--metrics exact --system \"$(printf " + c.arg + ")\""));
    EXPECT_EQ(o.code, 1) << c.arg;
    EXPECT_EQ(o.err, "kplab: system name '" + c.shown + "': " + c.problem + kExpectedName) << c.arg;
    ExpectSafe(o, c.arg);
  }
  // A system name taken from a predictions file's name, and a dataset name from its directory's.
  fs::copy_file(dir_ / "preds.jsonl", dir_ / "sys\xe2\x80\xae.jsonl");
  Output o = Run("eval --dataset " + (dir_ / "ds.jsonl").string() + " --predictions \"$(printf '" +
                 (dir_ / "sys\\342\\200\\256.jsonl").string() + "')\" --metrics exact");
  EXPECT_EQ(o.err, "kplab: system name 'sys\\u202e': formatting character U+202E at byte 4" + kExpectedName);
  fs::create_directories(dir_ / "ds\x1b[2J");
  fs::copy_file(dir_ / "ds.jsonl", dir_ / "ds\x1b[2J/ds.jsonl");
  o = Run("eval --dataset \"$(printf '" + (dir_ / "ds\\033[2J").string() + "')\" --predictions " +
          (dir_ / "preds.jsonl").string() + " --metrics exact --system s");
  EXPECT_EQ(o.err, "kplab: dataset name 'ds\\x1b[2J': control character U+001B at byte 3" + kExpectedName) << o.err;
  ExpectSafe(o, "dataset directory");
  EXPECT_FALSE(fs::exists(db_)) << "nothing stored";
}

// Plugins make metric, column and parameter names: the same rule, with the plugin's file in the message.
TEST_F(HostileNames, PluginNamesAreRefusedAndPluginTextIsEscaped) {
  WriteNamed(dir_ / "plugins/hcol.lua",
             "-- kplab-api: 2\nreturn kp.metric{ name = 'hcol', version = '1',\n"
             "  columns = function(c, p) return { x = c:column('x\\27[2J\\n') } end,\n"
             "  score = function(doc, p, ctx, out) out[ctx.slots.x] = 1 end }\n");
  WriteNamed(dir_ / "plugins/hparam.lua",
             "-- kplab-api: 2\nreturn kp.metric{ name = 'hparam', version = '1',\n"
             "  params = { ['k\\226\\128\\174'] = kp.int{ default = 1 } },\n"
             "  columns = function(c, p) return { x = c:column('x') } end,\n"
             "  score = function(doc, p, ctx, out) out[ctx.slots.x] = 1 end }\n");
  WriteNamed(dir_ / "plugins/hapi1.lua",
             "-- kplab-api: 1\nreturn kp.metric{ name = 'hapi1', version = '1',\n"
             "  score = function(doc, p, ctx) return { ['m\\27[2J'] = 1 } end }\n");
  WriteNamed(dir_ / "plugins/hlog.lua",
             "-- kplab-api: 2\nreturn kp.metric{ name = 'hlog', version = '1',\n"
             "  columns = function(c, p) kp.log('log\\27[2J\\nfake line \\226\\128\\174 \\255')\n"
             "    return { x = c:column('x') } end,\n"
             "  score = function(doc, p, ctx, out) error('boom\\27[2J\\226\\128\\168\\255 ' .. doc.id) end }\n");
  const std::string plugins = " --no-store --plugins " + (dir_ / "plugins").string();
  Output o = Run(Eval("--metrics hcol" + plugins));
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("hcol.lua:3: column name 'x\\x1b[2J\\n': control character U+001B at byte 2 (expected UTF-8 "
                       "text without control characters)"),
            std::string::npos)
      << o.err;
  ExpectSafe(o, "column name");
  o = Run(Eval("--metrics hparam" + plugins));
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("hparam.lua: field 'params' has a parameter name 'k\\u202e': formatting character U+202E at "
                       "byte 2"),
            std::string::npos)
      << o.err;
  o = Run(Eval("--metrics hapi1" + plugins));
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("metric name 'm\\x1b[2J': control character U+001B at byte 2"), std::string::npos) << o.err;
  ExpectSafe(o, "API 1 metric name");
  o = Run(Eval("--metrics hlog" + plugins));
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("[hlog] log\\x1b[2J\\nfake line \\u202e \\xff\n"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("boom\\x1b[2J\\u2028\\xff d\\x1b[2J1"), std::string::npos) << o.err;
  ExpectSafe(o, "kp.log and a plugin error");
  // Names the user types that match nothing are quoted escaped.
  o = Run(Eval("--no-store --metrics \"$(printf 'x\\033[2J')\""));
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err.rfind("kplab: unknown metric 'x\\x1b[2J' (expected one of: ", 0), 0u) << o.err;
  ExpectSafe(o, "unknown metric");
}

// Every read command in every format, over runs whose data is hostile and whose store was edited to
// hold hostile names (as an older kplab or another program could have written them).
TEST_F(HostileNames, EveryOutputOfEveryCommandIsSafe) {
  ASSERT_EQ(Run(Eval("--metrics exact,rprec --system good")).code, 0);
  ASSERT_EQ(Run(Eval("--metrics exact,rprec --system good2")).code, 0);
  for (const std::string format : {"table", "json", "csv", "tsv"}) {
    ExpectSafe(Run(Eval("--metrics exact --no-store --output " + format)), "eval " + format, format);
  }
  const std::string tamper =
      "import sqlite3, sys\n"
      "c = sqlite3.connect(sys.argv[1])\n"
      "c.execute(\"UPDATE systems SET name = CAST(X'73797302ff1b5b324a0a78e280ae' AS TEXT) WHERE name = 'good2'\")\n"
      "c.execute(\"UPDATE datasets SET name = CAST(X'64731b5d303b7469746c6507c29b' AS TEXT)\")\n"
      "c.execute(\"UPDATE aggregates SET metric = CAST(X'616c6c2e7040351b5b324a' AS TEXT) WHERE idx = 0\")\n"
      "c.execute(\"UPDATE runs SET profile = CAST(X'6b706c61620a66616b65' AS TEXT), error = CAST(X'651b5d30' AS TEXT) "
      "WHERE id = 2\")\n"
      "c.commit()\n";
  WriteNamed(dir_ / "tamper.py", tamper);
  ASSERT_EQ(std::system(("/usr/bin/python3 " + (dir_ / "tamper.py").string() + " " + db_).c_str()), 0);
  struct Cmd {
    std::string args;
    std::vector<std::string> formats;
  };
  const std::vector<Cmd> cmds = {
      {"runs list", {"table", "json", "csv", "tsv"}},
      {"runs show 2", {"table", "json", "csv", "tsv"}},
      {"runs compare 1 2 --resamples 100", {"table", "json", "csv", "tsv"}},
      {"runs table --resamples 100 --metrics 'all.p@5*'", {"table", "markdown", "latex", "csv", "json"}},
      {"runs docs 1 --sort all.p@5", {"table", "json", "csv", "tsv"}},
      {"runs doc 1 \"$(printf 'd\\033[2J1')\"", {"table", "json"}},
      {"runs export 2", {"csv", "tsv", "json", "jsonl"}},
  };
  int outputs = 0;
  for (const Cmd& c : cmds) {
    for (const std::string& f : c.formats) {
      const Output o = Run(c.args + " --output " + f);
      ExpectSafe(o, c.args + " --output " + f, f);
      ++outputs;
    }
  }
  EXPECT_EQ(outputs, 27);
  // The HTML report holds them escaped too; its stderr line names the file.
  const Output o = Run("report 1 2 -o " + (dir_ / "report.html").string() + " --doc-metric all.p@5");
  ExpectSafe(o, "report");
  if (o.code == 0) {
    EXPECT_EQ(RawProblem(kplab::test::Slurp(dir_ / "report.html"), true), "");
  }
  // Reading back what the store says: the names are shown escaped, not refused.
  const Output list = Run("runs list --output json");
  EXPECT_NE(list.out.find("\"sys\\u0002\\\\xff\\u001b[2J\\nx\\u202e\""), std::string::npos) << list.out;
}

// A name that got past every front end -- here shards whose store another program edited -- is refused
// by the store when the merged run is saved (RunStore::SaveRun), not stored.
TEST_F(HostileNames, TheStoreRefusesANameThatGotPastTheFrontEnds) {
  for (const char* shard : {"0/2", "1/2"}) {
    ASSERT_EQ(Run(Eval("--metrics exact --system good --shard " + std::string(shard))).code, 0) << shard;
  }
  WriteNamed(dir_ / "tamper.py",
             "import sqlite3, sys\n"
             "c = sqlite3.connect(sys.argv[1])\n"
             "c.execute(\"UPDATE systems SET name = CAST(X'731b5b324a' AS TEXT)\")\n"
             "c.commit()\n");
  ASSERT_EQ(std::system(("/usr/bin/python3 " + (dir_ / "tamper.py").string() + " " + db_).c_str()), 0);
  const std::string out = (dir_ / "merged.db").string();
  const Output o = Run("runs merge --from " + db_ + " --db " + out);
  EXPECT_NE(o.code, 0);
  EXPECT_NE(o.err.find("cannot save run: system name 's\\x1b[2J': control character U+001B at byte 2"),
            std::string::npos)
      << o.err;
  ExpectSafe(o, "merge");
  EXPECT_EQ(Run("runs list --db " + out + " --output json").out.find("\"id\""), std::string::npos) << "nothing stored";
}

// A script's and the REPL's error messages and values: escaped, line breaks of the traceback kept.
TEST_F(HostileNames, ScriptAndReplOutputIsEscaped) {
  WriteNamed(dir_ / "s.lua",
             "kp.log('script log \\27[2J\\n\\255')\n"
             "local c = kp.load{dataset = '" +
                 (dir_ / "ds.jsonl").string() + "', predictions = '" + (dir_ / "preds.jsonl").string() +
                 "'}\n"
                 "print(c:doc(1).id, c:doc(3).id .. '\\155x\\n')\n"
                 "error('script error ' .. c:doc(1).id)\n");
  Output o = kplab::test::RunKplab(dir_, "", "run --allow-read " + dir_.string() + " " + (dir_ / "s.lua").string());
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("script error d\\x1b[2J1\nstack traceback:\n\t"), std::string::npos) << o.err;
  // print: the values escaped, its tab and line breaks kept.
  EXPECT_EQ(o.out, "d\\x1b[2J1\td\\u202e3\\x9bx\n\n") << o.out;
  ExpectSafe(o, "script", "table");  // print's own tab
  o = kplab::test::RunKplab(dir_, "", "repl --allow-read " + dir_.string(),
                            "c = kp.load{dataset = '" + (dir_ / "ds.jsonl").string() + "', predictions = '" +
                                (dir_ / "preds.jsonl").string() +
                                "'}\nc:doc(1).id\nprint(c:doc(2).id)\nc:doc(1)\n"
                                "error(c:doc(3).id)\n");
  EXPECT_NE(o.out.find("d\\x1b[2J1\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("d\\u20282\n"), std::string::npos) << o.out;
  EXPECT_NE(o.err.find("d\\u202e3"), std::string::npos) << o.err;
  ExpectSafe(o, "repl", "table");
}

// The outputs at the command line's edges: what `kplab stem` reads from stdin, an environment variable
// main() checks before any command runs, a store path that does not exist, a transformer's warning that
// quotes the text it cut, a child program's output. Each reaches the terminal escaped (before this test,
// all five were written raw).
TEST_F(HostileNames, TheCommandLinesEdgesAreEscaped) {
  Output o = Run("stem", "walking\x1b]0;pwned\x07 dogs\xe2\x80\xae\n");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "walking\\x1b]0;pwned\\x07 dogs\\u202e\n");  // "dogs\u202e" ends in no letter: kept
  ExpectSafe(o, "stem");

  o = kplab::test::RunKplab(dir_, "KPLAB_BLAS_THREADS=\"$(printf '2\\033[2J')\"", "version");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: KPLAB_BLAS_THREADS='2\\x1b[2J': expected a whole number of threads from 1 to 1024\n");
  ExpectSafe(o, "KPLAB_BLAS_THREADS");

  o = Run("runs list --db \"$(printf '" + dir_.string() + "/no\\033]0;x\\007.db')\"");
  EXPECT_EQ(o.code, 4);
  EXPECT_NE(o.err.find("/no\\x1b]0;x\\x07.db: no such run store"), std::string::npos) << o.err;
  ExpectSafe(o, "--db");

  // The tiny transformer cuts texts to 16 tokens and says so once, quoting the first it cut.
  const std::string env = "KPLAB_MODELS=" + (dir_ / "models").string();
  ASSERT_EQ(kplab::test::RunKplab(dir_, env,
                                  "model import mpnet " + std::string(KPLAB_TEST_DATA) +
                                      "/transformer/hub/models--kplab-test--mpnet-tiny --backend transformer")
                .code,
            0);
  WriteNamed(dir_ / "long.txt", "neural \x1b[2J networks " + std::string(40, 'n') + std::string(" n", 40) + "\n");
  o = kplab::test::RunKplab(
      dir_, env, "model embed mpnet " + (dir_ / "long.txt").string() + " --output " + (dir_ / "v.npy").string());
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.err.find("(the first: \"neural \\x1b[2J networks nnn"), std::string::npos) << o.err;
  ExpectSafe(o, "transformer warning");

  // A child program's output (npm's, which may quote what a registry sent back) is read through a pipe
  // and written escaped: here an npm on PATH that answers with an ESC sequence and a bare CR.
  WriteNamed(dir_ / "bin" / "npm", "#!/bin/sh\nprintf 'npm ERR! 404 \\033[2J\\033]0;pwned\\007 \\r\\n'\nexit 1\n");
  fs::permissions(dir_ / "bin" / "npm", fs::perms::owner_all);
  o = kplab::test::RunKplab(dir_, env + " PATH=" + (dir_ / "bin").string() + ":$PATH", "model install glove-6b-100d");
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("npm ERR! 404 \\x1b[2J\\x1b]0;pwned\\x07 \\r\n"), std::string::npos) << o.err;
  ExpectSafe(o, "npm's output");
}

// The escaping layer between kplab and its standard output sees a line in as many pieces as its writer
// makes: a JSON export of a run with 9,000 columns writes each document's line in some 30,000 pieces.
// Looking for the line's end only in what each piece adds keeps that linear; looking again through all
// that the line held so far made 21 documents' JSON export take 22-23 s (7 s for 5). Every read command that
// prints per-document or per-column lines finishes within 10 s, and its numbers are the plugin's.
TEST_F(HostileNames, WideLinesAreWrittenInLinearTime) {
  fs::create_directories(dir_ / "plugins");
  WriteNamed(dir_ / "plugins" / "wide.lua",
             "-- kplab-api: 2\n"
             "local cols = {}\n"
             "for i = 1, 9000 do cols[i] = 'x' .. i end\n"
             "return kp.metric { name = 'wide', version = '1', subsets = {'all'}, columns = cols,\n"
             "  score = function(preds, refs, doc, p, ctx, out) for i = 1, 9000 do out[cols[i]] = i / 8 end end }\n");
  Output o =
      Run("eval --dataset tests/data/edge --predictions tests/data/edge/edge_predictions.txt --metrics wide "
          "--plugins " +
          (dir_ / "plugins").string() + " --system wide");
  ASSERT_EQ(o.code, 0) << o.err;
  for (const std::string args : {"runs export 1 --output json", "runs export 1 --output jsonl",
                                 "runs export 1 --output csv", "runs show 1 --output json"}) {
    const auto t0 = std::chrono::steady_clock::now();
    o = Run(args);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(o.code, 0) << args << ": " << o.err;
    EXPECT_LT(seconds, 10.0) << args;
    // The last column's value on every line that has one: 9000 / 8 = 1125.
    EXPECT_NE(o.out.find("1125"), std::string::npos) << args;
    ExpectSafe(o, args, args.substr(args.rfind(' ') + 1));
  }
}

}  // namespace
