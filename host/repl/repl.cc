// `kplab repl`. Follows lua.c's conventions: a line is first tried as `return <line>` (so `1+1` prints
// 2), an incomplete chunk asks for continuation lines (">> "), errors print with their traceback, and
// Ctrl-C during a computation makes the VM raise "interrupted!" (sandbox.h: RequestInterrupt), which
// brings the prompt back. Values print through pretty.cc.
#include "repl.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <histedit.h>
#include <lua.hpp>

#include "exit_code.h"
#include "evaluate.h"
#include "kplab/file_gate.h"
#include "kplab/safe_text.h"
#include "kplab/store.h"
#include "lua_script.h"
#include "lua_util.h"
#include "plugin.h"
#include "pretty.h"

// The stub file's bytes, generated from docs/lua/kp.lua by host/CMakeLists.txt.
extern "C" const unsigned char kplab_kp_stubs[];
extern "C" const unsigned long kplab_kp_stubs_size;

namespace kplab::host {

namespace fs = std::filesystem;

std::string_view KpStubs() { return {reinterpret_cast<const char*>(kplab_kp_stubs), kplab_kp_stubs_size}; }

// ---- stubs ------------------------------------------------------------------------------------------

std::map<std::string, StubEntry> ParseStubs(std::string_view text) {
  std::map<std::string, StubEntry> out;
  std::vector<std::string> block;  // the current run of --- lines
  std::optional<StubEntry> open_class;
  int lineno = 0;
  auto close_class = [&] {
    if (open_class) out[open_class->name] = std::move(*open_class);
    open_class.reset();
  };
  auto joined = [&] {
    std::string s;
    for (const auto& l : block) s += l + "\n";
    return s;
  };
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(pos, end - pos));
    pos = end + 1;
    ++lineno;
    if (line.starts_with("---@meta")) continue;
    if (line.starts_with("---")) {
      std::string body = line.substr(3);
      if (body.starts_with("@class ")) {
        close_class();
        std::string name = body.substr(7);
        name = name.substr(0, name.find_first_of(" :"));
        StubEntry e;
        e.name = name;
        e.is_class = true;
        e.signature = name;
        e.line = lineno;
        open_class = std::move(e);
        open_class->text = joined();
        block.clear();
        continue;
      }
      if (open_class && body.starts_with("@field ")) {
        open_class->text += body + "\n";
        continue;
      }
      block.push_back(body);
      continue;
    }
    if (line.starts_with("function ")) {
      close_class();
      const std::size_t paren = line.find('(');
      const std::size_t close = line.find(')');
      if (paren != std::string::npos && close != std::string::npos) {
        StubEntry e;
        e.name = line.substr(9, paren - 9);
        e.signature = line.substr(9, close + 1 - 9);
        e.text = joined();
        e.line = lineno;
        out[e.name] = std::move(e);
      }
      block.clear();
      continue;
    }
    // `kp.stats = {}` / `local Matrix = {}` end a class header; anything else ends a comment block.
    close_class();
    block.clear();
  }
  close_class();
  return out;
}

std::string FormatStub(const StubEntry& e) {
  std::string desc, params, returns, fields;
  std::istringstream in(e.text);
  for (std::string l; std::getline(in, l);) {
    if (l.starts_with("@param ")) {
      params += "  " + l.substr(7) + "\n";
    } else if (l.starts_with("@return ")) {
      returns += "  " + l.substr(8) + "\n";
    } else if (l.starts_with("@field ")) {
      fields += "  " + l.substr(7) + "\n";
    } else if (!l.starts_with("@")) {
      desc += l + "\n";
    }
  }
  std::string s = (e.is_class ? "class " : "") + e.signature + "\n" + desc;
  if (!params.empty()) s += "parameters:\n" + params;
  if (!returns.empty()) s += "returns:\n" + returns;
  if (!fields.empty()) s += "fields:\n" + fields;
  return s;
}

std::string DefaultHistoryPath() {
  if (const char* p = std::getenv("KPLAB_HISTORY"); p != nullptr && *p != '\0') return p;
  if (const char* x = std::getenv("XDG_STATE_HOME"); x != nullptr && *x != '\0') {
    return (fs::path(x) / "kplab" / "history").string();
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return (fs::path(h) / ".local" / "state" / "kplab" / "history").string();
  }
  return ".kplab_history";
}

