// `kplab repl`: an interactive Lua prompt with the script API (docs/repl.md). Line editing, history and
// completion come from libedit (BSD-licensed) when stdin and stdout are terminals; otherwise lines are
// read plainly, so scripts can be piped in.
//
// Threads: the REPL is single-threaded: one prompt, one LuaVm, on the thread that runs it; SIGINT only sets a
// flag.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "lua_script.h"
#include "sandbox.h"

namespace kplab::host {

struct ReplOptions {
  // Per line typed: larger than a plugin's (interactive analyses run whole-corpus loops in Lua), and
  // Ctrl-C stops anything sooner. No run limits: a session is not a run.
  Limits limits{.memory_bytes = 256u << 20,
                .instructions = 10'000'000'000,
                .seconds = 300,
                .run_instructions = 0,
                .run_seconds = 0};
  std::vector<std::string> plugin_dirs;  // --plugins DIR (as for eval)
  std::string db;                        // run store for :runs; "" = RunStore::DefaultPath()
  std::string history_path;              // "" = DefaultHistoryPath()
  FileGrants grants;                     // where kp.read/write/load/runs reach (MakeFileGrants)
};

// Runs the prompt until :quit or end of input; returns the process exit code.
int RunRepl(const ReplOptions& options);

// The REPL's environment: a script's (PushScriptEnv, kp.include relative to the working directory) with
// plain globals, the REPL's print and help(). help() needs the session that RunRepl makes; the
// environment alone is for tests that enumerate it. The VM has the kp modules (InstallAll). [-0, +1]
void PushReplEnv(LuaVm& vm, const FileGrants& grants);

// $KPLAB_HISTORY, else $XDG_STATE_HOME/kplab/history, else ~/.local/state/kplab/history.
std::string DefaultHistoryPath();

// The LuaLS stub file docs/lua/kp.lua, embedded at build time (the one source of the API's docs).
std::string_view KpStubs();

// One documented name of the stub file: "kp.stem", "kp.stats.mean", "KeyphraseList:match",
// "Ctx.cosine" (functions) or "Document", "kp.stats" (classes).
struct StubEntry {
  std::string name;
  bool is_class = false;
  std::string signature;  // "kp.stem(word, mode)"; the class name for classes
  std::string text;       // the --- lines without the leading "---" (annotations included)
  int line = 0;           // line of the declaration in docs/lua/kp.lua
};

// Parses a LuaLS stub file: each `function NAME(ARGS) end` and each `---@class NAME` with the ---
// comment block above it (class blocks include their ---@field lines).
std::map<std::string, StubEntry> ParseStubs(std::string_view text);

// Human-readable help of one entry: signature, description, parameters, returns (fields for classes).
std::string FormatStub(const StubEntry& entry);

}  // namespace kplab::host
