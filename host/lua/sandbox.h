// Lua sandbox for plugins and scripts. One LuaVm = one lua_State with a counting allocator (memory cap)
// and an instruction budget. Each plugin gets its own _ENV built from an allow-list; the kp API tables
// it sees are read-only proxies; reading or writing an unknown global is an error.
//
// Threads: a LuaVm (and everything pushed into it) is used by one thread at a time; different VMs are
// independent (a run's lanes each have one); a plugin's run budget is shared by its lanes and thread-safe;
// RequestInterrupt may be called from any thread or a signal handler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/file_gate.h"
#include "kplab/result.h"

struct lua_State;

namespace kplab::host {

// What a script may spend (docs/plugins.md, Limits). 0 means unlimited for every field. Native work
// done for a script (kp.stats resampling, WER, tokenizers, pattern matching) is charged to the same
// instruction budgets in "steps" before it is done (ChargeNative), and native buffers are checked
// against the memory cap before they are allocated (ReserveNative).
struct Limits {
  std::size_t memory_bytes = 256u << 20;  // per VM
  // Per call into a plugin (score/aggregate/top level) or script. 1e8 instructions stop `while true
  // do end` in ~0.3 s of CPU (docs/plugins.md); a document's score takes ~1e3-1e5.
  std::uint64_t instructions = 100'000'000;
  double seconds = 10;  // wall clock per call: bounds what instructions cannot see (big copies)
  // Per plugin and run: every call (top level, each document, aggregate) of one plugin, all lanes.
  std::uint64_t run_instructions = 20'000'000'000;
  double run_seconds = 600;
};

// The per-run account of one plugin, shared by the VMs (lanes) that run it. Thread-safe.
struct RunBudget;

void ChargeNative(lua_State* L, double steps);
void ReserveNative(lua_State* L, double bytes, const char* what);
void CheckNative(lua_State* L, double steps_done);
void AfterNative(lua_State* L);  // lua_util.h: Safe<> calls it when a binding returns

// A Lua error raised where no protected call catches it (a metamethod that host code ran between two
// calls): the VM's panic handler throws it with the error's own text ("plugins/x.lua:5: boom"), so that
// the failure reports what the plugin said, not how the host got there. The VM is not usable after it.
struct LuaPanicError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A Lua error captured with its location, kept so a failed run can store it.
struct ScriptError {
  std::string plugin;     // plugin name or script path
  std::string file;       // "plugins/x.lua"
  int line = 0;
  std::string message;    // "plugins/x.lua:12: attempt to ..."
  std::string traceback;  // Lua traceback
  std::string Format() const;  // message + "\n" + traceback
};

// Function that installs native modules into the `kp` table at the top of the stack
// ([kp] on entry and exit). Bindings (lua_*.cc) register through this.
using ModuleInstaller = std::function<void(lua_State* L)>;

// Native memory that a userdata keeps alive (a Matrix's cells), counted in its VM's memory cap for as
// long as the token lives (the userdata holds it; its __gc releases it). Move-only.
class HeldMemory {
 public:
  HeldMemory() = default;
  HeldMemory(HeldMemory&& o) noexcept : used_(o.used_), bytes_(o.bytes_) { o.used_ = nullptr; }
  HeldMemory& operator=(HeldMemory&&) = delete;
  ~HeldMemory() {
    if (used_ != nullptr) *used_ -= bytes_;
  }

 private:
  friend HeldMemory HoldNative(lua_State* L, std::size_t bytes, const char* what);
  std::size_t* used_ = nullptr;
  std::size_t bytes_ = 0;
};

// Counts `bytes` of native memory held by a new userdata in the VM's memory cap. During a call, when
// they do not fit even after a full collection, raises "memory limit of N MiB exceeded (WHAT needs X
// MiB)". Outside a LuaVm (the Lua module) nothing is counted. [-0, +0, v]
HeldMemory HoldNative(lua_State* L, std::size_t bytes, const char* what);

class LuaVm {
 public:
  explicit LuaVm(const Limits& limits = {});
  ~LuaVm();
  LuaVm(const LuaVm&) = delete;
  LuaVm& operator=(const LuaVm&) = delete;

  lua_State* state() const { return L_; }
  const Limits& limits() const { return limits_; }

  // Adds native modules to the shared `kp` API table (before any environment is created).
  void Install(const ModuleInstaller& installer);

