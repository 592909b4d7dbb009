// libFuzzer harness for the Lua API: the input bytes are read as a program of random kp.* calls with
// random arguments (numbers including huge, NaN, infinite and negative ones; strings; tables, nested
// tables, tables with hostile metamethods; userdata returned by earlier calls; nil), which is turned
// into Lua source and run in the sandbox exactly as `kplab run` runs a script (LuaVm + InstallAll +
// the script API, a sandboxed environment, RunChunk under a memory cap and an instruction budget).
// Each call is wrapped in pcall, so a call must either return or raise a Lua error: any crash,
// sanitizer report, abort, uncaught C++ exception, or hang (libFuzzer -timeout) is a finding.
//
// The API's names come from the embedded LuaLS stubs (docs/lua/kp.lua): every `function kp.a.b(`
// is a function to call, every `function Class:m(` a method to call on any value of the pool (any
// type, so the bindings' self checks are exercised too), and the quoted words and `name:` fields of
// the stubs are the strings and option keys arguments are drawn from. A new binding documented in the
// stubs is fuzzed without touching this file.
//
// Beyond the kp API: the library functions whose loops a script drives (table.insert, string.rep, ...),
// values built to hurt the host's walks and meters — tables nested up to 10,000 deep, metatables on keys
// and values (looping or allocating __tostring, __pairs, __index, a lying __len), closures that keep
// state, coroutines — and, after the program, the walks themselves over every value it left in V: the
// plain-data check, the deep read-only copy and the freeze of plugin API 2 (sandbox.h), as `columns`,
// `prepare` and a plugin's upvalues would reach them.
//
// Left out on purpose: kp.write (it writes files where its fuzzed argument says), kp.read and
// kp.runs.* (file and database access are confined to the directories a script was granted, tested in
// tests/host/hostile_inputs_test.cc), kp.log (prints).
// KPLAB_FUZZ_SKIP=FILE names more functions, methods or fields not to generate, one a line ('#'
// comments; a metamethod such as __len also keeps argument tables from carrying it): run_smoke.sh passes
// tests/fuzz/known_open.txt, the findings already reported and still open, so that the CI smoke run looks for new ones.
//
// Input: a sequence of operations, each starting with an opcode byte (see Generator::Op); the bytes
// after it choose the callee and the arguments. KPLAB_FUZZ_PRINT=1 prints the generated Lua (to
// reproduce a finding under `kplab run`).
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <lua.hpp>

#include "evaluate.h"
#include "lua_script.h"
#include "sandbox.h"

extern "C" const unsigned char kplab_kp_stubs[];
extern "C" const unsigned long kplab_kp_stubs_size;

namespace {

constexpr int kPool = 16;     // values V[1..kPool]
constexpr int kMaxOps = 48;   // operations per input
constexpr int kMaxDepth = 3;  // table nesting

struct Api {
  std::vector<std::string> functions;  // "kp.stats.mean"
  std::vector<std::string> methods;    // "match"
  std::vector<std::string> fields;     // "preds", "__gc", ...
  std::vector<std::string> strings;    // argument strings
  std::vector<std::string> keys;       // option-table keys
  std::vector<std::string> metas;      // hostile metatables for argument tables
  std::string tiny;                    // examples/tiny (absolute)
};

std::string LuaQuote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03u", c);
      out += buf;
    }
  }
  return out + "\"";
}

