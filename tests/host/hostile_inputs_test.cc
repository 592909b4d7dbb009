// Hostile inputs through the kplab executable: files that are not what they claim, scripts reaching
// outside the directories they were granted, a store that is read-only, crowded or fed oversized values.
// Each case states its exact message and exit code, and checks that nothing was stored where it must not
// be. Time bounds are generous (10 s): they catch hangs, not slowness; every command also runs under
// timeout(1) so that a hang fails instead of blocking.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_harness.h"
#include "kplab/store.h"
#include "slow_build.h"

namespace {

namespace fs = std::filesystem;
using kplab::test::Output;
using kplab::test::Slurp;

constexpr double kBoundSeconds = 10 * kplab::test::kSlowBuild;  // slow_build.h
const std::string kInputsSrc = KPLAB_SOURCE_DIR;
const std::string kTinyEval = "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt";

class Hostile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_hostile_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "io");
    db_ = (dir_ / "runs.db").string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }

  // kplab ARGS from the source tree, KPLAB_DB in the test directory, under timeout(1); the wall time
  // must stay within the bound.
  Output Run(const std::string& args, const std::string& input = "") {
    const auto start = std::chrono::steady_clock::now();
    Output o = kplab::test::RunKplab(dir_ / "io", "KPLAB_DB=" + db_ + " timeout 60", args, input);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(s, kBoundSeconds) << args;
    return o;
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return Path(name);
  }
  std::string Fifo(const std::string& name) const {
    EXPECT_EQ(::mkfifo(Path(name).c_str(), 0644), 0);
    return Path(name);
  }
  std::string Loop(const std::string& name) const {
    fs::create_symlink(name, dir_ / name);  // a link to itself
    return Path(name);
  }
  // Runs stored in the test's database (0 when there is none).
  std::size_t StoredRuns() const {
    if (!fs::exists(db_)) return 0;
    auto store = kplab::RunStore::Open(db_, kplab::RunStore::Mode::kReadOnly);
    EXPECT_TRUE(store.ok()) << store.error().message;
    if (!store) return 0;
    auto runs = store->ListRuns();
    return runs ? runs->size() : 0;
  }
  // An eval that must fail with exactly `message` (stderr) and `code`, storing nothing.
  void ExpectEvalRefused(const std::string& args, const std::string& message, int code = 2) {
    Output o = Run(args);
    EXPECT_EQ(o.code, code) << args << "\n" << o.err;
    EXPECT_EQ(o.err, message) << args;
    EXPECT_EQ(StoredRuns(), 0u) << args;
  }

  fs::path dir_;
  std::string db_;
};

// ---- input that is not what it claims ----------------------------------------------------------------

TEST_F(Hostile, SourceThatIsNotARegularFileIsRefused) {
  fs::create_directories(dir_ / "srcdir");
  const std::string fifo = Fifo("src.fifo"), loop = Loop("src.loop");
  const std::string expected = " (expected a source file, one document a line)\n";
  ExpectEvalRefused(kTinyEval + " --source " + Path("srcdir"),
                    "kplab: " + Path("srcdir") + ": a directory, not a regular file" + expected);
  ExpectEvalRefused(kTinyEval + " --source " + fifo, "kplab: " + fifo + ": a FIFO, not a regular file" + expected);
  ExpectEvalRefused(kTinyEval + " --source /dev/zero",
                    "kplab: /dev/zero: a character device, not a regular file" + expected);
  ExpectEvalRefused(kTinyEval + " --source " + loop, "kplab: " + loop + ": symbolic link loop" + expected);
  ExpectEvalRefused(kTinyEval + " --source " + Write("empty_src.txt", ""),
                    "kplab: " + Path("empty_src.txt") + ": no source lines" + expected);
}

TEST_F(Hostile, PredictionsThatAreNotARegularFileAreRefused) {
  const std::string fifo = Fifo("p.fifo"), loop = Loop("p.loop");
  const std::string base = "eval --dataset examples/tiny --predictions ";
  const std::string expected = " (expected a UTF-8 text file)\n";
  ExpectEvalRefused(base + fifo, "kplab: " + fifo + ": a FIFO, not a regular file" + expected);
  ExpectEvalRefused(base + "/dev/zero", "kplab: /dev/zero: a character device, not a regular file" + expected);
  ExpectEvalRefused(base + loop, "kplab: " + loop + ": symbolic link loop" + expected);
  ExpectEvalRefused(base + Path("."), "kplab: " + Path(".") + ": a directory, not a regular file" + expected);
}