namespace {

// ---- Ctrl-C -----------------------------------------------------------------------------------------

// Written by the handler, read by the prompt loop. A running chunk is stopped by RequestInterrupt
// (sandbox.h): the VM's count hook, which is always armed, and ChargeNative in long native calls see
// it, and the kill holds through pcall, xpcall handlers and coroutines like a spent budget.
volatile sig_atomic_t g_sigint = 0;

// Self-pipe: the handler writes a byte that the prompt's read loop polls for, so a Ctrl-C is never lost
// while libedit is busy between two reads.
int g_sigpipe[2] = {-1, -1};

void OnSigint(int /*sig*/) {
  g_sigint = 1;
  if (g_sigpipe[1] >= 0) {
    const int saved = errno;
    [[maybe_unused]] const ssize_t n = write(g_sigpipe[1], "i", 1);
    errno = saved;
  }
  RequestInterrupt();  // a lock-free atomic store
}

void DrainSigpipe() {
  char buf[64];
  while (g_sigpipe[0] >= 0 && read(g_sigpipe[0], buf, sizeof buf) > 0) {
  }
}

// libedit's character reader (EL_GETCFN): waits on the terminal and the self-pipe; a Ctrl-C makes
// el_gets give the line up (-1, EINTR). Bytes are decoded with the locale's multibyte rules, as
// libedit's own reader does.
int ReadChar(EditLine* /*el*/, wchar_t* out) {
  char buf[MB_LEN_MAX];
  std::size_t n = 0;
  while (true) {
    struct pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {g_sigpipe[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;  // the pipe says whether it was Ctrl-C
      return -1;
    }
    if ((fds[1].revents & POLLIN) != 0) {
      DrainSigpipe();
      errno = EINTR;
      return -1;
    }
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    const ssize_t k = read(STDIN_FILENO, buf + n, 1);
    if (k == 0) return 0;
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return -1;
    }
    ++n;
    std::mbstate_t state{};
    wchar_t wc = 0;
    const std::size_t used = std::mbrtowc(&wc, buf, n, &state);
    if (used == static_cast<std::size_t>(-2) && n < sizeof buf) continue;  // more bytes to come
    if (used == static_cast<std::size_t>(-1) || used == static_cast<std::size_t>(-2)) {
      wc = static_cast<unsigned char>(buf[0]);  // not valid in this locale: pass the byte on
    }
    *out = wc;
    return 1;
  }
}

// No SA_RESTART: a read() blocked in a native call returns EINTR rather than resuming.
void InstallSigint() {
  if (g_sigpipe[0] < 0 && pipe2(g_sigpipe, O_NONBLOCK | O_CLOEXEC) != 0) g_sigpipe[0] = g_sigpipe[1] = -1;
  struct sigaction sa {};
  sa.sa_handler = &OnSigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
}

// ---- the session ------------------------------------------------------------------------------------

constexpr const char* kReplKey = "kplab.repl";  // registry: lightuserdata of the Repl

constexpr const char* kCommands[] = {":load", ":metrics", ":runs", ":help", ":quit"};


constexpr const char* kReplHelp =
    "kplab repl: Lua with the kp API (help(kp) lists it; help(x) documents x).\n"
    "  an expression prints its value: 1+1, kp.stem(\"running\"), corpus:doc(1).preds\n"
    "  :load DATASET [PREDICTIONS] [--profile P]  load a corpus into a global named after the dataset\n"
    "                                           (and `corpus`)\n"
    "  :metrics                                 metric plugins with their doc's first line\n"
    "  :runs [DB]                               stored runs\n"
    "  :help                                    this text\n"
    "  :quit                                    leave (also Ctrl-D)\n"
    "  TAB completes names (kp.st<TAB>, globals, methods of a value, :commands, paths after :load);\n"
    "  Ctrl-C interrupts a running computation; history is kept in the file of DefaultHistoryPath.\n";


std::vector<std::string> SplitWords(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string CommonPrefix(const std::vector<std::string>& v) {
  if (v.empty()) return "";
  std::string p = v[0];
  for (const auto& s : v) {
    std::size_t i = 0;
    while (i < p.size() && i < s.size() && p[i] == s[i]) ++i;
    p.resize(i);
  }
  return p;
}

// The REPL's output is for a terminal: every text in it goes through TerminalText (kplab/safe_text.h),
// line breaks kept, so no string from data or a plugin can drive the terminal.
void Show(std::string_view text) {
  const std::string safe = TerminalText(text, Newlines::kKeep);
  std::fwrite(safe.data(), 1, safe.size(), stdout);
  std::fflush(stdout);
}

// print, flushed at once: the REPL's output interleaves with the prompt.
int ReplPrint(lua_State* L) {
  const int n = lua_gettop(L);
  std::string out;
  for (int i = 1; i <= n; ++i) {
    if (i > 1) out.push_back('\t');
    out += luaL_tolstring(L, i, nullptr);
    lua_pop(L, 1);
  }
  out.push_back('\n');
  Show(out);
  return 0;
}

class Repl {
 public:
  explicit Repl(const ReplOptions& o) : options_(o), vm_(o.limits), stubs_(ParseStubs(KpStubs())) {}
  ~Repl() {
    if (el_ != nullptr) el_end(el_);
    if (hist_ != nullptr) history_end(hist_);
  }

  int Run();

  // Called from Lua (help) and libedit (completion).
  int Help(lua_State* L);
  unsigned char Complete(EditLine* el);

 private:
  void SetUpVm();
  void SetUpEditor();
  std::optional<std::string> ReadLine(const char* prompt, bool* interrupted);
  void AddHistory(const std::string& line);
  // Compiles and runs one chunk; false when more lines are needed.
  bool Eval(const std::string& chunk, bool first_line);
  int CallInterruptible(int nargs, const std::string& label);
  void RunLoaded();
  bool Command(const std::string& line);  // false: quit
  void CmdLoad(const std::vector<std::string>& words);
  void CmdMetrics();
  void CmdRuns(const std::vector<std::string>& words);
  std::string FunctionName(int idx);
  std::string Members(const std::string& prefix);
  std::string PluginHelp(const std::string& name);
  std::vector<std::string> Candidates(const std::string& before, std::string* word);
  std::vector<std::string> KeysOf(const std::vector<std::string>& path, bool colon);
  std::vector<std::string> PluginNames();
  void PrintError(const std::string& text) { std::cerr << ErrorText(text) << "\n"; }

  ReplOptions options_;
  LuaVm vm_;
  std::map<std::string, StubEntry> stubs_;
  int env_ref_ = LUA_NOREF;
  int keys_ref_ = LUA_NOREF;     // helper: keys(value) -> sorted array of string keys
  int resolve_ref_ = LUA_NOREF;  // helper: resolve(env, {names}) -> value
  int findfn_ref_ = LUA_NOREF;   // helper: findfn(kp, f) -> "kp.a.b"
  std::vector<std::string> loaded_paths_;
  std::string history_path_;
  EditLine* el_ = nullptr;
  History* hist_ = nullptr;
  bool tty_ = false;
  bool warned_history_ = false;
  bool had_error_ = false;
};

Repl* FromRegistry(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, kReplKey);
  auto* r = static_cast<Repl*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  return r;
}

int LuaHelp(lua_State* L) { return FromRegistry(L)->Help(L); }

// Helpers run with the host's real globals (not the sandbox): they only read.
constexpr const char* kKeysLua = R"(
  local v = ...
  local out, seen = {}, {}
  local function add(t)
    for k in pairs(t) do
      if type(k) == "string" and not seen[k] and not k:find("^__") then
        seen[k] = true
        out[#out + 1] = type(t[k]) == "function" and k .. "(" or k
      end
    end
  end
  if type(v) == "table" then add(v) end
  table.sort(out)
  return out)";
constexpr const char* kResolveLua = R"(
  local v, path = ...
  for _, k in ipairs(path) do
    if type(v) ~= "table" and type(v) ~= "userdata" then return nil end
    local ok, r = pcall(function() return v[k] end)
    if not ok then return nil end
    v = r
  end
  return v)";
