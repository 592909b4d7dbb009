// The Lua sandbox: counting allocator, instruction budget, allow-listed environments with read-only
// proxies, traceback handler and plugin discovery. Modelled on redis' script_lua.c (allow-list, strict
// globals, re-arming kill hook) and lua.c (msghandler).
#include "sandbox.h"

#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include <fmt/format.h>
#include <utility>

#include <lua.hpp>

#include "lua_pattern.h"
#include "lua_stdlib.h"
#include "kplab/io.h"
#include "kplab/safe_text.h"
#include "lua_util.h"

#ifndef KPLAB_INSTALLED_PLUGIN_DIRS
#define KPLAB_INSTALLED_PLUGIN_DIRS "../share/kplab/plugins"
#endif
#ifndef KPLAB_SHIPPED_PLUGIN_DIR
#define KPLAB_SHIPPED_PLUGIN_DIR "plugins"
#endif

namespace kplab::host {
namespace {

namespace fs = std::filesystem;

// The count hook fires every kHookEvery VM instructions; the budget is charged in these steps.
constexpr int kHookEvery = 1000;
constexpr std::size_t kMiB = std::size_t{1} << 20;

// Registry keys of the per-VM tables the sandbox builds.
constexpr const char* kKpKey = "kplab.kp";            // the real kp table (bindings install into it)
constexpr const char* kBaseKey = "kplab.base";        // name -> value copied into every env
constexpr const char* kKpShadowKey = "kplab.kp.shadow";  // kp with sub-tables replaced by proxies
constexpr const char* kStrictKey = "kplab.strict";    // metatable of every env

// The allow-list of base functions (STYLE.md: redis scripting). Everything else in the base library
// (load, dofile, print, rawget, rawset, collectgarbage, ...) stays out of reach.
constexpr const char* kAllowedBase[] = {
    "assert", "error",    "ipairs", "next",     "pairs",    "pcall",        "xpcall",      "rawequal",
    "rawlen", "select",   "tonumber", "tostring", "type",   "setmetatable", "getmetatable",
};
constexpr const char* kAllowedLibs[] = {"string", "table", "math", "utf8", "coroutine"};

std::string FormatMiB(std::size_t bytes) {
  if (bytes % kMiB == 0) return std::to_string(bytes / kMiB);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / static_cast<double>(kMiB));
  return buf;
}

// "@plugins/x.lua" -> "plugins/x.lua"; other chunk names have no file.
std::string FileOfSource(const char* source) {
  if (source != nullptr && source[0] == '@') return source + 1;
  return "";
}

// Splits "FILE:LINE: rest" into FILE and LINE; false when the message carries no position.
bool ParsePosition(const std::string& message, std::string* file, int* line) {
  for (std::size_t colon = message.find(':'); colon != std::string::npos;
       colon = message.find(':', colon + 1)) {
    std::size_t p = colon + 1;
    while (p < message.size() && message[p] >= '0' && message[p] <= '9') ++p;
    if (p > colon + 1 && p < message.size() && message[p] == ':' && colon > 0) {
      *file = message.substr(0, colon);
      *line = std::atoi(message.c_str() + colon + 1);
      return true;
    }
  }
  return false;
}

using Clock = std::chrono::steady_clock;

// Ctrl-C in the REPL: one flag for every VM of the process (a command may run plugins in VMs of their
// own).
std::atomic<bool> g_interrupt{false};
static_assert(std::atomic<bool>::is_always_lock_free, "RequestInterrupt runs in a signal handler");

// Allocations at least this large check the deadlines: a loop of big copies (quadratic concatenation)
// runs few instructions per byte moved.
constexpr std::size_t kLargeAllocation = std::size_t{1} << 20;
constexpr std::size_t kBytesPerStep = 16;  // a copy moves ~16 bytes in the time of one VM instruction

Clock::time_point DeadlineAfter(Clock::time_point start, double seconds) {
  if (seconds <= 0) return Clock::time_point::max();
  return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string FormatSeconds(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

}  // namespace

struct RunBudget {
  std::uint64_t limit = 0;  // instructions; 0 = unlimited
  double seconds = 0;
  std::atomic<std::uint64_t> spent{0};
  std::atomic<bool> started{false};
  std::atomic<Clock::rep> deadline{Clock::time_point::max().time_since_epoch().count()};
};

// Per-VM state reachable from the allocator, the hook and the message handler (the allocator's ud).
struct LuaVm::Alloc {
  // Memory.
  std::size_t used = 0;
  std::size_t limit = 0;  // 0 = unlimited
  // The cap applies while a script runs (inside Call); the host's own tables (documents, params,
  // results) are built unmetered, so the cap can never fire outside a protected call.
  bool metered = false;
  bool memory_hit = false;
  // Instructions.
  lua_State* main = nullptr;
  std::uint64_t budget = 0;  // 0 = unlimited
  int every = kHookEvery;
  std::uint64_t spent = 0;
  bool exhausted = false;
  std::string kill_text;     // "instruction budget of N exceeded", set when a limit kills the call
  std::string kill_message;  // first kill of the current call, with its position
  std::string budget_text;   // "instruction budget of N exceeded"
  std::string seconds_text;  // "time limit of S s exceeded"
  Clock::time_point deadline = Clock::time_point::max();
  std::shared_ptr<RunBudget> run;
  double native_since_clock = 0;  // native steps charged since the clock was last read
  // Traceback of the last error that reached Call's handler.
  std::string traceback;

  static void* Allocate(void* ud, void* ptr, std::size_t osize, std::size_t nsize) {
    auto* self = static_cast<Alloc*>(ud);
    const std::size_t old = ptr != nullptr ? osize : 0;  // for new blocks osize is a type tag
    if (nsize == 0) {
      std::free(ptr);
      self->used -= old;
      return nullptr;
    }
    // Lua requires that shrinking never fails, so only growth is checked.
    if (self->metered && self->limit != 0 && nsize > old && self->used - old + nsize > self->limit) {
      self->memory_hit = true;
      return nullptr;
    }
    // A large block is filled by a copy the count hook does not see (s = s .. t in a loop copies
    // quadratically): it is charged one step per kBytesPerStep bytes. No Lua error can be raised
    // here: a refused allocation becomes a memory error, which Call reports as the kill (and the
    // re-armed hook keeps pcall from going on).
    if (self->metered && nsize >= kLargeAllocation && nsize > old) {
      if (self->exhausted) return nullptr;
      const std::string* why = self->Charge(nsize / kBytesPerStep);
      if (why == nullptr) why = self->Expired();
      if (why != nullptr) {
        self->Kill(self->main, *why, /*where=*/false);
        return nullptr;
      }
    }
    void* p = std::realloc(ptr, nsize);
    if (p != nullptr) self->used = self->used - old + nsize;
    return p;
  }

  // The limit that has run out, if any (Ctrl-C, the call's or the run's deadline); reads the clock.
  const std::string* Expired() {
    static const std::string kInterrupted = "interrupted!";
    if (g_interrupt.load(std::memory_order_relaxed)) return &kInterrupted;
    native_since_clock = 0;
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return &seconds_text;
    if (run != nullptr && now.time_since_epoch().count() >= run->deadline.load(std::memory_order_relaxed)) {
      run_text = "run time limit of " + FormatSeconds(run->seconds) + " s exceeded (all calls of this plugin)";
      return &run_text;
    }
    return nullptr;
  }

  // Charges `n` instructions (or native steps) to the call's and the run's budgets.
  const std::string* Charge(std::uint64_t n) {
    spent += n;
    if (budget != 0 && spent >= budget) return &budget_text;
    if (run != nullptr && run->limit != 0 &&
        run->spent.fetch_add(n, std::memory_order_relaxed) + n >= run->limit) {
      run_text = "run instruction budget of " + std::to_string(run->limit) +
                 " exceeded (all calls of this plugin)";
      return &run_text;
    }
    return nullptr;
  }

  // Marks the call killed: from now on the hook fires on every instruction of this thread and of the
  // main thread and raises the kill again, so a `pcall` in the script can catch the error but cannot
  // run a single further instruction without raising it again (redis: luaMaskCountHook).
  // lua_sethook is async-signal-safe and allowed inside the allocator.
  void Kill(lua_State* L, const std::string& why, bool where) {
    exhausted = true;
    kill_text = why;
    lua_sethook(L, &Hook, LUA_MASKCOUNT, 1);
    if (L != main) lua_sethook(main, &Hook, LUA_MASKCOUNT, 1);
    kill_message.clear();
    if (where) {
      luaL_where(L, 0);  // level 0: the Lua function being executed (hooks have no frame)
      kill_message = lua_tostring(L, -1);
      lua_pop(L, 1);
    }
    kill_message += kill_text;
  }

  static void Hook(lua_State* L, lua_Debug* /*ar*/) {
    void* ud = nullptr;
    lua_getallocf(L, &ud);
    auto* self = static_cast<Alloc*>(ud);
    if (!self->metered) return;  // between calls (finalizers the host's collection runs)
    if (!self->exhausted) {
      if (lua_gethookcount(L) != self->every) {
        // A coroutine still armed by a kill in an earlier call: back to normal counting.
        lua_sethook(L, &Hook, LUA_MASKCOUNT, self->every);
        return;
      }
      const std::string* why = self->Charge(static_cast<std::uint64_t>(self->every));
      if (why == nullptr) why = self->Expired();
      if (why == nullptr) return;
      self->Kill(L, *why, /*where=*/true);
    }
    luaL_where(L, 0);
    lua_pushlstring(L, self->kill_text.data(), self->kill_text.size());
    lua_concat(L, 2);
    lua_error(L);
  }

  // ChargeNative (charge = true) and CheckNative: as the hook, from inside a C function (level 1 is
  // its caller).
  void ChargeNativeSteps(lua_State* L, double steps, bool charge = true) {
    if (!metered) return;
    if (!exhausted) {
      const double capped = std::min(steps, 9.0e18);
      const std::string* why = charge ? Charge(static_cast<std::uint64_t>(std::max(0.0, capped))) : nullptr;
      native_since_clock += steps;
      if (why == nullptr && native_since_clock >= 4096) why = Expired();
      if (why == nullptr && g_interrupt.load(std::memory_order_relaxed)) why = Expired();
      if (why == nullptr) return;
      KillFromNative(L, *why);
    }
    luaL_where(L, 1);
    lua_pushlstring(L, kill_text.data(), kill_text.size());
    lua_concat(L, 2);
    lua_error(L);
  }

  // Kills the call from inside a C function (level 1 is its caller) and raises the kill.
  [[noreturn]] void KillFromNative(lua_State* L, const std::string& why) {
    Kill(L, why, /*where=*/false);
    luaL_where(L, 1);
    kill_message = lua_tostring(L, -1) + kill_text;
    lua_pop(L, 1);
    luaL_where(L, 1);
    lua_pushlstring(L, kill_text.data(), kill_text.size());
    lua_concat(L, 2);
    lua_error(L);
    std::abort();  // unreachable: lua_error does not return
  }

  std::string run_text;

  // Message handler of Call (lua.c: msghandler): keeps the traceback on the C++ side and returns the
  // message, so ScriptError gets both apart.
  static int MessageHandler(lua_State* L) {
    auto* self = static_cast<Alloc*>(lua_touserdata(L, lua_upvalueindex(1)));
    if (lua_type(L, 1) != LUA_TSTRING && lua_type(L, 1) != LUA_TNUMBER) {
      if (!(luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)) {
        lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
      }
      lua_replace(L, 1);
    }
    lua_settop(L, 1);
    luaL_traceback(L, L, nullptr, 1);
    self->traceback = lua_tostring(L, -1);
    lua_settop(L, 1);
    return 1;
  }
};

namespace {

// A switch between coroutines costs the time of ~130 VM instructions but counts as a handful, so a
// resume/yield loop ran ~20x longer than its budget: each resume is charged this many steps.
constexpr double kResumeSteps = 200;

// coroutine.resume, and the functions coroutine.wrap returns: the original (upvalue 1), charged.
int ChargedResume(lua_State* L) {
  ChargeNative(L, kResumeSteps);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

int ChargedWrap(lua_State* L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);  // [wrapped]
  lua_pushcclosure(L, &ChargedResume, 1);
  return 1;
}

// ---- a plugin's own math.random ---------------------------------------------------------------------
// Stock Lua keeps one generator per state, so plugins of one lane shared it (what one drew or seeded
// moved another's numbers, and the numbers depended on the lane). Each plugin environment gets its own,
// re-seeded by the host before every call (GiveOwnRandom). The algorithm, seeding and range reduction are
// Lua 5.4.4's (lmathlib.c: xoshiro256**, setseed, project), so math.randomseed(x) then gives the numbers
// stock Lua gives; a test checks them against the lua5.4 interpreter.

constexpr const char* kRandomMeta = "kplab.Random";

struct OwnRandomState {
  std::uint64_t s[4];
};

std::uint64_t Rotl(std::uint64_t x, int n) { return (x << n) | (x >> (64 - n)); }

std::uint64_t NextRandom(std::uint64_t* s) {
  const std::uint64_t out = Rotl(s[1] * 5, 7) * 9;
  const std::uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = Rotl(s[3], 45);
  return out;
}

// math.randomseed(n1, n2) of Lua 5.4.4: the state {n1, 0xff, n2, 0}, then 16 outputs discarded.
void SetSeed(std::uint64_t* s, std::uint64_t n1, std::uint64_t n2) {
  s[0] = n1;
  s[1] = 0xff;
  s[2] = n2;
  s[3] = 0;
  for (int i = 0; i < 16; ++i) NextRandom(s);
}

// A uniform integer in [0, n] from `ran`, drawing again while the bits above n's reject it (Lua's project).
std::uint64_t Project(std::uint64_t ran, std::uint64_t n, std::uint64_t* s) {
  if ((n & (n + 1)) == 0) return ran & n;  // n + 1 is a power of 2
  std::uint64_t lim = n;
  for (int shift = 1; shift < 64; shift *= 2) lim |= lim >> shift;
  while ((ran &= lim) > n) ran = NextRandom(s);
  return ran;
}

// math.random([m [, n]]) as Lua 5.4.4's, on the environment's generator (upvalue 1).
int OwnRandom(lua_State* L) {
  auto* g = static_cast<OwnRandomState*>(lua_touserdata(L, lua_upvalueindex(1)));
  const std::uint64_t rv = NextRandom(g->s);
  lua_Integer low = 1, up = 0;
  switch (lua_gettop(L)) {
    case 0:
      lua_pushnumber(L, static_cast<lua_Number>(rv >> 11) * 0x1.0p-53);
      return 1;
    case 1:
      up = luaL_checkinteger(L, 1);
      if (up == 0) {  // the whole 64 bits
        lua_pushinteger(L, static_cast<lua_Integer>(rv));
        return 1;
      }
      break;
    case 2:
      low = luaL_checkinteger(L, 1);
      up = luaL_checkinteger(L, 2);
      break;
    default:
      return luaL_error(L, "wrong number of arguments");
  }
  luaL_argcheck(L, low <= up, 1, "interval is empty");
  const std::uint64_t p = Project(rv, static_cast<std::uint64_t>(up) - static_cast<std::uint64_t>(low), g->s);
  lua_pushinteger(L, static_cast<lua_Integer>(p + static_cast<std::uint64_t>(low)));
  return 1;
}

// math.randomseed(n1 [, n2]) re-seeds the environment's generator for the rest of the current call (the
// host seeds it again before the next); without a seed stock Lua would take the clock, so it is refused.
int OwnRandomSeed(lua_State* L) {
  if (lua_isnone(L, 1)) {
    return luaL_error(L,
                      "math.randomseed() needs a seed in a plugin: a seed from the clock would make the "
                      "numbers irreproducible (math.random is seeded per document; docs/plugins.md, "
                      "Randomness)");
  }
  auto* g = static_cast<OwnRandomState*>(lua_touserdata(L, lua_upvalueindex(1)));
  const lua_Integer n1 = luaL_checkinteger(L, 1);
  const lua_Integer n2 = luaL_optinteger(L, 2, 0);
  SetSeed(g->s, static_cast<std::uint64_t>(n1), static_cast<std::uint64_t>(n2));
  lua_pushinteger(L, n1);
  lua_pushinteger(L, n2);
  return 2;
}

// Lua errors outside any protected call would abort the process; make them a C++ exception instead so
// the host can report and drop the VM.
int Panic(lua_State* L) {
  const char* msg = lua_tostring(L, -1);
  throw LuaPanicError(msg != nullptr ? msg : "a Lua error with a value that is not a string");
}

int ReadOnlyNewIndex(lua_State* L) {
  return luaL_error(L, "attempt to modify read-only table '%s'", lua_tostring(L, lua_upvalueindex(1)));
}

// Iterator of a proxy: walks the hidden shadow table (upvalue 1) without ever handing it out.
int ProxyNext(lua_State* L) {
  lua_settop(L, 2);  // [proxy, key]
  if (lua_next(L, lua_upvalueindex(1)) != 0) return 2;
  lua_pushnil(L);
  return 1;
}

int ProxyPairs(lua_State* L) {
  lua_pushvalue(L, lua_upvalueindex(1));  // the ProxyNext closure
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

int ProxyLen(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(lua_rawlen(L, lua_upvalueindex(1))));
  return 1;
}

// Pushes an empty table that reads through to the table at `shadow` and refuses writes with
// "attempt to modify read-only table '<name>'". pairs and # work; getmetatable returns false, so the
// shadow is unreachable from scripts. [-0, +1]
}  // namespace

namespace {
const std::string& TooDeep() {
  static const std::string text = "is nested more than " + std::to_string(kMaxWalkDepth) + " levels deep";
  return text;
}
}  // namespace

WalkLevel::WalkLevel(WalkDepth& walk, lua_State* L, int slots) : walk_(walk) {
  if (walk_.depth >= kMaxWalkDepth) {
    error_ = TooDeep().c_str();
  } else if (!lua_checkstack(L, slots)) {  // past LUAI_MAXSTACK values: a clear error, not a write past the stack
    error_ = "is nested too deep for the Lua stack";
  } else {
    ++walk_.depth;
  }
}

WalkLevel::~WalkLevel() {
  if (error_ == nullptr) --walk_.depth;
}

const char kProxiesKey = 0;  // registry: weak set of the read-only proxies PushReadOnlyProxy made

void PushReadOnlyProxy(lua_State* L, int shadow, const std::string& name) {
  shadow = lua_absindex(L, shadow);
  lua_newtable(L);                 // [proxy]
  lua_createtable(L, 0, 5);        // [proxy, mt]
  lua_pushvalue(L, shadow);
  lua_setfield(L, -2, "__index");
  lua_pushlstring(L, name.data(), name.size());
  lua_pushcclosure(L, &ReadOnlyNewIndex, 1);
  lua_setfield(L, -2, "__newindex");
  lua_pushvalue(L, shadow);
  lua_pushcclosure(L, &ProxyNext, 1);
  lua_pushcclosure(L, &ProxyPairs, 1);
  lua_setfield(L, -2, "__pairs");
  lua_pushvalue(L, shadow);
  lua_pushcclosure(L, &ProxyLen, 1);
  lua_setfield(L, -2, "__len");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);         // [proxy]
  // Remember it as kplab's own (a weak set): the freeze of plugin API 2 trusts these and no other table
  // with a metatable (a script can set __metatable on its own tables too).
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kProxiesKey) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 16);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &kProxiesKey);
  }
  lua_pushvalue(L, -2);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