  // Creates a fresh sandboxed environment table and pushes it: allow-listed base functions and
  // libraries (string, table, math, utf8, coroutine — read-only proxies), `kp` (read-only proxy), and
  // strict globals (reading an undefined global raises "undefined global 'x'", creating one
  // "assignment to undeclared global 'x'"). `kp.log` in this env prints "[chunk_label] ...".
  // setmetatable refuses __gc (finalizers run without hooks); xpcall skips the script's handler once
  // the budget is spent. Lua memory errors here are unprotected: the panic handler throws
  // std::runtime_error. [-0, +1]
  void PushSandboxEnv(const std::string& chunk_label);

  // Loads `source` with chunkname "@" + display_name in the environment on top of the stack (popped)
  // and runs it under the instruction budget; pushes its results (nresults, or LUA_MULTRET). On error
  // returns the ScriptError and pushes nothing.
  std::optional<ScriptError> RunChunk(const std::string& source, const std::string& display_name,
                                      int nresults);

  // Calls the function at stack[-(nargs+1)] with nargs arguments through the traceback handler under a
  // fresh instruction budget and deadline. Like lua_pcall, but returns a ScriptError on failure (stack: results
  // pushed on success, nothing on failure). Errors: runtime errors "FILE:LINE: msg" with traceback;
  // "FILE: memory limit of N MiB exceeded" (no line, no traceback; the VM collects and stays usable);
  // the kills "FILE:LINE: instruction budget of N exceeded", "FILE:LINE: time limit of S s exceeded",
  // "FILE:LINE: run instruction budget of N exceeded (all calls of this plugin)", "FILE:LINE: run time
  // limit of S s exceeded (all calls of this plugin)" (while BeginRun is in effect) and
  // "FILE:LINE: interrupted!" (RequestInterrupt): the first kill, whatever the script did after it; a
  // kill raised by an allocation has no LINE.
  // FILE is the called function's chunk. The budget and deadline are the outermost call's: a Call made
  // while a Call runs (a binding calling back into a script) runs under them and leaves them running.
  std::optional<ScriptError> Call(int nargs, int nresults, const std::string& plugin_label);

  // Plugin API 2 refuses state kept from one document to the next (results would depend on how the
  // documents are split into lanes). FreezeState makes the plugin's environment `env` (absolute index)
  // read-only and replaces every plain table reachable from the upvalues of the functions in the list
  // `fns` (absolute index; Lua functions, followed through upvalues and tables) by a deep read-only
  // proxy, then records every upvalue's value; returns a registry ref to that record. A table with a
  // protected metatable (a proxy) is left as it is; one with any other metatable is an error naming
  // the upvalue (the freeze cannot see through its metamethods). A userdata is kept as its type
  // declares (lua_util.h, KeptAtLoad: as it is, made read-only, or refused); a C function that keeps
  // state of its own in upvalues (a string.gmatch iterator, a coroutine.wrap function) is refused. [-0, +0]
  Result<int> FreezeState(int env, int fns, const std::string& plugin_file);
  // "" if no recorded upvalue changed since FreezeState, else "upvalue 'n' of the function at
  // plugins/x.lua:12 changed while scoring: ...". [-0, +0]
  std::string CheckState(int record_ref) const;

  // Gives the environment `env` (absolute index, made by PushSandboxEnv) a `math` table of its own whose
  // random and randomseed draw from a generator of that environment alone (Lua 5.4's xoshiro256**, the
  // same numbers as stock Lua after the same math.randomseed), seeded as math.randomseed(n1, n2) would;
  // math.randomseed() without a seed is refused (it would seed from the clock). Returns a registry ref to
  // the generator for SeedOwnRandom. So no plugin can move another plugin's stream, and a plugin's numbers
  // do not depend on what ran before it in its VM (docs/plugins.md, Randomness). [-0, +0]
  int GiveOwnRandom(int env, std::uint64_t n1, std::uint64_t n2);

  std::size_t memory_in_use() const;

  // The file context every Call of this VM runs in (kplab/file_gate.h): a plugin's VM grants nothing
  // (the default); InstallScriptApi gives a script's VM its grants; a plugin's prepare gets the files
  // the user set as its parameters for that call.
  void SetFileGrants(std::shared_ptr<const FileGrants> grants) { file_grants_ = std::move(grants); }
  const std::shared_ptr<const FileGrants>& file_grants() const { return file_grants_; }

