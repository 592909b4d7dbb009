// Every text kplab writes for a terminal is escaped (kplab/safe_text.h), checked over the whole code base
// (core/ and host/), not one command at a time (tests/host/hostile_names_test.cc tries the commands;
// docs/design-notes.md, note 63):
// - std::cout, std::cerr and std::clog are written only by the kplab program (host/cli, host/repl), whose
//   Main passes both streams through TerminalSafeStream; the libraries (core, the engine, the Lua and
//   Python modules, the C ABI) never write to them;
// - every other write to a stream or descriptor (C stdio, POSIX write, err/warn, fmt::print, Python's
//   warnings and sys.stderr) in core/ and host/ is listed below by file and function, with why it is
//   safe, and each call is one of: literals only (the progress line's own control sequence), or text
//   that is escaped at the call (an argument is TerminalText(...) or ErrorText(...), or a variable the
//   function made from one);
// - every child program kplab starts is listed, with where its output goes;
// - no source names a terminal device (/dev/tty, /dev/stdout, ...).
// A new write fails this test until it is escaped and listed: a feature cannot forget the rule.
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
    {"host/python/kplab_py.cc:Compare",
     {WriteKind::kEscapes, "Store.compare's warnings (UserWarning, shown by Python as given), through TerminalText"}},
    {"host/python/kplab_py.cc:Table",
     {WriteKind::kEscapes, "Store.table's warnings (UserWarning), through TerminalText"}},
    {"host/python/kplab_py.cc:ResultDict",
     {WriteKind::kEscapes, "evaluate's warnings (UserWarning: stemmed gold, ...), through TerminalText"}},
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
    {"core/src/cache/ann.cc:Save",
     {WriteKind::kFileItOpened, "the phrase index's header, to the file it opened (a descriptor)"}},
    {"host/repl/repl.cc:OnSigint", {WriteKind::kFileItOpened, "one byte into the REPL's own self-pipe (Ctrl-C)"}},
};

// Every child program kplab starts: "file:function" -> where its output goes.
const std::map<std::string, std::string> kChildPrograms = {
    {"host/cli/cli_model.cc:RunProgram",
     "npm and tar (kplab model install): their stdout and stderr are read through a pipe and written to "
     "std::cerr, which escapes them"},
};