bool IsKplabProxy(lua_State* L, int idx) {
  idx = lua_absindex(L, idx);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kProxiesKey) != LUA_TTABLE) {
    lua_pop(L, 1);
    return false;
  }
  lua_pushvalue(L, idx);
  const bool yes = lua_rawget(L, -2) != LUA_TNIL;
  lua_pop(L, 2);
  return yes;
}

namespace {

void PushProxy(lua_State* L, int shadow, const std::string& name) { PushReadOnlyProxy(L, shadow, name); }

// Pushes a proxy of the table at `idx` whose sub-tables are proxies too ("kp.text"), so nothing
// reachable from it is writable. `seen` maps already proxied tables (cycles, shared sub-tables).
// [-0, +1]; false (nothing pushed) when the table is nested deeper than the walk allows.
bool PushDeepProxy(lua_State* L, int idx, const std::string& name, int seen, WalkDepth& walk) {
  WalkLevel level(walk, L, 6);
  if (!level.ok()) return false;
  idx = lua_absindex(L, idx);
  lua_pushvalue(L, idx);
  if (lua_rawget(L, seen) != LUA_TNIL) return true;  // [proxy]
  lua_pop(L, 1);
  lua_newtable(L);  // [shadow]
  const int shadow = lua_gettop(L);
  PushProxy(L, shadow, name);  // [shadow, proxy]
  lua_pushvalue(L, idx);
  lua_pushvalue(L, -2);
  lua_rawset(L, seen);
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {  // [shadow, proxy, k, v]
    if (lua_type(L, -1) == LUA_TTABLE) {
      std::string sub = name;
      if (lua_type(L, -2) == LUA_TSTRING) {
        sub += ".";
        sub += lua_tostring(L, -2);
      }
      if (!PushDeepProxy(L, -1, sub, seen, walk)) {  // [shadow, proxy, k, v, vproxy]
        lua_settop(L, shadow - 1);
        return false;
      }
      lua_replace(L, -2);
    }
    lua_pushvalue(L, -2);  // [shadow, proxy, k, v, k]
    lua_insert(L, -2);     // [shadow, proxy, k, k, v]
    lua_rawset(L, shadow);
  }
  lua_remove(L, shadow);  // [proxy]
  return true;
}

// PushDeepProxy for the host's own API tables (kp, string, ...), which are never too deep.
void PushDeepApiProxy(lua_State* L, int idx, const std::string& name, int seen) {
  WalkDepth walk;
  if (!PushDeepProxy(L, idx, name, seen, walk)) throw std::logic_error("API table " + name + " nested too deep");
}

// The name of a global, without running a key's __tostring; pushed, so that no C++ object is alive when
// the error is raised. [-0, +1]
const char* PushGlobalName(lua_State* L, int idx) {
  const std::string name = RawText(L, idx);
  return lua_pushlstring(L, name.data(), name.size());
}

int UndefinedGlobal(lua_State* L) { return luaL_error(L, "undefined global '%s'", PushGlobalName(L, 2)); }

int UndeclaredAssignment(lua_State* L) {
  return luaL_error(L, "assignment to undeclared global '%s'", PushGlobalName(L, 2));
}

// setmetatable without finalizers: Lua runs __gc with hooks off (lgc.c: GCTM), so a finalizer would
// escape the instruction budget. Otherwise as luaB_setmetatable.
int SandboxSetmetatable(lua_State* L) {
  const int t = lua_type(L, 2);
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
  if (t == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    const bool has_gc = lua_rawget(L, 2) != LUA_TNIL;
    lua_pop(L, 1);
    if (has_gc) return luaL_error(L, "__gc metamethods are not allowed in the sandbox");
  }
  if (luaL_getmetafield(L, 1, "__metatable") != LUA_TNIL) {
    return luaL_error(L, "cannot change a protected metatable");
  }
  lua_settop(L, 2);
  lua_setmetatable(L, 1);
  return 1;
}

// The message handler given to xpcall, guarded: after a kill, errors are raised from inside the count
// hook, where Lua runs no hooks, so a looping Lua handler could never be stopped. Once the budget is
// spent the script's handler is skipped and the message passes through unchanged.
int GuardedHandler(lua_State* L) {
  auto* exhausted = static_cast<const bool*>(lua_touserdata(L, lua_upvalueindex(2)));
  if (*exhausted) {
    lua_settop(L, 1);
    return 1;
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

int FinishXpcall(lua_State* L, int status, lua_KContext extra) {
  if (status != LUA_OK && status != LUA_YIELD) {
    lua_pushboolean(L, 0);
    lua_pushvalue(L, -2);
    return 2;
  }
  return lua_gettop(L) - static_cast<int>(extra);
}

// xpcall(f, msgh, ...) as luaB_xpcall, with msgh wrapped in GuardedHandler. Upvalue 1: the VM's
// `exhausted` flag.
int SandboxXpcall(lua_State* L) {
  const int n = lua_gettop(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushcclosure(L, &GuardedHandler, 2);
  lua_replace(L, 2);
  lua_pushboolean(L, 1);  // first result if no errors
  lua_pushvalue(L, 1);    // function
  lua_rotate(L, 3, 2);    // below the function's arguments
  const int status = lua_pcallk(L, n - 2, LUA_MULTRET, 2, 2, &FinishXpcall);
  return FinishXpcall(L, status, 2);
}

// kp.log(...): arguments converted like print's and joined by spaces, written to stderr as
// "[label] message". The label is upvalue 1 in a sandbox env (the plugin name); the shared kp.log
// derives it from the calling chunk ("@plugins/x.lua" -> "x").
int Log(lua_State* L) {
  const int n = lua_gettop(L);
  std::string label;
  if (lua_type(L, lua_upvalueindex(1)) == LUA_TSTRING) {
    label = lua_tostring(L, lua_upvalueindex(1));
  } else {
    lua_Debug ar;
    if (lua_getstack(L, 1, &ar) != 0 && lua_getinfo(L, "S", &ar) != 0) {
      const std::string file = FileOfSource(ar.source);
      label = file.empty() ? ar.short_src : fs::path(file).stem().string();
    }
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 1; i <= n; ++i) {
    if (i > 1) luaL_addchar(&b, ' ');
    luaL_tolstring(L, i, nullptr);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  std::size_t len = 0;
  const char* text = lua_tolstring(L, -1, &len);
  // One line per call, whatever the plugin passes: no newline, escape sequence or invalid byte of it
  // reaches the terminal raw (kplab/safe_text.h).
  const std::string line = "[" + TerminalText(label) + "] " + TerminalText(std::string_view(text, len)) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  return 0;
}

// kp.metric{...}: the declaration is checked by the host after the chunk returns (LoadMetricPlugin),
// so that errors name the file and field rather than a line inside kp.metric.
int Metric(lua_State* L) {
  lua_settop(L, 1);
  return 1;
}

}  // namespace

void InstallKpBase(lua_State* L) {
  // Through Safe<>, as every other binding: in the Lua module (C Lua) a C++ exception must not cross
  // Lua's C frames.
  lua_pushcfunction(L, Safe<Log>);
  lua_setfield(L, -2, "log");
  lua_pushcfunction(L, Safe<Metric>);
  lua_setfield(L, -2, "metric");
}

std::string ScriptError::Format() const {
  if (traceback.empty()) return message;
  return message + "\n" + traceback;
}

LuaVm::LuaVm(const Limits& limits) : limits_(limits), alloc_(std::make_unique<Alloc>()) {
  // The limit applies once the VM is set up: the standard libraries are part of the host's cost.
  L_ = lua_newstate(&Alloc::Allocate, alloc_.get());
  if (L_ == nullptr) throw std::bad_alloc();
  lua_atpanic(L_, &Panic);
  alloc_->main = L_;
  alloc_->budget = limits_.instructions;
  if (alloc_->budget != 0 && alloc_->budget < static_cast<std::uint64_t>(kHookEvery)) {
    alloc_->every = static_cast<int>(alloc_->budget);
  }
  alloc_->budget_text = "instruction budget of " + std::to_string(limits_.instructions) + " exceeded";
  alloc_->seconds_text = "time limit of " + FormatSeconds(limits_.seconds) + " s exceeded";

  // Only the libraries the allow-list exposes are opened; io/os/package/debug never exist here.
  static const luaL_Reg kLibs[] = {
      {LUA_GNAME, luaopen_base},          {LUA_STRLIBNAME, luaopen_string},
      {LUA_TABLIBNAME, luaopen_table},    {LUA_MATHLIBNAME, luaopen_math},
      {LUA_UTF8LIBNAME, luaopen_utf8},    {LUA_COLIBNAME, luaopen_coroutine},
  };
  for (const luaL_Reg& lib : kLibs) {
    luaL_requiref(L_, lib.name, lib.func, 1);
    lua_pop(L_, 1);
  }
  // string.dump would hand out bytecode, and the real string table stays reachable as the __index of
  // the string metatable; remove dump there, and hide that metatable (getmetatable("") -> false).
  lua_getglobal(L_, LUA_STRLIBNAME);
  lua_pushnil(L_);
  lua_setfield(L_, -2, "dump");
  // Lua's pattern matcher runs without hooks (a pattern can backtrack for hours); these charge it.
  InstallBudgetedPatterns(L_);
  lua_pop(L_, 1);
  // Lua's string.rep and table functions loop in C as often as a count or a __len says; these charge it.
  InstallBoundedStdlib(L_);
  lua_getglobal(L_, LUA_COLIBNAME);
  for (const auto& [name, fn] : {std::pair{"resume", &ChargedResume}, std::pair{"wrap", &ChargedWrap}}) {
    lua_getfield(L_, -1, name);
    lua_pushcclosure(L_, fn, 1);
    lua_setfield(L_, -2, name);
  }
  lua_pop(L_, 1);
  lua_pushliteral(L_, "");
  lua_getmetatable(L_, -1);
  lua_pushboolean(L_, 0);
  lua_setfield(L_, -2, "__metatable");
  lua_pop(L_, 2);

  lua_newtable(L_);  // [kp]
  InstallKpBase(L_);
  lua_setfield(L_, LUA_REGISTRYINDEX, kKpKey);

  alloc_->limit = limits_.memory_bytes;
}

LuaVm::~LuaVm() {
  if (L_ != nullptr) lua_close(L_);
}

std::size_t LuaVm::memory_in_use() const { return alloc_->used; }

std::shared_ptr<RunBudget> LuaVm::NewRunBudget(const Limits& limits) {
  auto run = std::make_shared<RunBudget>();
  run->limit = limits.run_instructions;
  run->seconds = limits.run_seconds;
  return run;
}

void LuaVm::BeginRun(const std::shared_ptr<RunBudget>& run) {
  if (run != nullptr && !run->started.exchange(true)) {
    run->deadline.store(DeadlineAfter(Clock::now(), run->seconds).time_since_epoch().count());
  }
  alloc_->run = run;
}

void LuaVm::EndRun() { alloc_->run.reset(); }

void LuaVm::RestartRunClock(RunBudget& run) {
  run.deadline.store(Clock::time_point::max().time_since_epoch().count());
  run.started.store(false);
}

void RequestInterrupt() { g_interrupt.store(true, std::memory_order_relaxed); }
void ClearInterrupt() { g_interrupt.store(false, std::memory_order_relaxed); }

LuaVm::Alloc* LuaVm::AllocOf(lua_State* L) {
  void* ud = nullptr;
  return lua_getallocf(L, &ud) == &Alloc::Allocate ? static_cast<Alloc*>(ud) : nullptr;
}

void ChargeNative(lua_State* L, double steps) {
  if (LuaVm::Alloc* self = LuaVm::AllocOf(L); self != nullptr) self->ChargeNativeSteps(L, steps);
}

void AfterNative(lua_State* L) {
  LuaVm::Alloc* self = LuaVm::AllocOf(L);
  if (self == nullptr || !self->metered || self->exhausted) return;
  // The coarse clock (vDSO, a few ns, ticks of a few ms) keeps this cheap on every binding call; it
  // shares CLOCK_MONOTONIC's (steady_clock's) origin.
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  const auto now = Clock::time_point(std::chrono::duration_cast<Clock::duration>(
      std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec)));
  const bool run_over = self->run != nullptr &&
                        now.time_since_epoch().count() >= self->run->deadline.load(std::memory_order_relaxed);
  // The coarse clock lags the precise one, so when it says a deadline passed, it did.
  if (g_interrupt.load(std::memory_order_relaxed) || now >= self->deadline || run_over) {
    if (const std::string* why = self->Expired(); why != nullptr) self->KillFromNative(L, *why);
  }
}

HeldMemory HoldNative(lua_State* L, std::size_t bytes, const char* what) {
  HeldMemory held;
  LuaVm::Alloc* self = LuaVm::AllocOf(L);
  if (self == nullptr) return held;
  if (self->metered && self->limit != 0 && self->used + bytes > self->limit) {
    ReserveNative(L, static_cast<double>(bytes), what);  // collects, then raises if they still do not fit
  }
  self->used += bytes;
  held.used_ = &self->used;
  held.bytes_ = bytes;
  return held;
}

void CheckNative(lua_State* L, double steps_done) {
  if (LuaVm::Alloc* self = LuaVm::AllocOf(L); self != nullptr) self->ChargeNativeSteps(L, steps_done, false);
}

void ReserveNative(lua_State* L, double bytes, const char* what) {
  LuaVm::Alloc* self = LuaVm::AllocOf(L);
  if (self == nullptr || !self->metered || self->limit == 0) return;
  auto room = [self] { return self->used >= self->limit ? 0.0 : static_cast<double>(self->limit - self->used); };
  if (bytes <= room()) return;
  lua_gc(L, LUA_GCCOLLECT, 0);  // userdata the script dropped give back what they held (HeldMemory)
  if (bytes <= room()) return;
  luaL_where(L, 1);
  char need[64];
  std::snprintf(need, sizeof need, "%.0f", std::ceil(bytes / static_cast<double>(kMiB)));
  const std::string text =
      "memory limit of " + FormatMiB(self->limit) + " MiB exceeded (" + what + " needs " + need + " MiB)";
  lua_pushlstring(L, text.data(), text.size());
  lua_concat(L, 2);
  lua_error(L);
}

void LuaVm::Install(const ModuleInstaller& installer) {
  const int top = lua_gettop(L_);
  lua_getfield(L_, LUA_REGISTRYINDEX, kKpKey);  // [kp]
  installer(L_);
  lua_settop(L_, top);
  // Environments built from now on must see the new modules.
  lua_pushnil(L_);
  lua_setfield(L_, LUA_REGISTRYINDEX, kKpShadowKey);
}

void LuaVm::PushSandboxEnv(const std::string& chunk_label) {
  lua_State* L = L_;
  // Shared pieces, built once per VM: base allow-list with library proxies, kp shadow, strict metatable.
  if (lua_getfield(L, LUA_REGISTRYINDEX, kBaseKey) == LUA_TNIL) {
    lua_pop(L, 1);
    lua_newtable(L);  // [base]
    for (const char* name : kAllowedBase) {
      lua_getglobal(L, name);
      lua_setfield(L, -2, name);
    }
    lua_pushcfunction(L, &SandboxSetmetatable);
    lua_setfield(L, -2, "setmetatable");
      lua_pushlightuserdata(L, &alloc_->exhausted);
    lua_pushcclosure(L, &SandboxXpcall, 1);
    lua_setfield(L, -2, "xpcall");
    lua_newtable(L);  // [base, seen]
    for (const char* name : kAllowedLibs) {
      lua_getglobal(L, name);
      PushDeepApiProxy(L, -1, name, lua_gettop(L) - 1);
      lua_setfield(L, -4, name);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);  // [base]
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, kBaseKey);

    lua_createtable(L, 0, 3);  // [base, strict]
    lua_pushcfunction(L, &UndefinedGlobal);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, &UndeclaredAssignment);
    lua_setfield(L, -2, "__newindex");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setfield(L, LUA_REGISTRYINDEX, kStrictKey);
  }
  if (lua_getfield(L, LUA_REGISTRYINDEX, kKpShadowKey) == LUA_TNIL) {
    lua_pop(L, 1);
    // The shadow of kp: its entries, with every table replaced by a deep read-only proxy.
    lua_newtable(L);  // [base, shadow]
    lua_newtable(L);  // [base, shadow, seen]
    lua_getfield(L, LUA_REGISTRYINDEX, kKpKey);  // [base, shadow, seen, kp]
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {  // [base, shadow, seen, kp, k, v]
      if (lua_type(L, -1) == LUA_TTABLE) {
        std::string name = "kp";
        if (lua_type(L, -2) == LUA_TSTRING) name += std::string(".") + lua_tostring(L, -2);
        PushDeepApiProxy(L, -1, name, lua_gettop(L) - 3);
        lua_replace(L, -2);
      }
      lua_pushvalue(L, -2);
      lua_insert(L, -2);
      lua_rawset(L, -6);
    }
    lua_pop(L, 2);  // [base, shadow]
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, kKpShadowKey);
  }
  // [base, kpshadow]
  lua_newtable(L);  // [base, kpshadow, env]
  const int env = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, env - 2) != 0) {  // copy the allow-list
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, env);
  }
  // This env's own view of kp: the shared entries plus a kp.log bound to the chunk label.
  lua_newtable(L);  // [base, kpshadow, env, shadow]
  lua_pushnil(L);
  while (lua_next(L, env - 1) != 0) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -4);
  }
  lua_pushlstring(L, chunk_label.data(), chunk_label.size());
  lua_pushcclosure(L, &Log, 1);
  lua_setfield(L, -2, "log");
  PushProxy(L, -1, "kp");  // [base, kpshadow, env, shadow, proxy]
  lua_setfield(L, env, "kp");
  lua_pop(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, kStrictKey);
  lua_setmetatable(L, env);
  lua_replace(L, env - 2);  // [env, kpshadow]
  lua_pop(L, 1);           // [env]
}