  // Charges every Call of this VM, until EndRun, also to `run` (shared by lanes). Starts the run's
  // clock when it is the first VM to begin it.
  void BeginRun(const std::shared_ptr<RunBudget>& run);
  void EndRun();
  static std::shared_ptr<RunBudget> NewRunBudget(const Limits& limits);
  // The run's clock starts again at the next BeginRun; what it has spent in instructions stays. A
  // streamed run's plugin is declared before its corpus is built and aggregated after: the build is not
  // the plugin's time (design note 72).
  static void RestartRunClock(RunBudget& run);

 private:
  struct Alloc;
  static Alloc* AllocOf(lua_State* L);  // null when L's allocator is not a LuaVm's (the Lua module)
  friend void ChargeNative(lua_State* L, double steps);
  friend void ReserveNative(lua_State* L, double bytes, const char* what);
  friend void CheckNative(lua_State* L, double steps_done);
  friend void AfterNative(lua_State* L);
  friend HeldMemory HoldNative(lua_State* L, std::size_t bytes, const char* what);
  Limits limits_;
  std::unique_ptr<Alloc> alloc_;
  lua_State* L_ = nullptr;
  int handler_ref_ = -2;  // LUA_NOREF until the first Call
  std::shared_ptr<const FileGrants> file_grants_ = std::make_shared<const FileGrants>(FileGrants::Plugin());
};

// Asks every running Call in the process to stop with "interrupted!" (the REPL's Ctrl-C). Async-
// signal-safe. The flag holds until ClearInterrupt. The kill works like a spent budget: pcall and
// xpcall cannot catch it for good.
void RequestInterrupt();
void ClearInterrupt();

// For bindings, before native work done on a script's behalf: charges `steps` (about one inner-loop
// iteration each) to the instruction budgets and checks the deadlines and Ctrl-C; raises the kill error
// ("FILE:LINE: instruction budget of N exceeded", "... time limit of S s exceeded", "interrupted!")
// when one is spent. Outside a sandboxed VM (the Lua module) nothing is checked. [-0, +0, v]
void ChargeNative(lua_State* L, double steps);

// For long native loops whose work was charged before they started: checks Ctrl-C and (every few
// thousand steps) the deadlines, raising the kill error as ChargeNative does. Called from inside the
// loop (through a core checkpoint callback), so the Lua error unwinds the loop's C++ frames. [-0, +0, v]
void CheckNative(lua_State* L, double steps_done);

// For bindings, before allocating `bytes` natively for a script: raises "memory limit of N MiB
// exceeded (WHAT needs X MiB)" when they do not fit in what is left of the VM's memory cap. The bytes
// are not kept charged (native buffers are temporary or owned by userdata the cap does not see). [-0, +0, v]
void ReserveNative(lua_State* L, double bytes, const char* what);

// A plugin file found on disk.
struct PluginFile {
  std::string name;          // file stem: plugins/exact.lua -> "exact"
  std::string path;          // path on disk
  // Found in the user's own configuration (the shipped directory, $KPLAB_PLUGIN_PATH): listed and read
  // in the user's file context whoever selects it (kplab/file_gate.h, UserFileScope).
  bool configured = false;
  std::string display_name;  // used in error messages: "plugins/exact.lua" for shipped plugins, else path
  std::string source;        // file bytes
  std::string sha256;
  int api_version = 0;       // from the header line "-- kplab-api: N"
};

// Every recursive walk over Lua values (the freeze of plugin API 2, read-only proxies, the plain-data
// check, the REPL's printer) enters each level through a WalkLevel: the walk stops with a clear error
// past kMaxWalkDepth levels, and each level makes room on the Lua stack before it pushes (a C function
// is only promised LUA_MINSTACK slots; pushing past them wrote over the heap). 200 is the nesting Lua's
// own parser allows in source (LUAI_MAXCCALLS), so every table a plugin can write out loads. A new
// recursive walk that does not use WalkLevel fails tests/host/sandbox_rules_test.cc.
constexpr int kMaxWalkDepth = 200;

// The depth of one walk, shared by its levels.
struct WalkDepth {
  int depth = 0;
};

// Enters one level of a walk, with room for `slots` more values on L's stack; leaves it when destroyed.
// When the walk is too deep (or the Lua stack cannot grow), ok() is false and error() says why:
// "is nested more than 200 levels deep" (callers put what was walked in front).
class WalkLevel {
 public:
  WalkLevel(WalkDepth& walk, lua_State* L, int slots);
  ~WalkLevel();
  WalkLevel(const WalkLevel&) = delete;
  WalkLevel& operator=(const WalkLevel&) = delete;
  bool ok() const { return error_ == nullptr; }
  const char* error() const { return error_; }