constexpr const char* kFindFnLua = R"(
  local kp, f = ...
  local function walk(t, prefix, depth)
    for k, v in pairs(t) do
      if type(k) == "string" then
        if rawequal(v, f) then return prefix .. k end
        if type(v) == "table" and depth < 3 then
          local r = walk(v, prefix .. k .. ".", depth + 1)
          if r then return r end
        end
      end
    end
  end
  return walk(kp, "kp.", 1))";

int LoadHelper(lua_State* L, const char* src, const char* name) {
  if (luaL_loadbufferx(L, src, std::strlen(src), name, "t") != LUA_OK) {
    throw std::runtime_error(std::string("repl helper: ") + lua_tostring(L, -1));
  }
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

void Repl::SetUpVm() {
  InstallAll(vm_);
  lua_State* L = vm_.state();
  lua_pushlightuserdata(L, this);
  lua_setfield(L, LUA_REGISTRYINDEX, kReplKey);
  PushReplEnv(vm_, options_.grants);  // [env]
  env_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  keys_ref_ = LoadHelper(L, kKeysLua, "=keys");
  resolve_ref_ = LoadHelper(L, kResolveLua, "=resolve");
  findfn_ref_ = LoadHelper(L, kFindFnLua, "=findfn");
}

}  // namespace

void PushReplEnv(LuaVm& vm, const FileGrants& grants) {
  lua_State* L = vm.state();
  InstallScriptApi(vm, "./repl", grants);  // kp.include resolves against the working directory
  vm.PushSandboxEnv("repl");               // [env]
  SetScriptEnv(L);
  // Exploration wants globals (x = corpus:doc(1)): plain Lua semantics instead of the plugins' strict
  // globals. Everything else (allow-list, read-only kp) stays as plugins see it.
  lua_newtable(L);
  lua_setmetatable(L, -2);
  lua_pushliteral(L, "print");
  lua_pushcfunction(L, &ReplPrint);
  lua_rawset(L, -3);
  lua_pushliteral(L, "help");
  lua_pushcfunction(L, &LuaHelp);
  lua_rawset(L, -3);
}