std::optional<ScriptError> LuaVm::RunChunk(const std::string& source, const std::string& display_name,
                                          int nresults) {
  lua_State* L = L_;
  const std::string chunkname = "@" + display_name;
  // Text only: precompiled bytecode can break the VM's invariants.
  alloc_->memory_hit = false;
  const int status = luaL_loadbufferx(L, source.data(), source.size(), chunkname.c_str(), "t");
  if (status != LUA_OK) {  // [env, msg]
    ScriptError err;
    err.plugin = display_name;
    err.file = display_name;
    if (status == LUA_ERRMEM && alloc_->memory_hit) {
      err.message = display_name + ": memory limit of " + FormatMiB(limits_.memory_bytes) + " MiB exceeded";
    } else {
      const char* msg = lua_tostring(L, -1);
      err.message = msg != nullptr ? msg : "(error object is not a string)";
      ParsePosition(err.message, &err.file, &err.line);
    }
    lua_pop(L, 2);
    lua_gc(L, LUA_GCCOLLECT, 0);
    return err;
  }
  lua_insert(L, -2);  // [f, env]
  if (lua_setupvalue(L, -2, 1) == nullptr) lua_pop(L, 1);  // _ENV is the main chunk's only upvalue
  return Call(0, nresults, display_name);
}