const Api& GetApi() {
  static const Api api = [] {
    Api a;
    std::set<std::string> skip = {"kp.write", "kp.read", "kp.runs.list", "kp.runs.get", "kp.log"};
    if (const char* file = std::getenv("KPLAB_FUZZ_SKIP")) {
      std::ifstream in(file);
      if (!in) {
        std::fprintf(stderr, "fuzz_lua_api: cannot read KPLAB_FUZZ_SKIP=%s\n", file);
        std::abort();
      }
      for (std::string line; std::getline(in, line);) {
        line = line.substr(0, line.find('#'));
        const auto b = line.find_first_not_of(" \t"), e = line.find_last_not_of(" \t\r");
        if (b != std::string::npos) skip.insert(line.substr(b, e - b + 1));
      }
    }
    const std::string stubs(reinterpret_cast<const char*>(kplab_kp_stubs), kplab_kp_stubs_size);
    std::set<std::string> functions, methods, fields, strings, keys;
    const std::regex fn(R"(^function (kp(?:\.[a-z_0-9]+)+)\()");
    const std::regex method(R"(^function [A-Z][A-Za-z]*:([a-z_0-9]+)\()");
    const std::regex field(R"(^---@field ([a-z_0-9]+))");
    const std::regex quoted(R"re("([A-Za-z_:0-9 ]{1,24})")re");
    const std::regex key(R"(([a-z_][a-z_0-9]*)\??: )");
    std::size_t start = 0;
    while (start < stubs.size()) {
      std::size_t end = stubs.find('\n', start);
      if (end == std::string::npos) end = stubs.size();
      const std::string line = stubs.substr(start, end - start);
      start = end + 1;
      std::smatch m;
      if (std::regex_search(line, m, fn)) functions.insert(m[1]);
      if (std::regex_search(line, m, method)) methods.insert(m[1]);
      if (std::regex_search(line, m, field)) fields.insert(m[1]);
      for (auto it = std::sregex_iterator(line.begin(), line.end(), quoted); it != std::sregex_iterator(); ++it)
        strings.insert((*it)[1]);
      if (line.rfind("---@param", 0) == 0 || line.rfind("---@return", 0) == 0) {
        for (auto it = std::sregex_iterator(line.begin(), line.end(), key); it != std::sregex_iterator(); ++it)
          keys.insert((*it)[1]);
      }
    }
    // Metamethods and internals reachable as fields are part of the attack surface
    // (docs/plugins.md, "Sandbox").
    for (const char* f : {"__gc", "__close", "__index", "__newindex", "__len", "__eq", "__name",
                          "__metatable", "__tostring", "__call"})
      fields.insert(f);
    // The library functions whose cost depends on what a script passes (lua_stdlib.cc, lua_pattern.cc).
    for (const char* f : {"table.insert", "table.remove", "table.move", "table.concat", "table.unpack", "table.sort",
                          "string.rep", "string.format", "string.byte", "string.gsub", "utf8.len", "tostring",
                          "pairs", "next", "select", "coroutine.resume", "coroutine.close", "coroutine.wrap"})
      functions.insert(f);
    for (const auto& f : functions)
      if (!skip.count(f)) a.functions.push_back(f);
    for (const auto& m : methods)
      if (!skip.count(m)) a.methods.push_back(m);
    for (const auto& f : fields)
      if (!skip.count(f)) a.fields.push_back(f);
    a.strings.assign(strings.begin(), strings.end());
    for (const char* s : {"", " ", "a", "neural network", "<eos>", "[sep]", "<peos>", ";", "\xc3\xa9t\xc3\xa9",
                          "kplab:stem=none", "exact", "zg", "substr"})
      a.strings.push_back(s);
    a.keys.assign(keys.begin(), keys.end());
    // A metamethod named in the skip file also stops argument tables from carrying it.
    const std::pair<const char*, const char*> kMetas[] = {
        {"__len", "{__len = function() return 3e9 end}"},
        {"__len", "{__len = function() return -1 end}"},
        {"__len", "{__len = function() return 0/0 end}"},
        {"__index", "{__index = function() error('boom') end}"},
        {"__index", "{__index = function(t, k) return k end}"},
        {"__len", "{__len = function() error('len') end}"},
        {"__eq", "{__eq = function() return true end}"},
        {"__lt", "{__lt = function() error('lt') end}"},
        // Metamethods the host must never run outside a metered call (docs/design-notes.md, note 37):
        // looping, allocating, lying, or C functions (which run no instruction).
        {"__tostring", "{__tostring = function() while true do end end}"},
        {"__tostring", "{__tostring = function() return string.rep('x', 1 << 28) end}"},
        {"__tostring", "{__tostring = function(t) return tostring(t) end}"},
        {"__pairs", "{__pairs = function() while true do end end}"},
        {"__index", "{__index = function(t) return t end}"},
        {"__len", "{__len = function() return 1 << 62 end, __index = rawlen, __newindex = rawequal}"},
        {"__name", "{__name = 'kplab.Matrix'}"},
        {"__close", "{__close = function() while true do end end}"}};
    for (const auto& [name, meta] : kMetas)
      if (!skip.count(name)) a.metas.push_back(meta);
    a.tiny = std::filesystem::absolute(KPLAB_SOURCE_DIR "/examples/tiny").string();
    if (a.functions.size() < 20 || a.methods.size() < 20 || a.keys.empty()) {
      std::fprintf(stderr, "fuzz_lua_api: the stubs gave %zu functions, %zu methods: parser out of date?\n",
                   a.functions.size(), a.methods.size());
      std::abort();
    }
    return a;
  }();
  return api;
}