namespace {

unsigned char CompleteThunk(EditLine* el, int /*ch*/) {
  void* self = nullptr;
  el_get(el, EL_CLIENTDATA, &self);
  return static_cast<Repl*>(self)->Complete(el);
}

// libedit asks for the prompt through a callback; it lives in this thread-local (one editor).
thread_local std::string t_prompt;
char* CurrentPrompt(EditLine* /*el*/) { return t_prompt.data(); }

void Repl::SetUpEditor() {
  tty_ = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
  history_path_ = options_.history_path.empty() ? DefaultHistoryPath() : options_.history_path;
  if (!tty_) return;
  hist_ = history_init();
  HistEvent ev;
  history(hist_, &ev, H_SETSIZE, 1000);
  history(hist_, &ev, H_SETUNIQUE, 1);
  std::error_code ec;
  {
    UserFileScope user;  // the history file is the user's ($KPLAB_HISTORY, ~/.local/state), not the session's
    if (fs::exists(history_path_, ec) && GateFile(history_path_, FileAccess::kRead).ok()) {
      history(hist_, &ev, H_LOAD, history_path_.c_str());
    }
  }
  // Multibyte input (UTF-8 phrases) needs the user's character type; nothing else of the locale.
  std::setlocale(LC_CTYPE, "");
  el_ = el_init("kplab", stdin, stdout, stderr);
  el_set(el_, EL_EDITOR, "emacs");
  el_set(el_, EL_CLIENTDATA, this);
  el_set(el_, EL_PROMPT, &CurrentPrompt);
  el_set(el_, EL_HIST, history, hist_);
  if (g_sigpipe[0] >= 0) el_set(el_, EL_GETCFN, &ReadChar);
  el_set(el_, EL_ADDFN, "kplab-complete", "complete kp names", &CompleteThunk);
  el_set(el_, EL_BIND, "^I", "kplab-complete", nullptr);
  el_source(el_, nullptr);  // ~/.editrc, as every libedit program
}

std::optional<std::string> Repl::ReadLine(const char* prompt, bool* interrupted) {
  *interrupted = false;
  g_sigint = 0;
  if (!tty_) {
    std::string line;
    if (!std::getline(std::cin, line)) return std::nullopt;
    return line;
  }
  t_prompt = prompt;
  DrainSigpipe();  // a Ctrl-C meant for the last computation
  int count = 0;
  const char* line = el_gets(el_, &count);
  if (line == nullptr) {
    if (g_sigint != 0) {  // Ctrl-C at the prompt: drop the line, as shells do
      *interrupted = true;
      el_reset(el_);  // terminal modes and line buffer back to a known state
      std::fputs("^C\n", stdout);
      std::fflush(stdout);
      return std::string();
    }
    return std::nullopt;
  }
  std::string s(line, static_cast<std::size_t>(count));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

void Repl::AddHistory(const std::string& line) {
  if (hist_ == nullptr || line.find_first_not_of(" \t") == std::string::npos) return;
  HistEvent ev;
  history(hist_, &ev, H_ENTER, line.c_str());
  // Saved after every line, so a killed session keeps what it had.
  UserFileScope user;  // the user's file, as when it was loaded
  std::error_code ec;
  fs::create_directories(fs::path(history_path_).parent_path(), ec);
  if ((!GateFile(history_path_, FileAccess::kWrite).ok() || history(hist_, &ev, H_SAVE, history_path_.c_str()) < 0) &&
      !warned_history_) {
    warned_history_ = true;
    PrintError(fmt::format("kplab: {}: cannot save history", history_path_));
  }
}

// Runs the function on top of the stack in the REPL's environment with Ctrl-C armed; leaves its results
// on the stack and returns their count, or prints the error and returns -1.
int Repl::CallInterruptible(int nargs, const std::string& label) {
  lua_State* L = vm_.state();
  const int base = lua_gettop(L) - nargs;  // the function
  ClearInterrupt();  // a Ctrl-C that came after the last run is stale
  g_sigint = 0;
  std::optional<ScriptError> err = vm_.Call(nargs, LUA_MULTRET, label);
  ClearInterrupt();
  if (err) {
    had_error_ = true;
    // A command's error is about its input (a bad file): the traceback would only show the binding.
    PrintError(label.starts_with(":") ? err->message : err->Format());
    return -1;
  }
  return lua_gettop(L) - base + 1;
}

void Repl::RunLoaded() {
  lua_State* L = vm_.state();
  lua_rawgeti(L, LUA_REGISTRYINDEX, env_ref_);
  if (lua_setupvalue(L, -2, 1) == nullptr) lua_pop(L, 1);  // _ENV, the chunk's only upvalue
  const int n = CallInterruptible(0, "stdin");
  if (n <= 0) return;
  const int first = lua_gettop(L) - n + 1;
  bool scalars = true;
  for (int i = first; i <= lua_gettop(L); ++i) {
    scalars = scalars && lua_type(L, i) != LUA_TTABLE && lua_type(L, i) != LUA_TUSERDATA;
  }
  std::string out;
  for (int i = first; i <= lua_gettop(L); ++i) {
    if (i > first) out += scalars ? "\t" : "\n";
    out += PrettyValue(vm_, i, "stdin");  // metered: a value's __tostring is the script's code
  }
  ClearInterrupt();  // a Ctrl-C that stopped the printing is spent
  lua_settop(L, first - 1);
  out += "\n";
  Show(out);
}

bool Repl::Eval(const std::string& chunk, bool first_line) {
  lua_State* L = vm_.state();
  if (first_line) {  // lua.c: an expression prints its value
    const std::string ret = "return " + chunk + ";";
    if (luaL_loadbufferx(L, ret.data(), ret.size(), "=stdin", "t") == LUA_OK) {
      RunLoaded();
      return true;
    }
    lua_pop(L, 1);
  }
  const int status = luaL_loadbufferx(L, chunk.data(), chunk.size(), "=stdin", "t");
  if (status == LUA_OK) {
    RunLoaded();
    return true;
  }
  std::size_t n = 0;
  const char* msg = lua_tolstring(L, -1, &n);
  const std::string text = msg != nullptr ? std::string(msg, n) : "(error object is not a string)";
  lua_pop(L, 1);
  // lua.c: incomplete: a syntax error at the end of the input.
  if (status == LUA_ERRSYNTAX && text.ends_with("<eof>")) return false;
  had_error_ = true;
  PrintError(text);
  return true;
}

bool Repl::Command(const std::string& line) {
  const std::vector<std::string> words = SplitWords(line);
  const std::string& cmd = words[0];
  if (cmd == ":quit" || cmd == ":q" || cmd == ":exit") return false;
  if (cmd == ":load") {
    CmdLoad(words);
  } else if (cmd == ":metrics") {
    CmdMetrics();
  } else if (cmd == ":runs") {
    CmdRuns(words);
  } else if (cmd == ":help") {
    std::fputs(kReplHelp, stdout);
  } else {
    had_error_ = true;
    PrintError(fmt::format("unknown command '{}' (expected one of: :load, :metrics, :runs, :help, :quit)", cmd));
  }
  std::fflush(stdout);
  return true;
}

// A global name for a dataset path: its last component (file stem), made an identifier.
std::string DatasetGlobal(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::string name = fs::is_directory(p) ? p.filename().string() : p.stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = "_" + name;
  if (!IsIdentifier(name)) name += "_";
  return name;
}

void Repl::CmdLoad(const std::vector<std::string>& words) {
  std::vector<std::string> pos;
  std::string profile, name;
  for (std::size_t i = 1; i < words.size(); ++i) {
    if ((words[i] == "--profile" || words[i] == "--name") && i + 1 < words.size()) {
      (words[i] == "--profile" ? profile : name) = words[i + 1];
      ++i;
    } else {
      pos.push_back(words[i]);
    }
  }
  if (pos.empty() || pos.size() > 2 || (!name.empty() && !IsIdentifier(name))) {
    had_error_ = true;
    PrintError("usage: :load DATASET [PREDICTIONS] [--profile P] [--name GLOBAL]");
    return;
  }
  if (name.empty()) name = DatasetGlobal(pos[0]);
  lua_State* L = vm_.state();
  GrantNamedPaths(vm_, pos);  // the paths typed after :load are the user's to read
  lua_rawgeti(L, LUA_REGISTRYINDEX, env_ref_);  // [env]
  // kplab's own kp.load, whatever the session did to its globals (a `kp` of its own, a metatable on
  // _ENV): the host reads no script value outside a metered call.
  lua_pushcfunction(L, KpLoadFunction());  // [env, load]
  lua_createtable(L, 0, 3);  // [env, load, opts]
  lua_pushstring(L, pos[0].c_str());
  lua_setfield(L, -2, "dataset");
  if (pos.size() > 1) {
    lua_pushstring(L, pos[1].c_str());
    lua_setfield(L, -2, "predictions");
  }
  if (!profile.empty()) {
    lua_pushstring(L, profile.c_str());
    lua_setfield(L, -2, "profile");
  }
  const int n = CallInterruptible(1, ":load");
  if (n < 0) {
    lua_pop(L, 1);  // env
    return;
  }
  lua_settop(L, lua_gettop(L) - n + 1);  // [env, corpus]
  for (const std::string& global : {name, std::string("corpus")}) {
    lua_pushlstring(L, global.data(), global.size());
    lua_pushvalue(L, -2);
    lua_rawset(L, -4);
  }
  std::string out = name + " = " + PrettyValue(vm_, -1, ":load");
  if (name != "corpus") out += "   (also `corpus`)";
  lua_pop(L, 2);
  Show(out + "\n");
  if (std::find(loaded_paths_.begin(), loaded_paths_.end(), pos[0]) == loaded_paths_.end()) {
    loaded_paths_.push_back(pos[0]);
  }
}

std::string FirstLine(const std::string& s) {
  const std::size_t start = s.find_first_not_of(" \n\t");
  if (start == std::string::npos) return "";
  return s.substr(start, s.find('\n', start) - start);
}

// A stub's first sentence, cut to fit beside a 40-column signature in 100 columns.
std::string Summary(const std::string& text) {
  std::string s;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l) && !l.starts_with("@");) s += (s.empty() ? "" : " ") + l;
  if (const std::size_t dot = s.find(". "); dot != std::string::npos) s.resize(dot + 1);
  if (s.size() > 56) s = s.substr(0, 53) + "...";
  return s;
}