namespace {

std::string Where(lua_State* L, int fn) {
  lua_Debug ar;
  lua_pushvalue(L, fn);
  lua_getinfo(L, ">S", &ar);
  return fmt::format("{}:{}", ar.short_src, ar.linedefined);
}

void FreezeFunction(lua_State* L, int fn, int seen, int visited, int record, lua_Integer* n,
                    const std::string& file, std::string* error, WalkDepth& walk);

enum class CState { kNone, kOverThread, kOwnState };

// Whether the C function at `f` (absolute) can carry values from one call to the next. One without
// upvalues cannot; a closure can only when it is not one of the host's own stateless closures (an
// iterator keeps its position in its upvalues). The host's closures are stateless when their upvalues
// are: a coroutine, or another C closure that is not, makes them carry state too.
CState CFunctionState(lua_State* L, int f, int depth) {
  if (lua_getupvalue(L, f, 1) == nullptr) return CState::kNone;
  lua_pop(L, 1);
  const lua_CFunction fn = lua_tocfunction(L, f);
  // math.random and math.randomseed of a plugin: state the host re-seeds before every call.
  if (fn == &OwnRandom || fn == &OwnRandomSeed) return CState::kNone;
  const bool stateless =
      fn == &ProxyNext || fn == &Log || fn == &SandboxXpcall || fn == &ChargedResume || fn == &ChargedWrap;
  CState state = CState::kNone;
  for (int i = 1; state != CState::kOverThread && lua_getupvalue(L, f, i) != nullptr; ++i) {
    const int t = lua_type(L, -1);
    if (t == LUA_TTHREAD) {
      state = CState::kOverThread;
    } else if (t == LUA_TFUNCTION && lua_iscfunction(L, -1) && depth < 4) {
      const CState inner = CFunctionState(L, lua_gettop(L), depth + 1);
      if (inner != CState::kNone) state = inner;
    } else if (t == LUA_TFUNCTION || t == LUA_TUSERDATA) {
      if (state == CState::kNone) state = CState::kOwnState;
    }
    lua_pop(L, 1);
  }
  if (state == CState::kNone && !stateless) state = CState::kOwnState;
  return state;
}

// Checks a value reachable from a plugin function's upvalues (absolute index `v`) for anything that could
// carry state the freeze cannot make read-only: a coroutine, a C closure over one (coroutine.wrap) or with
// state of its own (an iterator), a table with a metatable that is not one of kplab's proxies (at any
// depth), a table used as a key, a userdata its type does not declare kept (read-only ones are frozen),
// tables and functions nested more than kMaxWalkDepth deep. Lua functions found are frozen in turn. Sets
// *error (the first problem) and returns.
void CheckReachable(lua_State* L, int v, const std::string& what, const std::string& where, int seen, int visited,
                    int record, lua_Integer* n, const std::string& file, std::string* error, WalkDepth& walk) {
  if (!error->empty()) return;
  auto fail = [&](const std::string& why) {
    *error = fmt::format("{}: {} {}, which plugin API 2 cannot make read-only (state kept across documents is "
                         "refused; build it inside the call)",
                         where, what, why);
  };
  switch (lua_type(L, v)) {
    case LUA_TTHREAD:
      return fail("is a coroutine");
    case LUA_TFUNCTION:
      if (lua_iscfunction(L, v)) {
        // Host functions are fine; a C closure over a coroutine (what coroutine.wrap returns, possibly
        // wrapped again by the budget's ChargedWrap) keeps the coroutine's state between calls, and so
        // does an iterator (string.gmatch's keeps its position).
        switch (CFunctionState(L, v, 0)) {
          case CState::kOverThread:
            return fail("is a function over a coroutine (coroutine.wrap)");
          case CState::kOwnState:
            return fail("is a C function that keeps state of its own (an iterator such as string.gmatch's)");
          case CState::kNone:
            return;
        }
      }
      {
        WalkLevel level(walk, L, 6);  // a function reached from another one: a level deeper
        if (!level.ok()) return fail(std::string(level.error()) + " (tables and functions)");
        FreezeFunction(L, v, seen, visited, record, n, file, error, walk);
      }
      return;
    case LUA_TTABLE: {
      if (IsKplabProxy(L, v)) return;
      WalkLevel level(walk, L, 4);
      if (!level.ok()) return fail(std::string(level.error()) + " (tables and functions)");
      if (lua_getmetatable(L, v)) {
        lua_pop(L, 1);
        return fail("is a table with a metatable");
      }
      lua_pushvalue(L, v);
      if (lua_rawget(L, visited) != LUA_TNIL) {
        lua_pop(L, 1);
        return;
      }
      lua_pop(L, 1);
      lua_pushvalue(L, v);
      lua_pushboolean(L, 1);
      lua_rawset(L, visited);
      lua_pushnil(L);
      while (lua_next(L, v) != 0) {  // [k, val]
        const int kt = lua_type(L, -2);
        if (kt != LUA_TSTRING && kt != LUA_TNUMBER && kt != LUA_TBOOLEAN) {
          lua_pop(L, 2);
          return fail(std::string("holds a ") + lua_typename(L, kt) + " as a key");
        }
        CheckReachable(L, lua_gettop(L), what, where, seen, visited, record, n, file, error, walk);
        lua_pop(L, 1);
        if (!error->empty()) {
          lua_pop(L, 1);
          return;
        }
      }
      return;
    }
    case LUA_TUSERDATA:
    case LUA_TLIGHTUSERDATA: {
      // As the value's type declares (lua_util.h, KeptAtLoad): kplab's immutable objects stay, a Matrix
      // becomes read-only, anything else is refused.
      KeptAtLoad kept = KeptAtLoad::kRefused;
      if (lua_type(L, v) == LUA_TUSERDATA && lua_getmetatable(L, v)) {  // [mt]
        lua_getfield(L, -1, kKeptAtLoadField);
        if (lua_isinteger(L, -1)) kept = static_cast<KeptAtLoad>(lua_tointeger(L, -1));
        lua_pop(L, 1);
        if (kept == KeptAtLoad::kReadOnly) {
          lua_getfield(L, -1, "__freeze");
          lua_pushvalue(L, v);
          lua_call(L, 1, 0);
        }
        lua_pop(L, 1);
      }
      if (kept == KeptAtLoad::kRefused) return fail(std::string("is a ") + luaL_typename(L, v));
      return;
    }
    default:
      return;
  }
}

// Freezes the upvalues of the Lua function at `fn` (absolute) and of every function reachable from them.
// `seen` maps tables to their proxies (PushDeepProxy), `visited` marks functions and tables done,
// `record` receives {fn, i, value} triples.
void FreezeFunction(lua_State* L, int fn, int seen, int visited, int record, lua_Integer* n,
                    const std::string& file, std::string* error, WalkDepth& walk) {
  if (lua_iscfunction(L, fn) || !error->empty()) return;
  lua_pushvalue(L, fn);
  if (lua_rawget(L, visited) != LUA_TNIL) {
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  lua_pushvalue(L, fn);
  lua_pushboolean(L, 1);
  lua_rawset(L, visited);
  for (int i = 1;; ++i) {
    const char* name = lua_getupvalue(L, fn, i);  // [v]
    if (name == nullptr) break;
    const std::string up = name;
    if (up == "_ENV") {
      lua_pop(L, 1);
      continue;
    }
    const int v = lua_gettop(L);
    CheckReachable(L, v, "upvalue '" + up + "'", Where(L, fn), seen, visited, record, n, file, error, walk);
    if (error->empty() && lua_type(L, v) == LUA_TTABLE && !IsKplabProxy(L, v)) {
      WalkDepth tables;
      if (PushDeepProxy(L, v, "upvalue '" + up + "' of " + file + " (plugin API 2: state is read-only after load)",
                        seen, tables)) {
        lua_setupvalue(L, fn, i);
      } else {
        *error = fmt::format("{}: upvalue '{}' {}, which plugin API 2 cannot make read-only (state kept across "
                             "documents is refused; build it inside the call)",
                             Where(L, fn), up, TooDeep());
      }
    }
    lua_pop(L, 1);
    if (!error->empty()) return;
  }
  // Record every upvalue (after freezing) to detect reassignment. Values may be nil, so the count is
  // kept apart (record.n), not taken from the table's border.
  for (int i = 1;; ++i) {
    if (lua_getupvalue(L, fn, i) == nullptr) break;  // [v]
    lua_pushvalue(L, fn);
    lua_rawseti(L, record, *n + 1);
    lua_pushinteger(L, i);
    lua_rawseti(L, record, *n + 2);
    lua_rawseti(L, record, *n + 3);  // pops v
    *n += 3;
  }
}

}  // namespace

namespace {

// `root` names the whole value (for "... is nested more than 200 levels deep"), `path` the one at v.
std::string CheckPlainDataAt(lua_State* L, int v, const std::string& root, const std::string& path, int visited,
                             WalkDepth& walk) {
  switch (lua_type(L, v)) {
    case LUA_TNIL:
    case LUA_TBOOLEAN:
    case LUA_TNUMBER:
    case LUA_TSTRING:
      return "";
    case LUA_TTABLE: {
      if (IsKplabProxy(L, v)) return "";
      if (lua_getmetatable(L, v)) {
        lua_pop(L, 1);
        return path + " is a table with a metatable";
      }
      WalkLevel level(walk, L, 4);
      if (!level.ok()) return root + " " + level.error();
      lua_pushvalue(L, v);
      if (lua_rawget(L, visited) != LUA_TNIL) {
        lua_pop(L, 1);
        return "";
      }
      lua_pop(L, 1);
      lua_pushvalue(L, v);
      lua_pushboolean(L, 1);
      lua_rawset(L, visited);
      lua_pushnil(L);
      while (lua_next(L, v) != 0) {
        const int kt = lua_type(L, -2);
        if (kt != LUA_TSTRING && kt != LUA_TNUMBER && kt != LUA_TBOOLEAN) {
          lua_pop(L, 2);
          return path + " has a " + lua_typename(L, kt) + " key";
        }
        std::string sub = path + "[" + (kt == LUA_TSTRING ? std::string(lua_tostring(L, -2)) : "...") + "]";
        std::string e = CheckPlainDataAt(L, lua_gettop(L), root, sub, visited, walk);
        lua_pop(L, 1);
        if (!e.empty()) {
          lua_pop(L, 1);
          return e;
        }
      }
      return "";
    }
    default:
      return path + " is a " + luaL_typename(L, v);
  }
}

}  // namespace

std::string CheckPlainData(lua_State* L, int idx, const std::string& what) {
  idx = lua_absindex(L, idx);
  lua_newtable(L);
  WalkDepth walk;
  std::string e = CheckPlainDataAt(L, idx, what, what, lua_gettop(L), walk);
  lua_pop(L, 1);
  return e;
}

void FreezeTableFields(lua_State* L, int idx, const std::string& name) {
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {  // [k, v]
    // A table with a metatable is one of the host's views already (a proxy, the strict profile).
    bool plain = false;
    if (lua_type(L, -1) == LUA_TTABLE && !IsKplabProxy(L, -1)) {
      plain = !lua_getmetatable(L, -1);
      if (!plain) lua_pop(L, 1);
    }
    if (plain) {
      const std::string sub = lua_type(L, -2) == LUA_TSTRING ? name + "." + lua_tostring(L, -2) : name;
      // ctx's own tables are the host's, and a plugin's data in them is a proxy already (made, and its depth
      // checked, when it entered ctx), so a refusal here is the host's bug.
      if (std::string e = PushDeepReadOnly(L, -1, sub); !e.empty()) throw std::logic_error(e);  // [k, v, proxy]
      lua_pushvalue(L, -3);
      lua_insert(L, -2);
      lua_rawset(L, idx);  // replacing an existing field is allowed during traversal
    }
    lua_pop(L, 1);
  }
}

std::uint64_t SeedKey(std::string_view a, std::string_view b) {
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a, 64 bits
  auto add = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ull;
  };
  for (char c : a) add(static_cast<unsigned char>(c));
  add(0);
  for (char c : b) add(static_cast<unsigned char>(c));
  return h;
}