class Generator {
 public:
  Generator(const std::uint8_t* data, std::size_t size, const Api& api) : p_(data), end_(data + size), api_(api) {}

  std::string Program() {
    std::string src;
    src += "local V = {}\n";
    src += "local function try(f) local ok, r = pcall(f) return r end\n";
    src += "local TINY = " + LuaQuote(api_.tiny) + "\n";
    // Userdata of every kind to start from: a corpus with predictions, a document, its lists, a match,
    // a matrix.
    src += "V[1] = try(function() return kp.load{dataset = TINY, predictions = TINY .. '/predictions.txt'} end)\n";
    src += "V[2] = try(function() return V[1]:doc(1) end)\n";
    src += "V[3] = try(function() return V[2].preds end)\n";
    src += "V[4] = try(function() return V[2].refs end)\n";
    src += "V[5] = try(function() return V[3]:match(V[4]) end)\n";
    src += "V[6] = try(function() return kp.matrix{{1, 0.5}, {0.25, 2}} end)\n";
    for (int op = 0; op < kMaxOps && p_ < end_; ++op) src += Op();
    src += "return V\n";  // the harness walks what is left
    return src;
  }

 private:
  std::uint8_t Byte() { return p_ < end_ ? *p_++ : 0; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    const std::size_t i = (static_cast<std::size_t>(Byte()) << 8 | Byte()) % v.size();
    return v[i];
  }
  std::string Slot() { return "V[" + std::to_string(Byte() % kPool + 1) + "]"; }

  std::string Number() {
    static const char* kNumbers[] = {
        "0", "1", "-1", "2", "3", "5", "10", "100", "1000", "1e6", "0.5", "-0.5", "1e9", "-1e9",
        "2^31", "2^32", "3e9", "2^53", "1e18", "math.maxinteger", "math.mininteger", "1/0", "-1/0",
        "0/0", "1e308", "-0.0", "1e-300", "-2^31", "2^63", "7", "0.999", "math.pi"};
    const std::uint8_t b = Byte();
    if (b < 128) return std::to_string(static_cast<int>(Byte()) - 128);  // small integers
    return kNumbers[b % (sizeof kNumbers / sizeof *kNumbers)];
  }

  std::string String() {
    const std::uint8_t b = Byte();
    if (b < 160) return LuaQuote(Pick(api_.strings));
    if (b < 200) {  // raw bytes from the input
      const std::size_t n = Byte() % 32;
      std::string s;
      for (std::size_t i = 0; i < n && p_ < end_; ++i) s += static_cast<char>(*p_++);
      return LuaQuote(s);
    }
    if (b < 230) return "TINY";
    // Long strings: what makes natives run long or allocate.
    static const char* kUnits[] = {"'a'", "'ab '", "'neural network '", "'\\0'", "'\\xff'"};
    // Up to 100,000: enough to expose a quadratic native (1e10 steps), while a linear one stays well
    // inside the 10 s timeout under ASan (a few 1,000,000-byte tokenizations made false timeouts).
    static const char* kCounts[] = {"100", "1000", "10000", "100000"};
    return "string.rep(" + std::string(kUnits[Byte() % 5]) + ", " + kCounts[Byte() % 4] + ")";
  }

  // A table nested `n` deep through key 1, built in Lua (the source could not nest past 200).
  std::string Deep() {
    static const char* kDepths[] = {"10", "100", "199", "200", "201", "1000", "10000"};
    return "(function() local t = {} local c = t for _ = 2, " + std::string(kDepths[Byte() % 7]) +
           " do local n = {} c[1] = n c = n end return t end)()";
  }