void Repl::CmdMetrics() {
  auto files = ListPlugins(ShippedPluginDir(), options_.plugin_dirs);
  if (!files) {
    had_error_ = true;
    PrintError(files.error().message);
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const PluginFile& listed : *files) {
    auto read = ReadPluginFile(listed.path, listed.display_name, listed.configured);  // one unreadable file is one row
    if (!read) {
      rows.push_back({listed.name, "?", listed.display_name, "error: " + read.error().message});
      continue;
    }
    const PluginFile& f = *read;
    auto p = LoadMetricPlugin(vm_, f);
    if (!p) {
      rows.push_back({f.name, "?", f.display_name, "error: " + p.error().message});
      continue;
    }
    rows.push_back({p->name, p->version, f.display_name, FirstLine(p->doc)});
    ReleaseMetricPlugin(vm_, *p);
  }
  Show(FormatTable({"name", "version", "file", "doc"}, rows));
}

void Repl::CmdRuns(const std::vector<std::string>& words) {
  std::string db = words.size() > 1 ? words[1] : options_.db;
  if (db.empty()) db = RunStore::DefaultPath();
  std::error_code ec;
  if (db != ":memory:" && !fs::exists(db, ec)) {
    had_error_ = true;
    PrintError(fmt::format("{}: no such run store (expected a kplab database; `kplab eval` creates one)", db));
    return;
  }
  // Store errors name the file themselves.
  auto store = RunStore::Open(db, RunStore::Mode::kRead);
  if (!store) {
    had_error_ = true;
    PrintError(store.error().message);
    return;
  }
  auto runs = store->ListRuns();
  if (!runs) {
    had_error_ = true;
    PrintError(runs.error().message);
    return;
  }
  if (runs->empty()) {
    Show("(no runs in " + db + ")\n");
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const RunSummary& r : *runs) {
    rows.push_back({std::to_string(r.id), r.created_at, r.status, r.dataset_name, r.system, r.profile,
                    std::to_string(r.n_docs)});
  }
  Show(FormatTable({"id", "created", "status", "dataset", "system", "profile", "docs"}, rows));
}

// ---- help -------------------------------------------------------------------------------------------