void SeedOwnRandom(lua_State* L, int random_ref, std::uint64_t n1, std::uint64_t n2) {
  if (random_ref < 0) return;
  lua_rawgeti(L, LUA_REGISTRYINDEX, random_ref);
  if (auto* g = static_cast<OwnRandomState*>(lua_touserdata(L, -1)); g != nullptr) SetSeed(g->s, n1, n2);
  lua_pop(L, 1);
}

int LuaVm::GiveOwnRandom(int env, std::uint64_t n1, std::uint64_t n2) {
  lua_State* L = L_;
  env = lua_absindex(L, env);
  if (luaL_getmetatable(L, kRandomMeta) == LUA_TNIL) {
    static const luaL_Reg kNone[] = {{nullptr, nullptr}};
    DefineType<OwnRandomState>(L, kRandomMeta, kNone);
  }
  lua_pop(L, 1);
  lua_newtable(L);  // [shadow]: the math library, then this environment's random and randomseed
  lua_getglobal(L, LUA_MATHLIBNAME);
  lua_pushnil(L);
  while (lua_next(L, -2) != 0) {  // [shadow, math, k, v]
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -5);
  }
  lua_pop(L, 1);                                          // [shadow]
  auto* g = NewUserdata<OwnRandomState>(L, kRandomMeta);  // [shadow, rng]
  SetSeed(g->s, n1, n2);
  lua_pushvalue(L, -1);
  const int ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pushvalue(L, -1);
  lua_pushcclosure(L, &OwnRandom, 1);
  lua_setfield(L, -3, "random");
  lua_pushcclosure(L, &OwnRandomSeed, 1);
  lua_setfield(L, -2, "randomseed");  // [shadow]
  lua_pushliteral(L, LUA_MATHLIBNAME);
  PushReadOnlyProxy(L, -2, LUA_MATHLIBNAME);
  lua_rawset(L, env);
  lua_pop(L, 1);
  return ref;
}