TEST_F(Hostile, DatasetsThatAreNotWhatTheyClaimAreRefused) {
  const std::string fifo = Fifo("d.fifo"), loop = Loop("d.loop");
  const std::string preds = " --predictions examples/tiny/predictions.txt";
  const std::string expected = " (expected a dataset file or directory)\n";
  ExpectEvalRefused("eval --dataset " + fifo + preds,
                    "kplab: " + fifo + ": a FIFO, not a regular file or directory" + expected);
  ExpectEvalRefused("eval --dataset " + fifo + " --dataset-format meng" + preds,
                    "kplab: " + fifo + ": a FIFO, not a regular file or directory" + expected);
  ExpectEvalRefused("eval --dataset /dev/zero --dataset-format meng" + preds,
                    "kplab: /dev/zero: a character device, not a regular file or directory" + expected);
  ExpectEvalRefused("eval --dataset " + loop + preds, "kplab: " + loop + ": symbolic link loop" + expected);
  ExpectEvalRefused("eval --dataset " + loop + " --dataset-format hulth" + preds,
                    "kplab: " + loop + ": symbolic link loop" + expected);
  // A FIFO under a document's name in a Hulth directory used to drop that document silently.
  fs::create_directories(dir_ / "hulth");
  Write("hulth/1.abstr", "Title one\nBody one.\n");
  Write("hulth/1.uncontr", "body\n");
  Write("hulth/2.uncontr", "x\n");
  Fifo("hulth/2.abstr");
  ExpectEvalRefused("eval --dataset " + Path("hulth") + " --predictions " + Write("two.txt", "body\nx\n"),
                    "kplab: " + Path("hulth") + "/2.abstr: a FIFO, not a regular file (expected a UTF-8 text file)\n");
  // --semeval-answers FILE that is a FIFO or a link loop.
  const std::string answers = Fifo("answers.fifo"), answers_loop = Loop("answers.loop");
  const std::string semeval = "eval --dataset " + std::string(KPLAB_SHARED_DATA) + "/semeval2010/test" + preds;
  ExpectEvalRefused(semeval + " --semeval-answers " + answers,
                    "kplab: " + answers + ": a FIFO, not a regular file (expected a UTF-8 text file)\n");
  ExpectEvalRefused(semeval + " --semeval-answers " + answers_loop,
                    "kplab: " + answers_loop + ": symbolic link loop (expected a UTF-8 text file)\n");
  // A link loop named like a dataset file in a Meng directory is named, not a filesystem exception.
  fs::create_directories(dir_ / "meng");
  fs::copy_file(kInputsSrc + "/examples/tiny/tiny_allkeywords.txt", dir_ / "meng/tiny_allkeywords.txt");
  fs::create_symlink("tiny_context.txt", dir_ / "meng/tiny_context.txt");
  ExpectEvalRefused("eval --dataset " + Path("meng") + preds,
                    "kplab: " + Path("meng") + "/tiny_context.txt: symbolic link loop (expected a UTF-8 text file)\n");
}

TEST_F(Hostile, EmptyDatasetsAndPredictionsAreRefused) {
  Write("e_allkeywords.txt", "");
  ExpectEvalRefused("eval --dataset " + Path("e_allkeywords.txt") + " --predictions " + Write("e.txt", ""),
                    "kplab: " + Path("e_allkeywords.txt") +
                        ": no documents (expected a dataset with at least one document)\n");
  ExpectEvalRefused("eval --dataset examples/tiny --predictions " + Path("e.txt"),
                    "kplab: " + Path("e.txt") + ": no prediction lines (expected one line per document)\n");
  ExpectEvalRefused("eval --dataset examples/tiny --predictions " + Write("blank.jsonl", "\n \n"),
                    "kplab: " + Path("blank.jsonl") + ": no prediction lines (expected one line per document)\n");
}