// "kp.stem" for a kp function, "KeyphraseList:match" for a userdata method, "" when unknown.
std::string Repl::FunctionName(int idx) {
  lua_State* L = vm_.state();
  idx = lua_absindex(L, idx);
  std::string name;
  lua_rawgeti(L, LUA_REGISTRYINDEX, findfn_ref_);
  lua_rawgeti(L, LUA_REGISTRYINDEX, env_ref_);
  RawField(L, -1, "kp");
  lua_remove(L, -2);
  lua_pushvalue(L, idx);
  // Walks the script's kp (which it may have replaced): through the meter, nested in help()'s call.
  if (!vm_.Call(2, 1, "help")) {
    if (lua_type(L, -1) == LUA_TSTRING) name = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  if (!name.empty()) return name;
  // Methods live in the "kplab.TYPE.methods" tables of the registry (lua_util.h: DefineMetatable).
  lua_pushnil(L);
  while (name.empty() && lua_next(L, LUA_REGISTRYINDEX) != 0) {  // [k, methods]
    if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TTABLE) {
      constexpr std::string_view kPrefix = "kplab.", kSuffix = ".methods";
      const std::string_view key = lua_tostring(L, -2);
      const std::string type = key.starts_with(kPrefix) && key.ends_with(kSuffix)
                                   ? std::string(key.substr(kPrefix.size(), key.size() - kPrefix.size() - kSuffix.size()))
                                   : std::string();
      if (!type.empty() && type.find('.') == std::string::npos) {
        lua_pushnil(L);
        while (lua_next(L, -2) != 0) {  // [k, methods, mk, mv]
          if (lua_type(L, -2) == LUA_TSTRING && lua_rawequal(L, -1, idx)) {
            name = type + ":" + lua_tostring(L, -2);
          }
          lua_pop(L, 1);
        }
      }
    }
    lua_pop(L, 1);
  }
  if (!name.empty()) lua_pop(L, 1);  // the registry key left by the early exit
  return name;
}

// The entries documented under `prefix` ("kp.", "kp.stats.", "Matrix:"), one line each.
std::string Repl::Members(const std::string& prefix) {
  std::string out;
  for (const auto& [name, e] : stubs_) {
    if (!name.starts_with(prefix) || e.is_class) continue;
    const std::string rest = name.substr(prefix.size());
    if (rest.find_first_of(".:") != std::string::npos) continue;
    out += fmt::format("  {:<40} {}\n", e.signature, Summary(e.text));
  }
  for (const auto& [name, e] : stubs_) {  // sub-modules
    if (e.is_class && name.starts_with(prefix) && name.size() > prefix.size() &&
        name.find('.', prefix.size()) == std::string::npos) {
      out += fmt::format("  {:<40} {}\n", name + ".*", Summary(e.text));
    }
  }
  return out;
}

std::string Repl::PluginHelp(const std::string& name) {
  auto files = ListPlugins(ShippedPluginDir(), options_.plugin_dirs);
  if (!files) return files.error().message;
  for (const PluginFile& listed : *files) {
    if (listed.name != name) continue;
    auto read = ReadPluginFile(listed.path, listed.display_name, listed.configured);
    if (!read) return read.error().message;
    const PluginFile& f = *read;
    auto p = LoadMetricPlugin(vm_, f);
    if (!p) return p.error().message;
    std::string s = fmt::format("metric plugin {} {} ({})\n", p->name, p->version, f.display_name);
    s += p->doc.empty() ? "(no doc string)\n" : p->doc + (p->doc.ends_with("\n") ? "" : "\n");
    if (!p->params.empty()) {
      s += "params:\n";
      for (const auto& [k, v] : p->params) {
        std::string val = std::visit(
            [](const auto& x) -> std::string {
              using T = std::decay_t<decltype(x)>;
              if constexpr (std::is_same_v<T, double>) return fmt::format("{}", x);
              else if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
              else return "\"" + x + "\"";
            },
            v);
        auto spec = p->param_specs.find(k);
        if (spec == p->param_specs.end()) {
          s += fmt::format("  {} = {}\n", k, val);
        } else {  // API 2: the declared type, range and doc
          s += fmt::format("  {} = {}  ({}){}\n", k, val, ParamExpectation(spec->second),
                           spec->second.doc.empty() ? "" : "  " + spec->second.doc);
        }
      }
    }
    if (!p->needs.empty() || p->needs_is_function) {
      std::string needs;
      for (const auto& n : p->needs) needs += (needs.empty() ? "" : ", ") + n;
      s += "needs: " + (p->needs_is_function ? std::string("(decided per run)") : needs) + "\n";
    }
    ReleaseMetricPlugin(vm_, *p);
    return s;
  }
  return "";
}