std::string PushDeepReadOnly(lua_State* L, int idx, const std::string& name) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) != LUA_TTABLE || lua_getmetatable(L, idx)) {
    if (lua_type(L, idx) == LUA_TTABLE) lua_pop(L, 1);
    lua_pushvalue(L, idx);  // not a table, or one with a metatable: as it is
    return "";
  }
  lua_newtable(L);  // [seen]
  WalkDepth walk;
  if (!PushDeepProxy(L, idx, name, lua_gettop(L), walk)) {
    lua_pop(L, 1);
    return name + " " + TooDeep();
  }
  lua_remove(L, -2);
  return "";
}

Result<int> LuaVm::FreezeState(int env, int fns, const std::string& plugin_file) {
  lua_State* L = L_;
  env = lua_absindex(L, env);
  fns = lua_absindex(L, fns);
  // The environment: its entries move to a shadow read through __index; the env itself stays empty and
  // refuses writes, so `ipairs = f` or a global counter cannot carry anything between documents.
  lua_newtable(L);  // [shadow]
  const int shadow = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, env) != 0) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, shadow);
  }
  lua_pushnil(L);
  while (lua_next(L, shadow) != 0) {
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_pushnil(L);
    lua_rawset(L, env);
  }
  if (lua_getmetatable(L, env)) lua_setmetatable(L, shadow);  // the strict one: undefined globals still raise
  lua_createtable(L, 0, 3);  // [shadow, mt]
  lua_pushvalue(L, shadow);
  lua_setfield(L, -2, "__index");
  const std::string what = "the globals of " + plugin_file + " (plugin API 2: state is read-only after load)";
  lua_pushlstring(L, what.data(), what.size());
  lua_pushcclosure(L, &ReadOnlyNewIndex, 1);
  lua_setfield(L, -2, "__newindex");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, env);
  lua_pop(L, 1);  // []

  lua_newtable(L);  // [seen]
  lua_newtable(L);  // [seen, visited]
  lua_newtable(L);  // [seen, visited, record]
  const int record = lua_gettop(L), visited = record - 1, seen = record - 2;
  const lua_Unsigned n_fns = lua_rawlen(L, fns);
  lua_Integer n = 0;
  std::string error;
  for (lua_Unsigned i = 1; i <= n_fns; ++i) {
    if (lua_rawgeti(L, fns, static_cast<lua_Integer>(i)) == LUA_TFUNCTION) {
      WalkDepth walk;
      FreezeFunction(L, lua_gettop(L), seen, visited, record, &n, plugin_file, &error, walk);
    }
    lua_pop(L, 1);
  }
  if (!error.empty()) {
    lua_pop(L, 3);
    return Error::Script(error);
  }
  lua_pushinteger(L, n);
  lua_setfield(L, record, "n");
  const int ref = luaL_ref(L, LUA_REGISTRYINDEX);  // pops record
  lua_pop(L, 2);
  return ref;
}