TEST_F(Hostile, MixedIdAndNoIdJsonlPredictionsAreRefused) {
  // examples/tiny has ids 1..5 (line order); line 3 lacks "id": aligning by line order would pair it.
  const std::string some = Write("some.jsonl",
                                 "{\"id\": \"1\", \"predictions\": [\"a\"]}\n{\"id\": \"2\", \"predictions\": [\"b\"]}\n"
                                 "{\"predictions\": [\"c\"]}\n{\"id\": \"4\", \"predictions\": []}\n"
                                 "{\"id\": \"5\", \"predictions\": []}\n");
  ExpectEvalRefused("eval --dataset examples/tiny --predictions " + some,
                    "kplab: " + some + ":3: no \"id\" field, but line 1 has one (expected \"id\" on every line or on none)\n");
  const std::string late = Write("late.jsonl",
                                 "\n{\"predictions\": [\"a\"]}\n{\"predictions\": [\"b\"]}\n{\"id\": \"3\", "
                                 "\"predictions\": [\"c\"]}\n{\"predictions\": []}\n{\"predictions\": []}\n");
  ExpectEvalRefused("eval --dataset examples/tiny --predictions " + late,
                    "kplab: " + late + ":4: an \"id\" field, but line 2 has none (expected \"id\" on every line or on none)\n");
}

TEST_F(Hostile, CrOnlyLineEndsAreRefusedCrlfAccepted) {
  std::string preds = Slurp(kInputsSrc + "/examples/tiny/predictions.txt");
  std::string cr = preds, crlf;
  for (char& c : cr) c = c == '\n' ? '\r' : c;
  for (char c : preds) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  const std::string expected =
      ": carriage return (CR) without a line feed after it (expected LF or CRLF line ends; convert CR-only files "
      "with `tr '\\r' '\\n'`)\n";
  ExpectEvalRefused("eval --dataset examples/tiny --predictions " + Write("cr.txt", cr),
                    "kplab: " + Path("cr.txt") + ":1" + expected);
  // The CR on the third line of an LF file is named on its line.
  std::string third = preds;
  third.insert(third.find('\n', third.find('\n', third.find('\n') + 1) + 1) - 3, "\r");
  ExpectEvalRefused("eval --dataset examples/tiny --predictions " + Write("cr3.txt", third),
                    "kplab: " + Path("cr3.txt") + ":3" + expected);
  ExpectEvalRefused(kTinyEval + " --source " + Write("cr_src.txt", "a <eos> b\rc <eos> d\r"),
                    "kplab: " + Path("cr_src.txt") + ":1" + expected);
  const Output a = Run(kTinyEval + " --no-store --output json --system s");
  const Output b = Run("eval --dataset examples/tiny --no-store --output json --system s --predictions " +
                       Write("predictions.txt", crlf));
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
}

// A UTF-8 byte order mark is stripped at the start of a file (docs/formats.md): a dataset and
// predictions with one give the numbers of the same files without (it used to glue itself to the first
// reference and change p@5).
TEST_F(Hostile, ByteOrderMarkIsStripped) {
  fs::create_directories(dir_ / "bom");
  const std::string bom = "\xEF\xBB\xBF";
  Write("bom/tiny_allkeywords.txt", bom + Slurp(kInputsSrc + "/examples/tiny/tiny_allkeywords.txt"));
  Write("bom/tiny_context.txt", bom + Slurp(kInputsSrc + "/examples/tiny/tiny_context.txt"));
  const std::string preds = Write("bom/predictions.txt", bom + Slurp(kInputsSrc + "/examples/tiny/predictions.txt"));
  const Output plain = Run(kTinyEval + " --no-store --output json --system s --metrics exact");
  const Output marked = Run("eval --dataset " + Path("bom") + " --predictions " + preds +
                            " --no-store --output json --system s --metrics exact");
  ASSERT_EQ(plain.code, 0) << plain.err;
  ASSERT_EQ(marked.code, 0) << marked.err;
  EXPECT_EQ(marked.out.substr(marked.out.find("\"system\"")), plain.out.substr(plain.out.find("\"system\"")));
  EXPECT_NE(plain.out.find("\"all.p@5.micro\": 0.48"), std::string::npos) << plain.out;
}

// A plugin directory is listed, and only the selected plugins are read: an unselected FIFO, a link to
// /dev/zero or a link loop named *.lua cannot hang or fail an eval; selecting one is a clear error.
TEST_F(Hostile, PluginDirectoryReadsOnlySelectedPlugins) {
  fs::create_directories(dir_ / "plugins");
  Fifo("plugins/fifo.lua");
  fs::create_symlink("/dev/zero", dir_ / "plugins/zero.lua");
  fs::create_symlink("loop.lua", dir_ / "plugins/loop.lua");
  const std::string args = kTinyEval + " --plugins " + Path("plugins") + " --metrics exact --output json";
  Output o = Run(args);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("\"all.p@5.micro\": 0.48"), std::string::npos) << o.out;
  EXPECT_EQ(StoredRuns(), 1u);
  const std::string p = Path("plugins");
  const std::string expected = " (expected a Lua plugin file)\n";
  for (const auto& [metric, what] : std::vector<std::pair<std::string, std::string>>{
           {"fifo", "a FIFO, not a regular file"}, {"zero", "a character device, not a regular file"},
           {"loop", "symbolic link loop"}}) {
    o = Run(kTinyEval + " --plugins " + p + " --metrics " + metric);
    EXPECT_EQ(o.code, 3) << o.err;
    EXPECT_EQ(o.err, "kplab: " + p + "/" + metric + ".lua: " + what + expected);
  }
  EXPECT_EQ(StoredRuns(), 1u);
}

