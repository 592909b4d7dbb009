// Every text kplab writes for a terminal is escaped (kplab/safe_text.h), checked over the whole code base
// (core/ and host/), not one command at a time (tests/host/hostile_names_test.cc tries the commands):
// - std::cout, std::cerr and std::clog are written only by the kplab program (host/cli, host/repl), whose
//   Main passes both streams through TerminalSafeStream; the libraries (core, the engine, the Lua and
//   Python modules, the C ABI) never write to them;
// - every write through C stdio (fwrite, fputs, fprintf, printf, puts, ...) in core/ and host/ is listed
//   below, with why it is safe, and is one of: a write of literals only (the progress line's own control
//   sequence), or a write in a function that escapes what it writes (calls TerminalText or ErrorText).
//   A new write fails this test until it is escaped and listed: a feature cannot forget the rule.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "source_scan.h"

namespace kplab::test {
namespace {

enum class WriteKind { kLiteralsOnly, kEscapes, kFileItOpened };

struct KnownWrite {
  WriteKind kind;
  const char* why;
};

// "file:function" -> what its writes are and why they are safe.
const std::map<std::string, KnownWrite> kTerminalWrites = {
    {"host/cli/cli.cc:CmdStem", {WriteKind::kEscapes, "kplab stem's stems of stdin's words, through TerminalText"}},
    {"host/cli/cli.cc:ProgressBar", {WriteKind::kLiteralsOnly, "clears the progress line (\\r\\033[K)"}},
    {"host/cli/cli.cc:operator()",
     {WriteKind::kEscapes, "draws the progress line: its label through TerminalText, the rest numbers and '#'"}},
    {"host/cli/cli.cc:CmdEvalBatch",
     {WriteKind::kEscapes, "the batch's progress line (a path through TerminalText) and its clearing"}},
    {"host/cli/cli_args.h:ReportError",
     {WriteKind::kLiteralsOnly, "clears the progress line before a message (the message goes through std::cerr)"}},
    {"host/repl/repl.cc:Show", {WriteKind::kEscapes, "the REPL's values and prints, through TerminalText"}},
    {"host/repl/repl.cc:ReadLine", {WriteKind::kLiteralsOnly, "echoes ^C when Ctrl-C drops the line typed"}},
    {"host/repl/repl.cc:Command", {WriteKind::kLiteralsOnly, ":help's text, a constant (kReplHelp)"}},
    {"host/lua/lua_util.h:LuaPrint", {WriteKind::kEscapes, "a `kplab run` script's print, through TerminalText"}},
    {"host/lua/sandbox.cc:Log", {WriteKind::kEscapes, "kp.log: the label and the text, through TerminalText"}},
    {"host/engine/lua_script.cc:LuaLoad", {WriteKind::kEscapes, "kp.load's warnings, through TerminalText"}},
    {"host/engine/evaluate.cc:Done", {WriteKind::kEscapes, "KPLAB_TIMING's phase lines, names through TerminalText"}},
    {"host/engine/evaluate.cc:Note",
     {WriteKind::kEscapes, "KPLAB_TIMING's notes (a plugin's lanes), through TerminalText"}},
    {"core/src/embed/transformer.cc:EmbedUnchecked",
     {WriteKind::kEscapes, "the max_seq_length warning: the model's directory and the text, through TerminalText"}},
};

// The C stdio writes to a FILE* that is not stdout or stderr by name: "file:function" -> what it is.
const std::map<std::string, KnownWrite> kOtherWrites = {
    {"host/cli/cli.cc:Write",
     {WriteKind::kEscapes,
      "TerminalSafeStream writes every byte of std::cout and std::cerr to stdout and stderr, through TerminalText"}},
    {"core/src/embed/vecfile.cc:Write", {WriteKind::kFileItOpened, "a model's vectors, to the file it opened"}},
    {"core/src/cache/ann.cc:WriteAll",
     {WriteKind::kFileItOpened, "the phrase index, to the file it opened (a descriptor)"}},
    {"host/repl/repl.cc:OnSigint", {WriteKind::kFileItOpened, "one byte into the REPL's own self-pipe (Ctrl-C)"}},
};

struct WriteSite {
  std::string key;  // file:function
  std::string call, args;
  int line = 0;
  bool terminal = false;  // to stdout or stderr by name
};

// The argument text of the call whose '(' is at `open` in the blanked text (up to its matching ')').
std::string CallArgs(const std::string& blank, std::size_t open) {
  int depth = 0;
  for (std::size_t j = open; j < blank.size(); ++j) {
    if (blank[j] == '(') ++depth;
    if (blank[j] == ')' && --depth == 0) return blank.substr(open + 1, j - open - 1);
  }
  return blank.substr(open + 1);
}

// The writes to stdout or stderr through C stdio in every source of core/ and host/, and the files that
// name a C++ standard stream.
struct Scan {
  std::vector<WriteSite> writes;          // every C stdio write
  std::vector<std::string> stream_users;  // file:line naming std::cout, std::cerr or std::clog
};

// Adds f's writes and stream names to out.
void ScanFile(const SourceFile& f, Scan& out) {
  // Calls whose stream is an argument; calls that write to stdout or stderr always (fmt::print and
  // std::print with a FILE* are counted as terminal writes too: listed either way).
  static const std::regex to_stream(
      R"(\b(fwrite|fputs|fputc|putc|fprintf|vfprintf|fwrite_unlocked|fputs_unlocked|dprintf|write)\s*\()");
  static const std::regex to_stdout(R"(\b(printf|vprintf|puts|putchar|putchar_unlocked|perror)\s*\()");
  static const std::regex formatted(R"(\b(?:fmt|std)\s*::\s*(v?print(?:ln)?)\s*\()");
  static const std::regex terminal(R"(\b(stdout|stderr|STDOUT_FILENO|STDERR_FILENO)\b|^\s*[12]\s*,)");
  static const std::regex stream(R"(\bstd\s*::\s*(cout|cerr|clog|wcout|wcerr|wclog)\b)");
  for (auto it = std::sregex_iterator(f.blank.begin(), f.blank.end(), stream); it != std::sregex_iterator(); ++it) {
    out.stream_users.push_back(f.path + ":" + std::to_string(f.LineOf(static_cast<std::size_t>(it->position(0)))));
  }
  for (const std::regex* re : {&to_stream, &to_stdout, &formatted}) {
    for (auto it = std::sregex_iterator(f.blank.begin(), f.blank.end(), *re); it != std::sregex_iterator(); ++it) {
      const std::size_t at = static_cast<std::size_t>(it->position(0));
      if (re != &formatted) {
        // A member call (x.write(...), s->write(...)) writes a C++ object, not a C stream.
        std::size_t b = at;
        while (b > 0 && (f.blank[b - 1] == ' ' || f.blank[b - 1] == ':')) --b;
        if (b > 0 && (f.blank[b - 1] == '.' || f.blank[b - 1] == '>')) continue;
        if (b >= 3 && f.blank.compare(b - 3, 3, "std") != 0 &&
            (std::isalnum(static_cast<unsigned char>(f.blank[b - 1])) || f.blank[b - 1] == '_')) {
          continue;  // a qualified name of another namespace (io_internal::write)
        }
      }
      const std::string name = (*it)[1];
      const std::string args = CallArgs(f.blank, at + static_cast<std::size_t>(it->length(0)) - 1);
      const SourceFunction* fn = f.FunctionAt(at);
      out.writes.push_back({f.path + ":" + (fn ? fn->name : std::string("(no function)")), name, args, f.LineOf(at),
                            re != &to_stream || std::regex_search(args, terminal)});
    }
  }
}

Scan ScanSourcesOnce() {
  Scan out;
  for (const char* dir : {"core", "host"}) {
    for (const SourceFile& f : ReadSources(KPLAB_SOURCE_DIR, dir)) ScanFile(f, out);
  }
  return out;
}

// The scan, made once for the suite's tests (one process runs them).
const Scan& ScanSources() {
  static const Scan scan = ScanSourcesOnce();
  return scan;
}

bool OnlyLiterals(const std::string& args) {
  // The blanked text keeps a literal's quotes: what is left but quotes, the stream, numbers and
  // constants named kSomething, is code that computes text.
  static const std::regex code(R"([A-Za-z_]\w*)");
  for (auto it = std::sregex_iterator(args.begin(), args.end(), code); it != std::sregex_iterator(); ++it) {
    const std::string w = it->str();
    if (w == "stdout" || w == "stderr" || w == "std") continue;
    if (w.size() > 1 && w[0] == 'k' && std::isupper(static_cast<unsigned char>(w[1]))) continue;
    return false;
  }
  return true;
}

// The scanner itself, on a text written for it: it finds every form of write (a scanner that finds
// nothing would pass the rules below), and not the member calls and other namespaces' functions.
TEST(TerminalOutputRule, TheScannerFindsEveryFormOfWrite) {
  SourceFile f;
  f.path = "x.cc";
  f.text =
      "void A(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); fputs(s.c_str(), stderr); }\n"
      "void B(int x) { std::fprintf(stderr, \"%d\", x); printf(\"a\"); std::puts(\"b\"); putchar('c'); }\n"
      "void C(const char* p) { ::write(2, p, 1); write(STDOUT_FILENO, p, 1); dprintf(1, \"%s\", p); perror(p); }\n"
      "void D(const std::string& s) { fmt::print(stderr, \"{}\", s); fmt::print(\"{}\", s); std::println(\"{}\", s); "
      "}\n"
      "void E(std::FILE* f, int fd, const char* p) { std::fwrite(p, 1, 1, f); write(fd, p, 1); std::cerr << p; }\n"
      "void F(std::ostream& o, Out* w, const char* p) { o.write(p, 1); w->write(p); io_internal::write(p); }\n";
  f.blank = BlankCommentsAndLiterals(f.text);
  f.functions = FindFunctions(f.blank);
  Scan scan;
  ScanFile(f, scan);
  std::map<std::string, int> terminal, other;
  for (const WriteSite& w : scan.writes) ++(w.terminal ? terminal : other)[w.key];
  EXPECT_EQ(terminal, (std::map<std::string, int>{{"x.cc:A", 2}, {"x.cc:B", 4}, {"x.cc:C", 4}, {"x.cc:D", 3}}));
  EXPECT_EQ(other, (std::map<std::string, int>{{"x.cc:E", 2}}));
  EXPECT_EQ(scan.stream_users, std::vector<std::string>{"x.cc:5"});
  // The literal check: a literal and a kConstant are literals, a variable is not.
  for (const WriteSite& w : scan.writes) {
    if (w.key == "x.cc:B") {
      EXPECT_EQ(OnlyLiterals(w.args), w.call != "fprintf") << w.call << ":" << w.args;
    }
  }
}

TEST(TerminalOutputRule, OnlyTheProgramWritesTheStandardStreamsAndItEscapesBoth) {
  const Scan& scan = ScanSources();
  for (const std::string& at : scan.stream_users) {
    EXPECT_TRUE(at.starts_with("host/cli/") || at.starts_with("host/repl/"))
        << at
        << ": names a standard C++ stream outside the kplab program; a library must not write to the "
           "process's streams (return the text, or write it escaped through C stdio and list it here)";
    EXPECT_FALSE(at.starts_with("host/cli/main.cc:"))
        << at << ": main() runs before Main escapes the streams (use ReportError)";
  }
  // Main puts both streams behind the escaping layer before it does anything else.
  const SourceFile cli = ReadSource(KPLAB_SOURCE_DIR, std::string(KPLAB_SOURCE_DIR) + "/host/cli/cli.cc");
  bool found = false;
  for (const SourceFunction& fn : cli.functions) {
    if (fn.name != "Main") continue;
    found = true;
    const std::string body = cli.blank.substr(fn.begin, 400);
    EXPECT_NE(body.find("TerminalSafeStream safe_out(std::cout, stdout);"), std::string::npos) << body;
    EXPECT_NE(body.find("TerminalSafeStream safe_err(std::cerr, stderr);"), std::string::npos) << body;
  }
  EXPECT_TRUE(found) << "host/cli/cli.cc: no function Main";
}

bool FunctionEscapes(const std::string& key) {
  const std::string file = key.substr(0, key.find(':'));
  const SourceFile f = ReadSource(KPLAB_SOURCE_DIR, std::string(KPLAB_SOURCE_DIR) + "/" + file);
  for (const SourceFunction& fn : f.functions) {
    if (f.path + ":" + fn.name != key) continue;
    const std::string body = f.blank.substr(fn.begin, fn.end - fn.begin);
    if (Calls(body, "TerminalText") || Calls(body, "ErrorText")) return true;
  }
  return false;
}

// Each write is in its list, and is what the list says.
void CheckWrites(const Scan& scan, bool terminal, const std::map<std::string, KnownWrite>& list,
                 const char* list_name) {
  std::set<std::string> seen;
  for (const WriteSite& w : scan.writes) {
    if (w.terminal != terminal) continue;
    seen.insert(w.key);
    const std::string at = w.key + " (line " + std::to_string(w.line) + ", " + w.call + ")";
    const auto known = list.find(w.key);
    if (known == list.end()) {
      ADD_FAILURE() << at
                    << (terminal ? ": writes to stdout or stderr" : ": writes to a FILE* not named stdout or stderr")
                    << " and is not listed in " << list_name << ": escape what it writes (TerminalText, "
                    << "kplab/safe_text.h) if it can reach a terminal, and list it, saying why it is safe";
      continue;
    }
    if (known->second.kind == WriteKind::kFileItOpened || OnlyLiterals(w.args)) continue;
    EXPECT_EQ(known->second.kind, WriteKind::kEscapes)
        << at << ": listed as writing literals only, but writes:" << w.args;
    EXPECT_TRUE(FunctionEscapes(w.key)) << at << ": writes computed text without TerminalText or ErrorText:" << w.args;
  }
  // No stale entry (a scanner that found nothing would pass the loop above).
  for (const auto& [key, known] : list) {
    EXPECT_TRUE(seen.count(key)) << key << ": listed in " << list_name << " but found no such write";
  }
}

TEST(TerminalOutputRule, EveryCStdioWriteToATerminalIsListedAndEscaped) {
  CheckWrites(ScanSources(), true, kTerminalWrites, "kTerminalWrites");
}

// The other C stdio writes go to a FILE* that is not stdout or stderr by name: the escaping layer's own, and
// files kplab opened itself. Listed too, so that one that may reach a terminal is looked at.
TEST(TerminalOutputRule, EveryOtherCStdioWriteIsListed) {
  CheckWrites(ScanSources(), false, kOtherWrites, "kOtherWrites");
}

}  // namespace
}  // namespace kplab::test