struct WriteSite {
  std::string key;  // file:function
  std::string call, args;
  std::size_t at = 0;  // offset of the call in the file's blanked text
  int line = 0;
  bool terminal = false;  // to stdout or stderr by name (or always, as printf)
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

struct Scan {
  std::vector<WriteSite> writes;          // every write to a stream or a descriptor
  std::vector<std::string> stream_users;  // file:line naming std::cout, std::cerr or std::clog
  std::vector<std::string> spawns;        // file:function starting a child program
  std::vector<std::string> devices;       // file:line naming a terminal device
};

bool BlankSpace(char c) { return c == ' ' || c == '\n'; }

// Whether the call at `at` is another namespace's function or a member (io_internal::write, out.write,
// w->write): only a plain name, ::name and std::name are the C library's.
bool NotTheCLibrary(const std::string& blank, std::size_t at) {
  std::size_t b = at;
  while (b > 0 && blank[b - 1] == ' ') --b;
  if (b > 0 && blank[b - 1] == '.') return true;
  if (b > 1 && blank.compare(b - 2, 2, "->") == 0) return true;
  if (b < 2 || blank.compare(b - 2, 2, "::") != 0) return false;
  b -= 2;
  while (b > 0 && blank[b - 1] == ' ') --b;
  std::size_t e = b;
  while (b > 0 && (std::isalnum(static_cast<unsigned char>(blank[b - 1])) || blank[b - 1] == '_')) --b;
  const std::string ns = blank.substr(b, e - b);
  return !(ns.empty() || ns == "std");
}

// Each call of a name in `names` in the blanked text: (offset of the name, the name, offset of its '(').
// A plain scan of the identifiers (a regex over the whole code base took most of this suite's time).
template <typename F>
void ForEachCall(const std::string& blank, const std::set<std::string>& names, F&& f) {
  std::size_t i = 0;
  while (i < blank.size()) {
    const auto c = static_cast<unsigned char>(blank[i]);
    if (!(std::isalpha(c) || c == '_')) {
      ++i;
      continue;
    }
    std::size_t e = i;
    while (e < blank.size() && (std::isalnum(static_cast<unsigned char>(blank[e])) || blank[e] == '_')) ++e;
    const bool word_start = i == 0 || !(std::isalnum(static_cast<unsigned char>(blank[i - 1])) || blank[i - 1] == '_');
    if (word_start && names.count(blank.substr(i, e - i))) {
      std::size_t open = e;
      while (open < blank.size() && blank[open] == ' ') ++open;
      if (open < blank.size() && blank[open] == '(') f(i, blank.substr(i, e - i), open);
    }
    i = e;
  }
}

// Adds f's writes, stream names, child programs and terminal devices to out.
void ScanFile(const SourceFile& f, Scan& out) {
  // Writes whose stream or descriptor is an argument.
  static const std::set<std::string> to_stream = {
      "fwrite",         "fputs",          "fputc",         "putc",     "fputws",    "fputwc",
      "putwc",          "fprintf",        "vfprintf",      "fwprintf", "vfwprintf", "fwrite_unlocked",
      "fputs_unlocked", "fputc_unlocked", "putc_unlocked", "dprintf",  "vdprintf",  "write",
      "writev",         "pwrite",         "pwritev",       "syscall"};
  // Writes to stdout or stderr always (Python shows its warnings on stderr).
  static const std::set<std::string> always = {"printf",
                                               "vprintf",
                                               "wprintf",
                                               "puts",
                                               "putchar",
                                               "putchar_unlocked",
                                               "putwchar",
                                               "perror",
                                               "psignal",
                                               "psiginfo",
                                               "err",
                                               "errx",
                                               "verr",
                                               "verrx",
                                               "warn",
                                               "warnx",
                                               "vwarn",
                                               "vwarnx",
                                               "__builtin_printf",
                                               "__builtin_puts",
                                               "__builtin_putchar",
                                               "PySys_WriteStdout",
                                               "PySys_WriteStderr",
                                               "PySys_FormatStdout",
                                               "PySys_FormatStderr",
                                               "PyErr_WarnEx",
                                               "PyErr_WarnFormat",
                                               "PyErr_WarnExplicit",
                                               "PyErr_ResourceWarning",
                                               "PyErr_Print",
                                               "PyErr_PrintEx",
                                               "PyErr_Display"};
  // fmt::print and std::print (to a FILE* or stdout: counted as terminal writes either way).
  static const std::set<std::string> formatted = {"print", "println", "vprint", "vprint_unicode", "vprint_nonunicode"};
  static const std::set<std::string> spawn = {"posix_spawn", "posix_spawnp", "fork",   "vfork",   "clone",
                                              "execv",       "execvp",       "execve", "execvpe", "execl",
                                              "execlp",      "execle",       "system", "popen"};
  static const std::regex terminal(R"(\b(stdout|stderr|STDOUT_FILENO|STDERR_FILENO|SYS_write)\b|^\s*[12]\s*,)");
  static const std::regex stream(R"(\bstd\s*::\s*(cout|cerr|clog|wcout|wcerr|wclog)\b)");
  static const std::regex device(R"(/dev/(tty|stdout|stderr|console|pts)|/proc/self/fd/[12]\b)");
  auto key_at = [&](std::size_t at) {
    const SourceFunction* fn = f.FunctionAt(at);
    return f.path + ":" + (fn ? fn->name : std::string("(no function)"));
  };
  if (f.blank.find("std") != std::string::npos) {
    for (auto it = std::sregex_iterator(f.blank.begin(), f.blank.end(), stream); it != std::sregex_iterator(); ++it) {
      out.stream_users.push_back(f.path + ":" + std::to_string(f.LineOf(static_cast<std::size_t>(it->position(0)))));
    }
  }
  if (f.text.find("/dev/") != std::string::npos || f.text.find("/proc/self/fd/") != std::string::npos) {
    for (auto it = std::sregex_iterator(f.text.begin(), f.text.end(), device); it != std::sregex_iterator(); ++it) {
      out.devices.push_back(f.path + ":" + std::to_string(f.LineOf(static_cast<std::size_t>(it->position(0)))));
    }
  }
  ForEachCall(f.blank, spawn, [&](std::size_t at, const std::string&, std::size_t) {
    if (!NotTheCLibrary(f.blank, at)) out.spawns.push_back(key_at(at));
  });
  auto add = [&](std::size_t at, const std::string& name, std::size_t open, bool terminal_always) {
    const std::string args = CallArgs(f.blank, open);
    out.writes.push_back(
        {key_at(at), name, args, at, f.LineOf(at), terminal_always || std::regex_search(args, terminal)});
  };
  ForEachCall(f.blank, to_stream, [&](std::size_t at, const std::string& name, std::size_t open) {
    if (!NotTheCLibrary(f.blank, at)) add(at, name, open, false);
  });
  ForEachCall(f.blank, always, [&](std::size_t at, const std::string& name, std::size_t open) {
    if (!NotTheCLibrary(f.blank, at)) add(at, name, open, true);
  });
  ForEachCall(f.blank, formatted, [&](std::size_t at, const std::string& name, std::size_t open) {
    // Only fmt::NAME and std::NAME (a member print() or another namespace's is no write of these).
    std::size_t b = at;
    while (b > 0 && BlankSpace(f.blank[b - 1])) --b;
    if (b < 2 || f.blank.compare(b - 2, 2, "::") != 0) return;
    b -= 2;
    while (b > 0 && BlankSpace(f.blank[b - 1])) --b;
    if ((b >= 3 && f.blank.compare(b - 3, 3, "fmt") == 0) || (b >= 3 && f.blank.compare(b - 3, 3, "std") == 0)) {
      add(at, name, open, true);
    }
  });
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

// The identifiers a call's arguments name (literals are blanked; members such as .data() and .c_str(),
// the streams, sizes and constants named kSomething are not text of their own).
std::vector<std::string> TextNames(const std::string& args) {
  static const std::regex word(R"((\.|->)?\s*\b([A-Za-z_]\w*)\b)");
  static const std::set<std::string> not_text = {
      "stdout",        "stderr",        "std",         "data",   "c_str",       "size", "length",
      "STDOUT_FILENO", "STDERR_FILENO", "string_view", "string", "static_cast", "int",  "size_t"};
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(args.begin(), args.end(), word); it != std::sregex_iterator(); ++it) {
    if ((*it)[1].matched) continue;  // a member: its object was counted
    const std::string w = (*it)[2];
    if (not_text.count(w) || (w.size() > 1 && w[0] == 'k' && std::isupper(static_cast<unsigned char>(w[1])))) continue;
    out.push_back(w);
  }
  return out;
}

// The arguments of a write without its stream or descriptor (fwrite's last, fprintf's first, ...).
std::string DataArgs(const std::string& call, const std::string& args) {
  std::vector<std::string> parts(1);
  int depth = 0;
  for (char c : args) {
    if (c == '(' || c == '{' || c == '[') ++depth;
    if (c == ')' || c == '}' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.emplace_back();
    } else {
      parts.back() += c;
    }
  }
  static const std::set<std::string> last = {"fwrite",         "fputs",          "fputc",        "putc",
                                             "fputws",         "fputwc",         "putwc",        "fwrite_unlocked",
                                             "fputs_unlocked", "fputc_unlocked", "putc_unlocked"};
  static const std::set<std::string> first = {"fprintf",  "vfprintf", "fwprintf", "vfwprintf", "dprintf",
                                              "vdprintf", "write",    "writev",   "pwrite",    "pwritev"};
  if (parts.size() > 1 && last.count(call)) parts.pop_back();
  if (parts.size() > 1 && first.count(call)) parts.erase(parts.begin());
  if (parts.size() > 2 && call == "syscall") parts.erase(parts.begin(), parts.begin() + 2);
  std::string out;
  for (const std::string& p : parts) out += p + ",";
  return out;
}

bool OnlyLiterals(const std::string& args) { return TextNames(args).empty(); }

// Whether the call's text is escaped where it is written: an argument calls TerminalText or ErrorText, or
// every name it writes is a variable that `body` (the function's text before the call) made from one
// ("const std::string safe = TerminalText(out, ...)", "line = \"[\" + TerminalText(label) + ...").
bool EscapedAtTheCall(const std::string& args, const std::string& body) {
  if (Calls(args, "TerminalText") || Calls(args, "ErrorText")) return true;
  const std::vector<std::string> names = TextNames(args);
  if (names.empty()) return false;
  for (const std::string& n : names) {
    const std::regex made(R"(\b)" + n + R"(\s*(=|\(|\{)[^;]*\b(TerminalText|ErrorText)\s*\()");
    if (!std::regex_search(body, made)) return false;
  }
  return true;
}

// Each write is in its list, and is what the list says, call by call.
void CheckWrites(const Scan& scan, bool terminal, const std::map<std::string, KnownWrite>& list,
                 const char* list_name) {
  std::set<std::string> seen;
  std::map<std::string, SourceFile> files;
  for (const WriteSite& w : scan.writes) {
    if (w.terminal != terminal) continue;
    seen.insert(w.key);
    const std::string at = w.key + " (line " + std::to_string(w.line) + ", " + w.call + ")";
    const auto known = list.find(w.key);
    if (known == list.end()) {
      ADD_FAILURE() << at
                    << (terminal ? ": writes to stdout or stderr" : ": writes to a stream not named stdout or stderr")
                    << " and is not listed in " << list_name << ": escape what it writes (TerminalText, "
                    << "kplab/safe_text.h) if it can reach a terminal, and list it, saying why it is safe";
      continue;
    }
    const std::string data = DataArgs(w.call, w.args);
    if (known->second.kind == WriteKind::kFileItOpened || OnlyLiterals(data)) continue;
    EXPECT_EQ(known->second.kind, WriteKind::kEscapes)
        << at << ": listed as writing literals only, but writes:" << w.args;
    const std::string file = w.key.substr(0, w.key.find(':'));
    if (!files.count(file)) files[file] = ReadSource(KPLAB_SOURCE_DIR, std::string(KPLAB_SOURCE_DIR) + "/" + file);
    const SourceFile& f = files[file];
    const SourceFunction* fn = f.FunctionAt(w.at);
    const std::string before = fn ? f.blank.substr(fn->begin, w.at - fn->begin) : std::string();
    EXPECT_TRUE(EscapedAtTheCall(data, before))
        << at << ": writes text that is not escaped at the call (an argument TerminalText(...) or "
        << "ErrorText(...), or a variable made from one before it):" << w.args;
  }
  // No stale entry (a scanner that found nothing would pass the loop above).
  for (const auto& [key, known] : list) {
    EXPECT_TRUE(seen.count(key)) << key << ": listed in " << list_name << " but found no such write";
  }
}

// The scanner itself, on a text written for it: it finds every form of write (a scanner that finds
// nothing would pass the rules below) and skips members and other namespaces' functions; and the call
// check refuses the two mutations a hostile review made pass the first version (a raw write in a
// function that escapes something else; a write after `return`).
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
      "void F(std::ostream& o, Out* w, const char* p) { o.write(p, 1); w->write(p); io_internal::write(p); }\n"
      "int G(const char* p) { if (p) return fputs(p, stderr); else return printf(\"%s\", p); }\n"
      "void H(const char* p) { warnx(\"%s\", p); PyErr_WarnEx(nullptr, p, 1); syscall(SYS_write, 2, p, 1); }\n"
      "void I(const std::string& out) { const std::string safe = TerminalText(out); fputs(out.c_str(), stdout); "
      "fputs(safe.c_str(), stdout); fprintf(stderr, \"%s\", TerminalText(out).c_str()); }\n"
      "void J() { posix_spawnp(nullptr, \"npm\", nullptr, nullptr, nullptr, nullptr); std::system(\"ls\"); "
      "std::fopen(\"/dev/tty\", \"w\"); }\n";
  f.blank = BlankCommentsAndLiterals(f.text);
  f.functions = FindFunctions(f.blank);
  Scan scan;
  ScanFile(f, scan);
  std::map<std::string, int> terminal, other;
  for (const WriteSite& w : scan.writes) ++(w.terminal ? terminal : other)[w.key];
  EXPECT_EQ(
      terminal,
      (std::map<std::string, int>{
          {"x.cc:A", 2}, {"x.cc:B", 4}, {"x.cc:C", 4}, {"x.cc:D", 3}, {"x.cc:G", 2}, {"x.cc:H", 3}, {"x.cc:I", 3}}));
  EXPECT_EQ(other, (std::map<std::string, int>{{"x.cc:E", 2}}));
  EXPECT_EQ(scan.stream_users, std::vector<std::string>{"x.cc:5"});
  EXPECT_EQ(scan.spawns, (std::vector<std::string>{"x.cc:J", "x.cc:J"}));
  EXPECT_EQ(scan.devices, std::vector<std::string>{"x.cc:10"});
  // Call by call: in I, the raw `out` is refused though the function escapes something; `safe` and
  // TerminalText(...) pass. A literal and a kConstant are literals, a variable is not.
  std::vector<bool> escaped;
  for (const WriteSite& w : scan.writes) {
    if (w.key == "x.cc:I") escaped.push_back(EscapedAtTheCall(DataArgs(w.call, w.args), f.blank.substr(0, w.at)));
    if (w.key == "x.cc:B") {
      EXPECT_EQ(OnlyLiterals(DataArgs(w.call, w.args)), w.call != "fprintf") << w.call << ":" << w.args;
    }
  }
  EXPECT_EQ(escaped, (std::vector<bool>{false, true, true}));
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
    EXPECT_NE(body.find("TerminalSafeStream safe_out(std::cout, stdout, false);"), std::string::npos) << body;
    EXPECT_NE(body.find("TerminalSafeStream safe_err(std::cerr, stderr, true);"), std::string::npos) << body;
  }
  EXPECT_TRUE(found) << "host/cli/cli.cc: no function Main";
}