TEST_F(Hostile, RunScriptThatIsNotARegularFileIsAUsageError) {
  fs::create_directories(dir_ / "scriptdir");
  const std::string fifo = Fifo("s.fifo");
  const std::string tail = " (expected a Lua script file) (see 'kplab help')\n";
  Output o = Run("run " + Path("scriptdir"));
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: " + Path("scriptdir") + ": a directory, not a regular file" + tail);
  o = Run("run " + fifo);
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: " + fifo + ": a FIFO, not a regular file" + tail);
  o = Run("run /dev/zero");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: /dev/zero: a character device, not a regular file" + tail);
  o = Run("run " + Path("missing.lua"));
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: " + Path("missing.lua") + ": no such file" + tail);
}

// ---- scripts reach only the directories they were granted --------------------------------------------

// The script's error message: stderr's first line after "kplab: .../s.lua:1: " (Lua shortens a long
// chunk name from the left, hence the match on the file name).
std::string ScriptError(const Output& o, const std::string& script) {
  const std::string line = o.err.substr(0, o.err.find('\n'));
  const std::string mark = "/" + fs::path(script).filename().string() + ":1: ";
  const std::size_t at = line.find(mark);
  if (!line.starts_with("kplab: ") || at == std::string::npos) return "unexpected stderr: " + o.err;
  return line.substr(at + mark.size());
}