int Repl::Help(lua_State* L) {
  std::string out;
  if (lua_gettop(L) == 0) {
    out = kReplHelp;
  } else if (lua_type(L, 1) == LUA_TFUNCTION) {
    const std::string name = FunctionName(1);
    auto it = stubs_.find(name);
    if (it != stubs_.end()) {
      out = FormatStub(it->second);
    } else {
      out = name.empty() ? "no documentation for this function (not part of the kp API)\n"
                         : "no documentation for " + name + "\n";
    }
  } else if (lua_type(L, 1) == LUA_TSTRING) {
    const std::string s = lua_tostring(L, 1);
    if (auto it = stubs_.find(s); it != stubs_.end()) {
      out = FormatStub(it->second);
      if (it->second.is_class) out += "members:\n" + Members(s + (s.starts_with("kp") ? "." : ":"));
    } else if (std::string p = PluginHelp(s); !p.empty()) {
      out = p;
    } else {
      out = fmt::format(
          "no help for '{}' (expected a kp name such as \"kp.stem\", a type such as \"Matrix\" or a "
          "metric plugin name; :metrics lists them)\n", s);
    }
  } else if (lua_type(L, 1) == LUA_TUSERDATA) {
    std::string cls;
    if (lua_getmetatable(L, 1)) {
      RawField(L, -1, "__name");
      if (lua_type(L, -1) == LUA_TSTRING) cls = lua_tostring(L, -1);
      lua_pop(L, 2);
    }
    if (cls.starts_with("kplab.")) cls = cls.substr(6);
    auto it = stubs_.find(cls);
    out = it != stubs_.end() ? FormatStub(it->second) + "methods:\n" + Members(cls + ":")
                             : "no documentation for this value\n";
  } else if (lua_type(L, 1) == LUA_TTABLE) {
    // kp itself, a kp module, or a metric declaration (what kp.metric returns).
    lua_rawgeti(L, LUA_REGISTRYINDEX, env_ref_);
    RawField(L, -1, "kp");
    const bool is_kp = lua_rawequal(L, -1, 1);
    lua_pop(L, 2);
    std::string module = is_kp ? "kp" : FunctionName(1);
    if (auto it = stubs_.find(module); !module.empty() && it != stubs_.end()) {
      out = FormatStub(it->second) + "members:\n" + Members(module + ".");
    } else {
      RawField(L, 1, "name");
      RawField(L, 1, "doc");
      if (lua_type(L, -2) == LUA_TSTRING) {
        const std::string name = lua_tostring(L, -2);
        out = fmt::format("metric {}\n{}\n", name, lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1)
                                                                                   : "(no doc string)");
      } else {
        out = "no documentation for this table\n";
      }
      lua_pop(L, 2);
    }
  } else {
    out = fmt::format("no documentation for a {} value\n", luaL_typename(L, 1));
  }
  Show(out);
  return 0;
}

// ---- completion -------------------------------------------------------------------------------------

std::vector<std::string> Repl::PluginNames() {
  std::vector<std::string> out;
  if (auto files = ListPlugins(ShippedPluginDir(), options_.plugin_dirs)) {
    for (const auto& f : *files) out.push_back(f.name);
  }
  return out;
}

// Keys of the value at `path` (names from the environment); functions get a "(" appended. Userdata:
// the methods (":") or methods and fields (".") its stubs document.
std::vector<std::string> Repl::KeysOf(const std::vector<std::string>& path, bool colon) {
  lua_State* L = vm_.state();
  const int top = lua_gettop(L);
  std::vector<std::string> out;
  lua_rawgeti(L, LUA_REGISTRYINDEX, resolve_ref_);
  lua_rawgeti(L, LUA_REGISTRYINDEX, env_ref_);
  lua_createtable(L, static_cast<int>(path.size()), 0);
  for (std::size_t i = 0; i < path.size(); ++i) {
    lua_pushstring(L, path[i].c_str());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  // The helpers index and iterate the session's values (whose __index or __pairs may loop): through the
  // meter, so the limits and Ctrl-C stop them and completion offers nothing.
  ClearInterrupt();  // a Ctrl-C at the prompt is spent
  if (vm_.Call(2, 1, "completion")) {
    ClearInterrupt();
    lua_settop(L, top);
    return out;
  }
  if (lua_type(L, -1) == LUA_TUSERDATA) {
    std::string cls;
    if (lua_getmetatable(L, -1)) {
      RawField(L, -1, "__name");
      if (lua_type(L, -1) == LUA_TSTRING) cls = lua_tostring(L, -1);
      lua_pop(L, 2);
    }
    if (cls.starts_with("kplab.")) cls = cls.substr(6);
    for (const auto& [name, e] : stubs_) {
      if (name.starts_with(cls + ":")) out.push_back(name.substr(cls.size() + 1) + "(");
    }
    if (auto it = stubs_.find(cls); it != stubs_.end() && !colon) {
      std::istringstream in(it->second.text);
      for (std::string l; std::getline(in, l);) {
        if (l.starts_with("@field ")) out.push_back(SplitWords(l)[1]);
      }
    }
  } else if (lua_type(L, -1) == LUA_TTABLE && !colon) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, keys_ref_);
    lua_insert(L, -2);
    if (!vm_.Call(1, 1, "completion") && lua_type(L, -1) == LUA_TTABLE) {
      const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, -1));
      for (lua_Integer i = 1; i <= n; ++i) {
        lua_rawgeti(L, -1, i);
        out.push_back(lua_tostring(L, -1));
        lua_pop(L, 1);
      }
    }
  }
  ClearInterrupt();
  lua_settop(L, top);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> PathCompletions(const std::string& word) {
  std::vector<std::string> out;
  const std::size_t slash = word.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : word.substr(0, slash + 1);
  const std::string stem = slash == std::string::npos ? word : word.substr(slash + 1);
  std::error_code ec;
  // file-gate: names for the person at the terminal, typed there; no Lua code sees them
  for (fs::directory_iterator it(dir.empty() ? "." : dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(stem) || (name[0] == '.' && !stem.starts_with("."))) continue;
    out.push_back(dir + name + (it->is_directory(ec) ? "/" : ""));
  }
  return out;
}