TEST(TerminalOutputRule, EveryWriteToATerminalIsListedAndEscaped) {
  CheckWrites(ScanSources(), true, kTerminalWrites, "kTerminalWrites");
}

// The other writes go to a stream not named stdout or stderr: the escaping layer's own, and files kplab
// opened itself. Listed too, so that one that may reach a terminal is looked at.
TEST(TerminalOutputRule, EveryOtherWriteIsListed) { CheckWrites(ScanSources(), false, kOtherWrites, "kOtherWrites"); }

// A child program inherits stdout and stderr unless kplab gives it others: each is listed with where its
// output goes. And no source opens a terminal device by name.
TEST(TerminalOutputRule, ChildProgramsAndTerminalDevicesAreListed) {
  const Scan& scan = ScanSources();
  std::set<std::string> seen;
  for (const std::string& key : scan.spawns) {
    seen.insert(key);
    EXPECT_TRUE(kChildPrograms.count(key)) << key << ": starts a child program that is not listed in kChildPrograms "
                                           << "(read its output through a pipe and write it escaped)";
  }
  for (const auto& [key, why] : kChildPrograms) EXPECT_TRUE(seen.count(key)) << key << ": listed but starts nothing";
  EXPECT_EQ(scan.devices, std::vector<std::string>{}) << "a source names a terminal device";
}

}  // namespace
}  // namespace kplab::test