TEST_F(Hostile, ScriptFileAccessIsConfinedToGrants) {
  const std::string outside_read = ": outside the directories scripts may read (the current directory, "
                                   "--allow-read DIR and --allow-write DIR)";
  const std::string outside_write =
      ": outside the directories scripts may write (the current directory and --allow-write DIR)";
  const std::string secret = Write("secret.txt", "s3cret");
  const std::string script = Path("s.lua");
  auto run = [&](const std::string& lua, const std::string& grants = "") {
    Write("s.lua", lua);
    return Run("run " + grants + " " + script);
  };
  Output o = run("print(kp.read('/etc/hostname'))");
  EXPECT_EQ(o.code, 3);
  EXPECT_EQ(ScriptError(o, script), "kp.read: /etc/hostname" + outside_read);
  // The script's own directory is not granted (only kp.include reads there).
  o = run("print(kp.read('" + secret + "'))");
  EXPECT_EQ(ScriptError(o, script), "kp.read: " + secret + outside_read);
  o = run("print(kp.read('" + secret + "'))", "--allow-read " + dir_.string());
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "s3cret\n");
  // ".." out of the working directory (the source tree).
  o = run("print(kp.read('../" + fs::path(kInputsSrc).filename().string() + "/../x'))");
  EXPECT_EQ(ScriptError(o, script), "kp.read: ../" + fs::path(kInputsSrc).filename().string() + "/../x" + outside_read);
  // A symbolic link inside a granted directory that leads out of it.
  fs::create_directories(dir_ / "granted");
  fs::create_symlink(dir_ / "secret.txt", dir_ / "granted/link.txt");
  o = run("print(kp.read('" + Path("granted/link.txt") + "'))", "--allow-read " + Path("granted"));
  EXPECT_EQ(ScriptError(o, script), "kp.read: " + Path("granted/link.txt") + outside_read);
  // NUL in a name.
  o = run("print(kp.read('README.md\\0/etc/hostname'))");
  EXPECT_EQ(ScriptError(o, script), "kp.read: README.md: path contains a NUL byte");
  // Writes: refused outside, nothing created; allowed under --allow-write (and readable there).
  const std::string target = Path("out/report.txt");
  o = run("kp.write('" + target + "', 'x')");
  EXPECT_EQ(o.code, 3);
  EXPECT_EQ(ScriptError(o, script), "kp.write: " + target + outside_write);
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  o = run("kp.write('" + target + "', 'x')", "--allow-read " + dir_.string());
  EXPECT_EQ(ScriptError(o, script), "kp.write: " + target + outside_write);
  o = run("kp.write('" + target + "', 'x'); print(kp.read('" + target + "'))", "--allow-write " + Path("out"));
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "x\n");
  // Reading a FIFO or a device in a granted directory: nil and a message, at once.
  const std::string fifo = Fifo("granted/f.fifo");
  o = run("print(kp.read('" + fifo + "'))", "--allow-read " + Path("granted"));
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "nil\t" + fifo + ": a FIFO, not a regular file (expected a readable regular file)\n");
  o = run("print(kp.read('/dev/zero'))", "--allow-read /dev");
  EXPECT_EQ(o.out, "nil\t/dev/zero: a character device, not a regular file (expected a readable regular file)\n");
  // kp.load and kp.runs are confined too; so is every file a dataset directory leads to.
  o = run("kp.load{dataset = '" + kInputsSrc + "/../shared/data/semeval2010/test'}");
  EXPECT_EQ(ScriptError(o, script),
            "kp.load: field 'dataset': " + kInputsSrc + "/../shared/data/semeval2010/test" + outside_read);
  o = run("kp.load{dataset = 'examples/tiny', predictions = '" + secret + "'}");
  EXPECT_EQ(ScriptError(o, script), "kp.load: field 'predictions': " + secret + outside_read);
  fs::create_directories(dir_ / "granted/ds");
  fs::copy_file(kInputsSrc + "/examples/tiny/tiny_allkeywords.txt", dir_ / "keys_outside.txt");
  fs::create_symlink(dir_ / "keys_outside.txt", dir_ / "granted/ds/tiny_allkeywords.txt");
  o = run("kp.load{dataset = '" + Path("granted/ds") + "'}", "--allow-read " + Path("granted"));
  // Refused by the gate in the importer, before the file is opened (no line of it is parsed or shown).
  EXPECT_EQ(ScriptError(o, script), Path("granted/ds") + "/tiny_allkeywords.txt" + outside_read);
  o = run("kp.runs.list('" + Path("other.db") + "')");
  EXPECT_EQ(ScriptError(o, script), "kp.runs.list: " + Path("other.db") + outside_read);
  // $KPLAB_DB is the user's: kp.runs.list() reads it where it is.
  ASSERT_EQ(Run(kTinyEval).code, 0);
  o = run("print(#kp.runs.list())");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "1\n");
  // Grants that cannot be resolved are usage errors.
  const std::string loop = Loop("grant.loop");
  o = Run("run --allow-read " + loop + " " + script);
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kplab: --allow-read: " + loop + ": symbolic link loop (see 'kplab help')\n");
}

TEST_F(Hostile, ReplFileAccessIsConfinedToGrants) {
  const std::string secret = Write("secret.txt", "s3cret");
  Output o = Run("repl", "print(kp.read('" + secret + "'))\n");
  EXPECT_EQ(o.code, 3);
  EXPECT_EQ(o.err.substr(0, o.err.find('\n')),
            "stdin:1: kp.read: " + secret +
                ": outside the directories scripts may read (the current directory, --allow-read DIR and "
                "--allow-write DIR)");
  o = Run("repl --allow-read " + dir_.string(), "print(kp.read('" + secret + "'))\n");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "s3cret\n");
}

// ---- the store ---------------------------------------------------------------------------------------