std::vector<std::string> Repl::Candidates(const std::string& before, std::string* word) {
  std::vector<std::string> pool;
  auto filter = [&](std::vector<std::string> v) {
    std::vector<std::string> out;
    for (auto& s : v) {
      if (s.starts_with(*word)) out.push_back(std::move(s));
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  };
  if (!before.empty() && before[0] == ':') {
    const std::size_t space = before.rfind(' ');
    if (space == std::string::npos) {
      *word = before;
      return filter({std::begin(kCommands), std::end(kCommands)});
    }
    if (!before.starts_with(":load ")) return {};
    *word = before.substr(space + 1);
    pool = PathCompletions(*word);
    pool.insert(pool.end(), loaded_paths_.begin(), loaded_paths_.end());
    // Datasets of the stored runs (where they were loaded from).
    const std::string db = options_.db.empty() ? RunStore::DefaultPath() : options_.db;
    std::error_code ec;
    if (fs::exists(db, ec)) {
      if (auto store = RunStore::Open(db, RunStore::Mode::kRead)) {
        if (auto runs = store->ListRuns()) {
          std::set<std::string> seen;
          for (const auto& r : *runs) {
            if (!seen.insert(r.dataset_name).second) continue;
            if (auto run = store->GetRun(r.id)) pool.push_back(run->dataset_path);
          }
        }
      }
    }
    return filter(pool);
  }
  // Inside a string literal: plugin names, documented names, loaded datasets.
  char quote = 0;
  std::size_t open = 0;
  for (std::size_t i = 0; i < before.size(); ++i) {
    const char c = before[i];
    if (quote != 0) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
      open = i;
    }
  }
  if (quote != 0) {
    *word = before.substr(open + 1);
    pool = PluginNames();
    for (const auto& [name, e] : stubs_) pool.push_back(name);
    pool.insert(pool.end(), loaded_paths_.begin(), loaded_paths_.end());
    return filter(pool);
  }
  std::size_t start = before.size();
  while (start > 0) {
    const char c = before[start - 1];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != ':') break;
    --start;
  }
  *word = before.substr(start);
  const std::size_t sep = word->find_last_of(".:");
  if (sep == std::string::npos) {
    pool = KeysOf({}, false);  // the environment's globals
    pool.insert(pool.end(), std::begin(kLuaKeywords), std::end(kLuaKeywords));
    return filter(pool);
  }
  std::vector<std::string> path;
  std::string base = word->substr(0, sep);
  std::stringstream ss(base);
  for (std::string part; std::getline(ss, part, '.');) {
    if (!IsIdentifier(part)) return {};
    path.push_back(part);
  }
  if (base.find(':') != std::string::npos || path.empty()) return {};
  for (const std::string& k : KeysOf(path, (*word)[sep] == ':')) pool.push_back(word->substr(0, sep + 1) + k);
  return filter(pool);
}

unsigned char Repl::Complete(EditLine* el) {
  const LineInfo* li = el_line(el);
  const std::string before(li->buffer, static_cast<std::size_t>(li->cursor - li->buffer));
  std::string word;
  std::vector<std::string> cands = Candidates(before, &word);
  if (cands.empty()) return CC_ERROR;
  const std::string common = CommonPrefix(cands);
  if (common.size() > word.size()) {
    el_insertstr(el, common.substr(word.size()).c_str());
    return CC_REFRESH;
  }
  if (cands.size() == 1) return CC_REFRESH;
  // Nothing to add: list the candidates (the part after the last separator) under the line.
  const std::size_t cut = word.find_last_of(".:/") == std::string::npos ? 0 : word.find_last_of(".:/") + 1;
  std::size_t width = 0;
  for (const auto& c : cands) width = std::max(width, c.size() - cut);
  const std::size_t per_row = std::max<std::size_t>(1, 78 / (width + 2));
  std::string out = "\n";
  for (std::size_t i = 0; i < cands.size(); ++i) {
    out += fmt::format("{:<{}}", cands[i].substr(cut), width + 2);
    if ((i + 1) % per_row == 0 || i + 1 == cands.size()) out += "\n";
  }
  Show(out);
  return CC_REDISPLAY;
}

int Repl::Run() {
  SetUpVm();
  InstallSigint();
  SetUpEditor();
  // The whole session opens files under the REPL's grants (what the typed code and every kp function
  // reach), whether through a metered call or the printer.
  FileScope session(vm_.file_grants());
  if (tty_) {
    std::cout << "kplab repl (Lua 5.4 with the kp API). help() for help, :quit to leave.\n" << std::flush;
  }
  std::string buffer;
  bool more = false;
  while (true) {
    bool interrupted = false;
    std::optional<std::string> line = ReadLine(more ? ">> " : "kp> ", &interrupted);
    if (!line) break;
    if (interrupted) {
      buffer.clear();
      more = false;
      continue;
    }
    AddHistory(*line);
    if (!more) {
      const std::size_t first = line->find_first_not_of(" \t");
      if (first == std::string::npos) continue;
      if ((*line)[first] == ':') {
        if (!Command(line->substr(first))) break;
        continue;
      }
      buffer = *line;
    } else {
      buffer += "\n" + *line;
    }
    more = !Eval(buffer, !more);
    if (!more) buffer.clear();
  }
  if (tty_) std::cout << "\n" << std::flush;
  if (more && !tty_) {
    PrintError("stdin: unexpected end of input (an unfinished chunk)");
    had_error_ = true;
  }
  // Piped input behaves like a script: any error makes the exit status 3 (a script error).
  return !tty_ && had_error_ ? kExitScript : kExitOk;
}

}  // namespace

int RunRepl(const ReplOptions& options) {
  Repl repl(options);
  return repl.Run();
}

}  // namespace kplab::host