std::string LuaVm::CheckState(int record_ref) const {
  lua_State* L = L_;
  if (record_ref < 0) return "";
  lua_rawgeti(L, LUA_REGISTRYINDEX, record_ref);  // [record]
  const int record = lua_gettop(L);
  lua_getfield(L, record, "n");
  const lua_Integer n = lua_tointeger(L, -1);
  lua_pop(L, 1);
  std::string error;
  for (lua_Integer k = 1; k + 2 <= n && error.empty(); k += 3) {
    lua_rawgeti(L, record, k);      // [fn]
    lua_rawgeti(L, record, k + 1);  // [fn, i]
    const int i = static_cast<int>(lua_tointeger(L, -1));
    lua_pop(L, 1);
    const char* name = lua_getupvalue(L, -1, i);  // [fn, now]
    lua_rawgeti(L, record, k + 2);                // [fn, now, then]
    bool same = lua_rawequal(L, -1, -2);
    if (!same && lua_type(L, -1) == LUA_TNUMBER && lua_type(L, -2) == LUA_TNUMBER) {
      same = std::isnan(lua_tonumber(L, -1)) && std::isnan(lua_tonumber(L, -2));
    }
    if (!same) {
      lua_Debug ar;
      lua_pushvalue(L, -3);
      lua_getinfo(L, ">S", &ar);
      std::string src = ar.short_src;
      error = fmt::format("{}:{}: upvalue '{}' of this function changed between documents (plugin API 2 refuses "
                          "state kept across documents: results would depend on how documents are split among "
                          "lanes; keep values per document, or declare a run-level value with c:custom)",
                          src, ar.linedefined, name != nullptr ? name : "?");
    }
    lua_pop(L, 3);
  }
  lua_pop(L, 1);
  return error;
}