  // A value that keeps state between calls: a counting closure, a coroutine, a wrapped coroutine.
  std::string Stateful() {
    switch (Byte() % 4) {
      case 0: return "(function() local n = 0 return function(...) n = n + 1 return n, ... end end)()";
      case 1: return "coroutine.create(function(...) local n = 0 while true do n = n + 1 coroutine.yield(n, ...) end end)";
      case 2: return "coroutine.wrap(function(...) while true do coroutine.yield(...) end end)";
      default: return "(function() local seen = {} return function(k) seen[#seen + 1] = k return #seen end end)()";
    }
  }

  std::string Table(int depth) {
    const std::uint8_t kind = Byte() % 11;
    const int n = Byte() % 8;
    std::string t = "{";
    switch (kind) {
      case 0:  // array of numbers
        for (int i = 0; i < n; ++i) t += Number() + ",";
        return t + "}";
      case 1:  // array of strings
        for (int i = 0; i < n; ++i) t += String() + ",";
        return t + "}";
      case 2:  // rows (array of arrays)
        for (int i = 0; i < n; ++i) t += Table(depth + 1) + ",";
        return t + "}";
      case 3:
      case 4:  // an options table
        for (int i = 0; i < n % 5; ++i) t += "[" + LuaQuote(Pick(api_.keys)) + "] = " + Value(depth + 1) + ",";
        return t + "}";
      case 5: {  // a big array built in Lua
        static const char* kSizes[] = {"1000", "10000", "100000"};
        return "(function() local t = {} for i = 1, " + std::string(kSizes[Byte() % 3]) +
               " do t[i] = i % 7 end return t end)()";
      }
      case 6: {  // hostile metamethods
        if (api_.metas.empty()) return "{}";
        return "setmetatable({" + (n > 0 ? Number() + "," + Number() : std::string()) + "}, " +
               Pick(api_.metas) + ")";
      }
      case 7:
        return Deep();
      case 8: {  // a key with a metatable
        if (api_.metas.empty()) return "{}";
        return "{[setmetatable({}, " + Pick(api_.metas) + ")] = " + Value(depth + 1) + "}";
      }
      case 9:  // shared and cyclic sub-tables
        return "(function() local a = {" + Number() + "} local t = {a, a, {a}} t[4] = t return t end)()";
      default:  // mixed
        for (int i = 0; i < n; ++i) t += Value(depth + 1) + ",";
        return t + "}";
    }
  }

  std::string Value(int depth = 0) {
    const std::uint8_t b = Byte() % 16;
    if (b == 0) return "nil";
    if (b <= 3) return Number();
    if (b <= 6) return String();
    if (b <= 10) return Slot();
    if (b == 11) return Byte() & 1 ? "true" : "false";
    if (b == 12) return Byte() & 1 ? "function() return " + Slot() + " end" : Stateful();
    if (depth >= kMaxDepth) return Number();
    return Table(depth);
  }

  std::string Args(std::size_t first = 0) {
    const int n = Byte() % 5;
    std::string a;
    for (int i = 0; i < n; ++i) a += (first + i > 0 ? ", " : "") + Value();
    return a;
  }

  // One operation: a call, a field read or a field write, in pcall.
  std::string Op() {
    const std::string dst = Slot();
    std::string expr;
    switch (Byte() % 8) {
      case 0:
      case 1:
      case 2:  // kp function
        expr = Pick(api_.functions) + "(" + Args() + ")";
        break;
      case 3:
      case 4: {  // method on a pool value
        const std::string obj = Slot();
        expr = obj + ":" + Pick(api_.methods) + "(" + Args() + ")";
        break;
      }
      case 5: {  // method taken from one value, called with another as self
        const std::string obj = Slot(), method = Pick(api_.methods), self = Value();
        const std::string args = Args(1);
        expr = obj + "." + method + "(" + self + args + ")";
        break;
      }
      case 6: {  // field, index, length
        const std::string obj = Slot();
        switch (Byte() % 4) {
          case 0: expr = obj + "." + Pick(api_.fields); break;
          case 1: expr = obj + "[" + Number() + "]"; break;
          case 2: expr = "#" + obj; break;
          default: expr = obj + "." + Pick(api_.fields) + "(" + Slot() + ")"; break;
        }
        break;
      }
      default:  // write to a userdata or a kp table (must be refused, never corrupt)
        expr = "(function() " + Slot() + "." + Pick(api_.fields) + " = " + Value() + " end)()";
        break;
    }
    // Only successful results replace a pool value, so the userdata made so far stay reachable.
    return "do local ok, r = pcall(function() return " + expr + " end) if ok then " + dst + " = r end end\n";
  }