 private:
  WalkDepth& walk_;
  const char* error_ = nullptr;
};

// Pushes a read-only proxy of the table at `shadow`: reads, #, pairs and ipairs see its entries, writes
// raise "attempt to modify read-only table 'NAME'", the metatable is protected. [-0, +1]
void PushReadOnlyProxy(lua_State* L, int shadow, const std::string& name);

// True when the table at idx is one of kplab's read-only proxies (PushReadOnlyProxy). [-0, +0]
bool IsKplabProxy(lua_State* L, int idx);
// "" when the value at idx is plain data: nil, booleans, numbers, strings and tables of them without
// metatables (kplab's proxies allowed) and with string, number or boolean keys, nested at most
// kMaxWalkDepth tables deep; else what is not, named from `what` ("columns() result[k] is a function",
// "columns() result is nested more than 200 levels deep"). [-0, +0]
std::string CheckPlainData(lua_State* L, int idx, const std::string& what);

// Pushes a deep read-only proxy of the table at idx (every table reachable from it proxied too); a
// non-table or a table with a metatable is pushed as it is. Returns "" or, when the table is nested
// more than kMaxWalkDepth deep (CheckPlainData refuses that first), the error, pushing nothing.
// [-0, +(0|1)]
std::string PushDeepReadOnly(lua_State* L, int idx, const std::string& name);

// Replaces every field of the table at idx whose value is a table without a metatable by a deep read-only
// proxy named NAME.KEY ("ctx.pairs"): what the host hands a plugin as `ctx` keeps nothing a call writes.
// [-0, +0]
void FreezeTableFields(lua_State* L, int idx, const std::string& name);

// Re-seeds the generator GiveOwnRandom made (`random_ref`) as math.randomseed(n1, n2) does. [-0, +0]
void SeedOwnRandom(lua_State* L, int random_ref, std::uint64_t n1, std::uint64_t n2);

// FNV-1a (64-bit) of `a`, a 0x00 byte and `b`: the first seed word of a plugin's stream for document `b`
// (a = the plugin's name); for the other calls b is "\x01" + the call's name ("\x01load").
std::uint64_t SeedKey(std::string_view a, std::string_view b);

// The newest plugin API (docs/plugins.md); files declaring 1 keep working.
constexpr int kApiVersion = 2;
constexpr int kOldestApiVersion = 1;

// Reads one plugin file and checks its header line (errors as for DiscoverPlugins). `display_name` is
// what errors and chunk names use, e.g. "plugins/exact.lua".
// A configured file (PluginFile::configured) is read in the user's file context.
Result<PluginFile> ReadPluginFile(const std::string& path, const std::string& display_name, bool configured = false);

// The plugin files that DiscoverPlugins would read, by name, with name, path and display_name only
// (source empty, nothing opened): a directory lists its *.lua entries and no file is read until it
// is selected, so an unselected FIFO or /dev/zero named x.lua cannot hang an evaluation. Same order,
// overrides and directory errors as DiscoverPlugins.
Result<std::vector<PluginFile>> ListPlugins(const std::string& shipped_dir,
                                            const std::vector<std::string>& user_dirs);

// Finds plugin files and reads every one that is not overridden: shipped directory first, then each
// directory of $KPLAB_PLUGIN_PATH (':'-separated), then `user_dirs` (--plugins DIR); a later file with
// the same name overrides an earlier one. Errors: what ReadPluginFile refuses (not a regular file),
// unreadable directory, missing/invalid API header
// ("DIR/x.lua:1: missing API header (expected '-- kplab-api: 2' on the first line)"),
// unsupported version.
Result<std::vector<PluginFile>> DiscoverPlugins(const std::string& shipped_dir,
                                                const std::vector<std::string>& user_dirs);

// Adds kp.log and kp.metric to the kp table on top of the stack (every VM has them; so does the Lua
// module). [-0, +0]
void InstallKpBase(lua_State* L);

// Directory of shipped plugins: $KPLAB_SHIPPED_PLUGINS if set, else share/kplab/plugins of the install
// tree, found relative to the binary holding this code or to the executable, else the source tree's
// plugins/.
std::string ShippedPluginDir();

}  // namespace kplab::host