// 60 concurrent `kplab eval` into one database that does not exist yet: all succeed, all stored.
TEST_F(Hostile, ConcurrentEvalsIntoANewDatabaseAllStore) {
  constexpr int kProcs = 60;
  std::vector<std::thread> threads;
  std::vector<Output> outs(kProcs);
  for (int i = 0; i < kProcs; ++i) {
    fs::create_directories(dir_ / ("p" + std::to_string(i)));
    threads.emplace_back([&, i] {
      outs[i] = kplab::test::RunKplab(dir_ / ("p" + std::to_string(i)), "timeout 120",
                                      kTinyEval + " --metrics exact --db " + db_ + " --system s" + std::to_string(i));
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kProcs; ++i) EXPECT_EQ(outs[i].code, 0) << i << ": " << outs[i].err;
  EXPECT_EQ(StoredRuns(), static_cast<std::size_t>(kProcs));
}

// Every read command serves a store it cannot write. Tests run as root here, where chmod denies
// nothing: the store is made read-only by a read-only bind mount (a read-only filesystem) when mount
// namespaces are available, and by chmod 444/555 for the unprivileged user `nobody` (setpriv) when
// setpriv is; as a non-root user, chmod alone. Each way that is available is run.
TEST_F(Hostile, ReadOnlyStoreServesEveryReadCommand) {
  ASSERT_EQ(Run(kTinyEval + " --system a").code, 0);
  ASSERT_EQ(Run(kTinyEval + " --system b").code, 0);
  fs::create_directories(dir_ / "ro");
  const std::string db = Path("ro/r.db");
  {  // a clean copy without -wal/-shm (checkpointed when the last connection closed)
    fs::copy_file(db_, db);
  }
  const std::string commands[] = {"runs list", "runs show 1", "runs compare 1 2 --resamples 100",
                                  "runs export 2 --output tsv"};
  std::vector<std::string> expected;
  for (const auto& c : commands) {
    Output o = Run(c + " --db " + db);
    ASSERT_EQ(o.code, 0) << c << ": " << o.err;
    expected.push_back(o.out);
  }
  fs::remove(Path("ro/r.db-wal"));
  fs::remove(Path("ro/r.db-shm"));
  const std::string bin = KPLAB_BINARY;
  int ways = 0;
  auto check = [&](const std::string& wrap, const std::string& how) {
    for (std::size_t i = 0; i < std::size(commands); ++i) {
      const std::string cmd = "cd " + kInputsSrc + " && " + wrap + " " + bin + " " + commands[i] + " --db " + db +
                              " >" + Path("ro_out") + " 2>" + Path("ro_err");
      const int status = std::system(("sh -c '" + cmd + "'").c_str());
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << how << ": " << commands[i] << ": "
                                                                  << Slurp(Path("ro_err"));
      EXPECT_EQ(Slurp(Path("ro_out")), expected[i]) << how << ": " << commands[i];
    }
    // Removing is a write: a clear store error (exit 4), and the file keeps both runs.
    const std::string rm =
        "cd " + kInputsSrc + " && " + wrap + " " + bin + " runs rm 1 --db " + db + " >/dev/null 2>" + Path("ro_err");
    const int status = std::system(("sh -c '" + rm + "'").c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 4) << how << ": " << Slurp(Path("ro_err"));
    ++ways;
  };
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(dir_ / "ro", fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                   fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(dir_, fs::perms::others_exec | fs::perms::others_read, fs::perm_options::add);
  if (::geteuid() != 0) {
    check("", "chmod 444/555");
  } else {
    if (std::system("setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null") == 0) {
      Write("ro_out", "");
      Write("ro_err", "");
      fs::permissions(Path("ro_out"), fs::perms::all);
      fs::permissions(Path("ro_err"), fs::perms::all);
      check("setpriv --reuid=65534 --regid=65534 --clear-groups", "nobody, chmod 444/555");
    }
    if (std::system(("unshare -m true 2>/dev/null")) == 0) {
      fs::permissions(dir_ / "ro", fs::perms::owner_all, fs::perm_options::add);
      const std::string wrap = "unshare -m sh -c \"mount --bind -o ro " + Path("ro") + " " + Path("ro") + " && exec \\$0 \\$@\"";
      // The mount must work for this to test anything.
      if (std::system(("unshare -m sh -c 'mount --bind -o ro " + Path("ro") + " " + Path("ro") + "' 2>/dev/null").c_str()) == 0) {
        for (std::size_t i = 0; i < std::size(commands); ++i) {
          const std::string cmd = "cd " + kInputsSrc + " && unshare -m sh -c 'mount --bind -o ro " + Path("ro") + " " +
                                  Path("ro") + " && " + bin + " " + commands[i] + " --db " + db + "' >" +
                                  Path("ro_out") + " 2>" + Path("ro_err");
          const int status = std::system(cmd.c_str());
          EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "ro mount: " << commands[i] << ": "
                                                                      << Slurp(Path("ro_err"));
          EXPECT_EQ(Slurp(Path("ro_out")), expected[i]) << "ro mount: " << commands[i];
        }
        ++ways;
      }
      (void)wrap;
    }
  }
  if (ways == 0) GTEST_SKIP() << "no way to make the store unwritable here (root without setpriv or unshare)";
  auto store = kplab::RunStore::Open(db, kplab::RunStore::Mode::kReadOnly);
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(store->ListRuns()->size(), 2u);
}

// Oversized values from a plugin: a 100 MB error message is stored cut to 64 KiB with a note; a 10 MB
// metric name and 100,000 columns are refused with the bound; an aggregate that is not a number is an
// error naming the metric (it used to be stored as NaN).
TEST_F(Hostile, StoreBoundsAndAggregateTypes) {
  fs::create_directories(dir_ / "plugins");
  auto plugin = [&](const std::string& name, const std::string& body) {
    Write("plugins/" + name + ".lua", "-- kplab-api: 1\nreturn kp.metric { name = \"" + name +
                                          "\", version = \"1\",\n" + body + "\n}\n");
  };
  plugin("hugeerr", "score = function() error(string.rep('e', 16 * 1024 * 1024), 0) end");
  plugin("hugename", "score = function() return { [string.rep('n', 10 * 1024 * 1024)] = 1 } end");
  // One column past RunStore::kMaxColumns (10,000): the bound is exact, and the test no heavier than it.
  plugin("manycols", "score = function() local t = {} for i = 1, 10001 do t['c' .. i] = i end return t end");
  plugin("aggstr", "score = function() return { ['all.x'] = 1 } end,\n"
                   "aggregate = function() return { ['all.x'] = '0.5' } end");
  plugin("aggfield", "score = function() return { ['all.x'] = 1 } end,\n"
                     "aggregate = function() return { ['all.x'] = { value = 'abc' } } end");
  const std::string base = kTinyEval + " --plugins " + Path("plugins") + " --metrics ";
  Output o = Run(base + "hugeerr");
  EXPECT_EQ(o.code, 3);
  ASSERT_EQ(StoredRuns(), 1u);
  {
    auto store = kplab::RunStore::Open(db_, kplab::RunStore::Mode::kReadOnly);
    auto run = store->GetRun(1);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->status, "failed");
    const std::string note = " ... (error text cut at 65536 of ";
    ASSERT_NE(run->error.find(note), std::string::npos) << run->error.substr(0, 200);
    EXPECT_EQ(run->error.find(note), 65536u);
    EXPECT_TRUE(run->error.ends_with(" bytes)")) << run->error.substr(65536);
  }
  o = Run(base + "hugename");
  EXPECT_EQ(o.code, 4);
  EXPECT_EQ(o.err, "kplab: cannot save run: a metric name in scores has 10485760 bytes, starting '" +
                       std::string(40, 'n') + "...' (expected at most 1024)\n");
  // (Not re-scored after the run, --verify-docs 0: on 5 documents that doubles the work this bounds.)
  o = Run(base + "manycols --verify-docs 0");
  EXPECT_EQ(o.code, 4);
  EXPECT_EQ(o.err, "kplab: cannot save run: 10001 score columns (expected at most 10000)\n");
  EXPECT_EQ(StoredRuns(), 1u);
  o = Run(base + "aggstr");
  EXPECT_EQ(o.code, 3);
  EXPECT_EQ(o.err.substr(0, o.err.find('\n')),
            "kplab: " + Path("plugins") + "/aggstr.lua: aggregate 'all.x' must be a number or {value, ci_low, ci_high} "
            "(got string)");
  o = Run(base + "aggfield");
  EXPECT_EQ(o.code, 3);
  EXPECT_EQ(o.err.substr(0, o.err.find('\n')),
            "kplab: " + Path("plugins") + "/aggfield.lua: aggregate 'all.x': field 'value' must be a number (got string)");
  // Both recorded as failed runs, no aggregate stored as NaN.
  auto store = kplab::RunStore::Open(db_, kplab::RunStore::Mode::kReadOnly);
  auto runs = store->ListRuns();
  ASSERT_EQ(runs->size(), 3u);
  for (const auto& r : *runs) EXPECT_EQ(r.status, "failed") << r.id;
}

}  // namespace

namespace {

// Running out of memory while reading the predictions is the same limit error on both import paths:
// the streaming one (`LineDocuments`, Meng lines with prediction lines) and the general one (here
// taken by giving the source text with --source). A sparse 2 GiB predictions file under a 400 MB
// address-space limit fails its buffer's allocation on either path; the stream path used to report
// it as "internal error: std::bad_alloc" (exit 5). A memory limit is ErrorKind::kLimit, exit 3 (the
// general path chose it, and the engine used to re-label it input, exit 2; design note 49).
TEST_F(Hostile, OutOfMemoryReadingPredictionsIsTheSameErrorOnBothPaths) {
#if defined(__SANITIZE_ADDRESS__)
  // As HostileTest.OutOfMemoryIsAClearErrorNotAnAbort: AddressSanitizer's shadow memory cannot be reserved
  // under an address-space limit, so the child aborts before main (found by the ASan run of this test).
  GTEST_SKIP() << "built with AddressSanitizer (KPLAB_SANITIZE): a process under prlimit --as cannot start";
#endif
  fs::create_directories(dir_ / "d");
  Write("d/x_allkeywords.txt", "a;b\nc\nd\n");
  const std::string src = Write("src.txt", "t <eos> a b\nt <eos> c\nt <eos> d\n");
  const std::string huge = Path("huge.txt");
  std::ofstream(huge).close();
  fs::resize_file(huge, std::uintmax_t{2} << 30);  // sparse: no disk used
  const std::string expected = "kplab: " + huge + ": out of memory while reading the predictions\n";
  for (const std::string& extra : {std::string(""), " --source " + src}) {
    SCOPED_TRACE(extra);
    const Output o = kplab::test::RunKplab(dir_ / "io", "KPLAB_DB=" + db_ + " timeout 60 prlimit --as=400000000",
                                           "eval --dataset " + Path("d") + " --predictions " + huge + extra +
                                               " --no-store --output csv");
    EXPECT_EQ(o.code, 3) << o.err;
    EXPECT_EQ(o.err, expected);
  }
}

// Running out of memory after the files are read, while the corpus is built from them (three documents of
// 300,000 keyphrases each, 20 MB a file, under a 250 MB address-space limit), is the same kind of
// limit, naming both files, on one thread and on two; nothing is stored. It was "internal error:
// std::bad_alloc", exit 5 (found by a hostile pass).
TEST_F(Hostile, OutOfMemoryBuildingTheCorpusIsALimitNotAnInternalError) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "built with AddressSanitizer (KPLAB_SANITIZE): a process under prlimit --as cannot start";
#endif
  std::string keys, preds;
  for (int d = 0; d < 3; ++d) {
    std::string line;
    for (int i = 0; i < 300000; ++i) {
      line += (i ? ";w" : "w") + std::to_string(i) + " x" + std::to_string(d) + " y" + std::to_string(i % 97);
    }
    keys += line + "\n";
    preds += line + ";p" + std::to_string(d) + "\n";
  }
  fs::create_directories(dir_ / "big");
  const std::string dataset = Write("big/word_x_testing_allkeywords.txt", keys);
  const std::string predictions = Write("pred.txt", preds);
  for (const char* threads : {"1", "2"}) {
    SCOPED_TRACE(threads);
    const Output o = kplab::test::RunKplab(
        dir_ / "io", "KPLAB_DB=" + db_ + " timeout 60 prlimit --as=250000000",
        "eval --dataset " + dataset + " --predictions " + predictions + " --metrics exact --threads " + threads);
    EXPECT_EQ(o.code, 3) << o.err;
    EXPECT_EQ(o.err, "kplab: " + dataset + " and " + predictions +
                         ": out of memory while reading the files and building the corpus\n");
  }
  EXPECT_FALSE(fs::exists(db_)) << "nothing stored, no store made";
}

// One document of 100,000 references and 100,000 predictions scores its exact matches in well under a
// second: each prediction's key is looked up among the references' (match.cc, ExactMatch). Comparing every
// pair took 38 s (a hostile pass). The bound is only "it finishes" (10 s); the numbers are checked by hand:
// predictions 0..99,999 against references 50,000..149,999 give 50,000 hits, P@5 = 0 (the first five
// are no reference), R@M = 0.5.
TEST_F(Hostile, OneDocumentOfAHundredThousandKeyphrasesFinishes) {
  std::string refs, preds;
  for (int i = 0; i < 100000; ++i) {
    refs += (i ? ";k" : "k") + std::to_string(i + 50000);
    preds += (i ? ";k" : "k") + std::to_string(i);
  }
  fs::create_directories(dir_ / "one");
  const std::string dataset = Write("one/word_x_testing_allkeywords.txt", refs + "\n");
  const std::string predictions = Write("one.txt", preds + "\n");
  const auto start = std::chrono::steady_clock::now();
  const Output o = kplab::test::RunKplab(
      dir_ / "io", "timeout 60",
      "eval --dataset " + dataset + " --predictions " + predictions + " --metrics exact --no-store --output csv");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("all.p@5.macro,0\n"), std::string::npos) << o.out.substr(0, 600);
  EXPECT_NE(o.out.find("all.r@M.macro,0.5\n"), std::string::npos) << o.out.substr(0, 600);
}

}  // namespace