  const std::uint8_t* p_;
  const std::uint8_t* end_;
  const Api& api_;
};

// The host's walks over every value the program left in V (on top of the stack, popped): the plain-data
// check and deep read-only copy of what columns() and prepare() return, and the freeze of plugin API 2
// over the functions. Each must finish with a value or a clear error, whatever it is given.
void WalkPool(kplab::host::LuaVm& vm) {
  lua_State* L = vm.state();
  const int pool = lua_gettop(L);
  if (lua_type(L, pool) != LUA_TTABLE) {
    lua_settop(L, pool - 1);
    return;
  }
  lua_newtable(L);  // [pool, fns]
  const int fns = lua_gettop(L);
  int n_fns = 0;
  for (int i = 1; i <= kPool; ++i) {
    lua_rawgeti(L, pool, i);
    (void)kplab::host::CheckPlainData(L, -1, "V[" + std::to_string(i) + "]");
    if (kplab::host::CheckPlainData(L, -1, "v").empty()) {
      (void)kplab::host::PushDeepReadOnly(L, -1, "v");
      lua_settop(L, fns + 1);
    }
    if (lua_type(L, -1) == LUA_TFUNCTION) {
      lua_rawseti(L, fns, ++n_fns);
    } else {
      lua_pop(L, 1);
    }
  }
  vm.PushSandboxEnv("fuzz-plugin.lua");  // [pool, fns, env]
  const kplab::Result<int> frozen = vm.FreezeState(lua_gettop(L), fns, "fuzz-plugin.lua");
  if (frozen) {
    (void)vm.CheckState(*frozen);
    luaL_unref(L, LUA_REGISTRYINDEX, *frozen);
  }
  lua_settop(L, pool - 1);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Whatever the API may create on its own (the run store kp.neighbors opens, model and cache
  // directories under HOME) goes to a private directory, not the checkout or the user's home. The
  // working directory stays: libFuzzer reads its inputs and writes its artifacts relative to it.
  static char tmpl[] = "/tmp/kplab-fuzz-lua-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    std::perror("fuzz_lua_api: temporary directory");
    std::abort();
  }
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(tmpl, ec);
  });
  setenv("HOME", tmpl, 1);
  setenv("XDG_DATA_HOME", tmpl, 1);
  setenv("XDG_CACHE_HOME", tmpl, 1);
  setenv("KPLAB_DB", (std::string(tmpl) + "/kplab.db").c_str(), 1);
  unsetenv("KPLAB_PLUGIN_PATH");
  GetApi();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Api& api = GetApi();
  static const bool print = std::getenv("KPLAB_FUZZ_PRINT") != nullptr;
  std::string src = Generator(data, size, api).Program();
  if (print) src += "for i = 1, 16 do kp.log(i, type(V[i]), tostring(V[i])) end\n";
  if (print) std::fprintf(stderr, "---- generated Lua ----\n%s-----------------------\n", src.c_str());
  kplab::host::Limits limits;
  limits.memory_bytes = 64u << 20;
  limits.instructions = 20'000'000;
  kplab::host::LuaVm vm(limits);
  kplab::host::InstallAll(vm);
  // Confined with no grant at all: a fuzzed path can neither read nor write anything.
  kplab::host::InstallScriptApi(vm, "fuzz.lua", kplab::host::FileGrants{});
  vm.PushSandboxEnv("fuzz.lua");
  // A Lua error of the whole chunk (budget, memory cap) is a normal outcome; only crashes count.
  if (vm.RunChunk(src, "fuzz.lua", 1)) return 0;
  WalkPool(vm);
  return 0;
}