std::optional<ScriptError> LuaVm::Call(int nargs, int nresults, const std::string& plugin_label) {
  lua_State* L = L_;
  const int base = lua_gettop(L) - nargs;  // index of the function
  // The message handler is made once per VM; the function's file is only looked up on an error (a
  // copy of the function is kept below the handler for that). Calls are per document: no allocation
  // on the success path.
  if (handler_ref_ == LUA_NOREF) {
    lua_pushlightuserdata(L, alloc_.get());
    lua_pushcclosure(L, &Alloc::MessageHandler, 1);
    handler_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  lua_pushvalue(L, base);  // [f, args..., f]
  lua_insert(L, base);     // [f', f, args...]
  lua_rawgeti(L, LUA_REGISTRYINDEX, handler_ref_);
  lua_insert(L, base + 1);  // [f', handler, f, args...]
  const int handler = base + 1;

  // A binding that calls back into a script (the REPL's help(name) loads the plugin) runs the inner
  // call under the outer call's budget and deadline: starting fresh ones, and leaving the meter off when
  // the inner call returned, let the rest of the outer call run unmetered.
  const bool nested = alloc_->metered;
  alloc_->memory_hit = false;
  alloc_->traceback.clear();
  if (!nested) {
    // A fresh budget and deadline per call. The hook is armed whatever the budget: it also watches the
    // clocks and Ctrl-C.
    alloc_->spent = 0;
    alloc_->exhausted = false;
    alloc_->kill_message.clear();
    alloc_->native_since_clock = 0;
    alloc_->deadline = DeadlineAfter(Clock::now(), limits_.seconds);
  }
  // The hook stays armed between calls (it charges nothing while no call is metered), so the count of a
  // call shorter than one block carries into the next call's first block and every instruction reaches
  // the run's budget; re-arming would restart the count (lua_sethook resets it), and 20,000 calls of 500
  // instructions each would never charge the run. A per-call budget below one block restarts per call.
  if (!nested &&
      (lua_gethook(L) != &Alloc::Hook || lua_gethookcount(L) != alloc_->every || alloc_->every != kHookEvery)) {
    lua_sethook(L, &Alloc::Hook, LUA_MASKCOUNT, alloc_->every);
  }

  int status = LUA_OK;
  std::string exception_text;
  bool panicked = false;
  FileScope files(file_grants_);  // what the called code may open: its VM's grants, nothing else
  try {
    alloc_->metered = true;
    status = lua_pcall(L, nargs, nresults, handler);
    alloc_->metered = nested;
  } catch (const std::exception& e) {
    // Lua built as C++ catches everything inside lua_pcall; this only guards against a throw outside
    // its protected region. The stack is in an unknown state: drop everything from the function up.
    alloc_->metered = nested;
    exception_text = e.what();
    panicked = dynamic_cast<const LuaPanicError*>(&e) != nullptr;
    lua_settop(L, base);  // keep f'
    status = -1;
  }
  // Host code between calls runs unmetered: the hook returns at once while `metered` is false.
  if (alloc_->every != kHookEvery && !nested) lua_sethook(L, nullptr, 0, 0);

  if (status == LUA_OK) {
    lua_remove(L, handler);
    lua_remove(L, base);
    return std::nullopt;
  }
  // Where the function lives, for errors that carry no position (memory, C++ exceptions).
  std::string where_file;
  {
    lua_Debug ar;
    lua_pushvalue(L, base);
    if (lua_type(L, -1) == LUA_TFUNCTION && lua_getinfo(L, ">S", &ar) != 0) {
      where_file = FileOfSource(ar.source);
    } else {
      lua_pop(L, 1);
    }
  }
  const std::string where = where_file.empty() ? plugin_label : where_file;
  ScriptError err;
  err.plugin = plugin_label;
  err.file = where_file;
  if (exception_text.empty()) {
    const char* msg = lua_tostring(L, -1);
    err.message = msg != nullptr ? msg : "";
  }
  lua_settop(L, base - 1);
  if (alloc_->exhausted) {
    // Whatever the script did after the kill (pcall, xpcall handlers), report the kill itself.
    err.message = alloc_->kill_message;
    if (err.message == alloc_->kill_text) err.message = where + ": " + alloc_->kill_text;  // no position
    err.traceback = alloc_->traceback;
  } else if (status == LUA_ERRMEM || (alloc_->memory_hit && err.message == "not enough memory")) {
    err.message = where + ": memory limit of " + FormatMiB(limits_.memory_bytes) + " MiB exceeded";
  } else if (!exception_text.empty() && panicked) {
    err.message = exception_text;  // the Lua error's own text, position included
  } else if (!exception_text.empty()) {
    err.message = where + ": unexpected C++ exception: " + exception_text;
  } else if (status != LUA_ERRRUN && status != LUA_ERRERR) {
    // Lua's own catch(...) turned a foreign C++ exception into an unknown status; its text is lost.
    err.message = where + ": a native function threw a C++ exception instead of raising a Lua error";
  } else {
    err.traceback = alloc_->traceback;
  }
  ParsePosition(err.message, &err.file, &err.line);
  if (alloc_->memory_hit) lua_gc(L, LUA_GCCOLLECT, 0);  // give the memory back before the next call
  return err;
}

Result<PluginFile> ReadPluginFile(const std::string& path, const std::string& display_name, bool configured) {
  std::optional<UserFileScope> user;
  if (configured) user.emplace();
  // Regular files only: a FIFO or /dev/zero named x.lua must not hang or exhaust the host.
  Result<std::string> bytes = ReadRegularFile(path, "a Lua plugin file");
  if (!bytes)
    return Error(bytes.error().kind, display_name + bytes.error().message.substr(path.size()));  // "PATH: ..."
  PluginFile file;
  file.name = fs::path(path).stem().string();
  file.path = path;
  file.configured = configured;
  file.display_name = display_name;
  file.source = std::move(bytes).value();

  std::string_view first(file.source);
  first = first.substr(0, first.find('\n'));
  if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
  constexpr std::string_view kPrefix = "-- kplab-api: ";
  const std::string expected = "-- kplab-api: " + std::to_string(kApiVersion);
  std::string_view digits = first.substr(std::min(first.size(), kPrefix.size()));
  if (!first.starts_with(kPrefix) || digits.empty() || digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return Error::Script(display_name + ":1: missing API header (expected '" + expected + "' on the first line)");
  }
  file.api_version = std::stoi(std::string(digits));
  if (file.api_version < kOldestApiVersion || file.api_version > kApiVersion) {
    return Error::Script(display_name + ":1: unsupported API version " + std::to_string(file.api_version) +
                         " (expected '" + expected + "', or 1 for plugins written before API 2)");
  }
  file.sha256 = Sha256Hex(file.source);
  return file;
}

Result<std::vector<PluginFile>> ListPlugins(const std::string& shipped_dir, const std::vector<std::string>& user_dirs) {
  // (directory, shipped?, configured?) in override order: later wins.
  struct Dir {
    std::string path;
    bool shipped, configured;
  };
  std::vector<Dir> dirs = {{shipped_dir, true, true}};
  if (const char* path = std::getenv("KPLAB_PLUGIN_PATH"); path != nullptr) {
    std::stringstream ss(path);
    for (std::string dir; std::getline(ss, dir, ':');) {
      if (!dir.empty()) dirs.push_back({dir, false, true});
    }
  }
  for (const std::string& dir : user_dirs) dirs.push_back({dir, false, false});

  std::map<std::string, PluginFile> by_name;
  for (const auto& [dir, shipped, configured] : dirs) {
    std::error_code ec;
    std::vector<std::string> names;
    std::optional<UserFileScope> user;
    if (configured) user.emplace();
    if (Status st = GateFile(dir, FileAccess::kRead); !st.ok()) return st.error();
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      // Editor droppings (".#x.lua") and directories are not plugins. Nothing else is looked at here
      // (a link loop or FIFO is only an error once selected and read).
      std::error_code type_ec;
      if (name.size() > 4 && name.ends_with(".lua") && name[0] != '.' && !it->is_directory(type_ec)) {
        names.push_back(name);
      }
    }
    if (ec) return Error::Input(dir + ": cannot read plugin directory (" + ec.message() + ")");
    std::string prefix = dir;
    while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
    for (const std::string& name : names) {
      PluginFile file;
      file.path = prefix + "/" + name;
      file.name = fs::path(name).stem().string();
      file.display_name = shipped ? "plugins/" + name : file.path;
      file.configured = configured;
      by_name[file.name] = std::move(file);
    }
  }
  std::vector<PluginFile> out;
  out.reserve(by_name.size());
  for (auto& [name, file] : by_name) out.push_back(std::move(file));
  return out;
}

Result<std::vector<PluginFile>> DiscoverPlugins(const std::string& shipped_dir,
                                                const std::vector<std::string>& user_dirs) {
  auto listed = ListPlugins(shipped_dir, user_dirs);
  if (!listed) return listed.error();
  std::vector<PluginFile> out;
  out.reserve(listed->size());
  for (const PluginFile& entry : *listed) {
    Result<PluginFile> file = ReadPluginFile(entry.path, entry.display_name, entry.configured);
    if (!file) return file.error();
    out.push_back(std::move(file).value());
  }
  return out;
}

std::string ShippedPluginDir() {
  if (const char* dir = std::getenv("KPLAB_SHIPPED_PLUGINS"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  // Installed: relative to the binary holding this code (bin/kplab, lib/libkplab_c.so, the Lua module
  // in lib/lua/5.4), then to the running executable (a program linking the static kplab::host).
  std::vector<fs::path> bases;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&ShippedPluginDir), &info) != 0 && info.dli_fname != nullptr &&
      info.dli_fname[0] == '/') {
    bases.push_back(fs::path(info.dli_fname).parent_path());
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) bases.push_back(exe.parent_path());
  for (const fs::path& base : bases) {
    std::stringstream rels(KPLAB_INSTALLED_PLUGIN_DIRS);
    for (std::string rel; std::getline(rels, rel, ':');) {
      const fs::path installed = (base / rel).lexically_normal();
      if (fs::is_directory(installed, ec)) return installed.string();
    }
  }
  return KPLAB_SHIPPED_PLUGIN_DIR;
}

}  // namespace kplab::host
