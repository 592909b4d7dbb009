// Hostile scripts against the sandbox and limits (docs/plugins.md, "Sandbox", "Limits"): userdata turned
// against the host, a plugin tampering with what another plugin calls, work and memory the instruction
// count cannot see, and Ctrl-C in the REPL. Each case runs the real kplab executable (or a real pty for
// the REPL) and checks the exact message; time bounds are generous ("it finishes"), speed is measured
// elsewhere.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <lua.hpp>

#include "../core/temp_dir.h"
#include "bindings.h"
#include "cli_harness.h"
#include "lua_pattern.h"
#include "pty_harness.h"
#include "slow_build.h"

namespace kplab::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr double kSandboxFinishes = 10.0 * kSlowBuild;  // seconds: "it finishes", not a speed claim
constexpr const char* kSandboxTiny = "--dataset examples/tiny --predictions examples/tiny/predictions.txt";

struct Timed {
  Output o;
  double seconds = 0;
};

class HostileTest : public ::testing::Test {
 protected:
  TempDir dir_;
  bool default_budget_ = false;  // Run leaves the instruction budget at kplab's default

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_.File(name);
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  Timed Kplab(const std::string& args, const std::string& env = "") {
    const auto start = Clock::now();
    Timed t;
    t.o = RunKplab(dir_.path(), env, args);
    t.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return t;
  }

  // `kplab run [options] SCRIPT` on a script whose text is `lua`; the script's path is returned in
  // *path for the expected messages.
  // Unless options set a time limit, the default 10 s one scaled for a sanitized build (slow_build.h):
  // the same limit in the release build, and a kill the test expects from the instruction budget is not
  // taken over by the wall clock in a slower one.
  Timed Run(const std::string& lua, const std::string& options = "", std::string* path = nullptr) {
    const std::string p = Write("s.lua", lua);
    if (path != nullptr) *path = p;
    std::string limit;
    if (options.find("--time-limit") == std::string::npos) {
      limit = " --time-limit " + std::to_string(static_cast<int>(10 * kSlowBuild));
    }
    // Unless options or default_budget_ say otherwise, an instruction budget of 10^7, a tenth of the
    // default: the kills below come ten times sooner and nothing they check depends on the size (the
    // default's own value is DefaultLimitsStopAnEndlessLoop's).
    if (options.find("--instruction-limit") == std::string::npos && !default_budget_) {
      limit += " --instruction-limit 10000000";
    }
    return Kplab("run " + options + limit + " " + p);
  }

  // The first line of stderr.
  static std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

  // Expects `kplab run` of `lua` to fail (exit 3) with first stderr line "kplab: PATH" + suffix.
  void ExpectKilled(const std::string& lua, const std::string& suffix, const std::string& options = "") {
    std::string path;
    const Timed t = Run(lua, options, &path);
    EXPECT_EQ(t.o.code, 3) << lua << "\n" << t.o.err;
    EXPECT_EQ(FirstLine(t.o.err), "kplab: " + path + suffix) << lua;
    EXPECT_LT(t.seconds, kSandboxFinishes) << lua;
    EXPECT_EQ(t.o.out, "") << lua;  // nothing after the kill ran
  }
};

// ---- 1. userdata -------------------------------------------------------------------------------------

// On every userdata type a script can hold: the metatable is hidden, metamethods are not fields,
// calling x.__gc(x) is a clean error, and the objects still work afterwards.
TEST_F(HostileTest, UserdataNeverExposesMetatableOrMetamethods) {
  const Timed t = Run(R"lua(
local c = kp.load{dataset = "examples/tiny", predictions = "examples/tiny/predictions.txt"}
local d = c:doc(1)
local l = d.preds
local m = l:match(d.refs)
local x = kp.matrix{{1, 2}, {3, 4}}
local all = {{"Corpus", c}, {"KeyphraseList", l}, {"Match", m}, {"Matrix", x}}
for _, e in ipairs(all) do
  local name, u = e[1], e[2]
  print(name, getmetatable(u), u.__gc, u.__index, u.__close, u.__len, u.__tostring, u.__metatable, u.__name)
  print(name, pcall(function() u.__gc(u) end))
  print(name, pcall(function() u.__index.hits = 1 end))
  print(name, pcall(setmetatable, u, {}))
  print(name, pcall(function() u.hits = function() return 5 end end))
end
print("Document", getmetatable(d), pcall(function() return d.__gc end))
print(#c, c:doc(1).id == d.id, #l, m:hits(5), x:get(1, 2))
)lua");
  ASSERT_EQ(t.o.code, 0) << t.o.err;
  const std::string expected =
      "Corpus\tfalse\tnil\tnil\tnil\tnil\tnil\tnil\tnil\n"
      "Corpus\tfalse\t" + dir_.File("s.lua") + ":11: attempt to call a nil value (field '__gc')\n"
      "Corpus\tfalse\t" + dir_.File("s.lua") + ":12: attempt to index a nil value (field '__index')\n"
      "Corpus\tfalse\tbad argument #1 to '?' (table expected, got kplab.Corpus)\n"
      "Corpus\tfalse\t" + dir_.File("s.lua") + ":14: attempt to index a kplab.Corpus value (upvalue 'u')\n";
  // The same five lines for each type, with its own name.
  std::string all;
  for (const char* name : {"Corpus", "KeyphraseList", "Match", "Matrix"}) {
    all += std::regex_replace(expected, std::regex("Corpus"), name);
  }
  all += "Document\tfalse\tfalse\t" + dir_.File("s.lua") + ":16: Document has no field '__gc'\n";
  // examples/tiny: 5 documents. Document 1 has 7 predictions (5 present, 2 after <peos>); its first 5
  // hit "scheduling" (Porter: both "schedul"), "batch jobs" and "interactive queries"; x[1][2] = 2.
  EXPECT_EQ(t.o.out, all + "5\ttrue\t7\t3\t2.0\n");
  EXPECT_LT(t.seconds, kSandboxFinishes);
}

// A plugin that tries every tampering path it can reach, run in the same `kplab eval` as the shipped
// `exact` (same lanes, same VM): exact's numbers do not move, and no attempt succeeds.
TEST_F(HostileTest, TamperingPluginCannotChangeAnotherPluginsNumbers) {
  Write("plugins/tamper.lua", R"lua(-- kplab-api: 1
local five = function() return 5, 5, 5, 5 end
local function attempts(doc)
  local l = doc.preds
  local m = l:match(doc.refs)
  local tries = {
    function() m.hits = five end,
    function() m.__index.hits = five end,
    function() getmetatable(m).__index.hits = five end,
    function() getmetatable(m).hits = five end,
    function() l.__index.match = function() return m end end,
    function() setmetatable(m, {__index = {hits = five}}) end,
    function() kp.stats = {} end,
    function() string.find = nil end,
    function() getmetatable("").__index.rep = nil end,
    function() m.__gc(m) end,
    function() l.__gc(l) end,
    function() doc.__gc(doc) end,
    function() doc.preds = doc.refs end,
  }
  local escapes = 0
  for _, f in ipairs(tries) do
    if pcall(f) then escapes = escapes + 1 end
  end
  return escapes
end
return kp.metric {
  name = "tamper", version = "1",
  score = function(doc, _, _, out)
    out["all.escapes"] = attempts(doc)
    return out
  end,
  aggregate = function(cols)
    local c = cols["all.escapes"]
    local col_escapes = 0
    for _, f in ipairs{function() c.__gc(c) end, function() c.__index.sum = function() return 0 end end,
                       function() getmetatable(c).sum = nil end} do
      if pcall(f) then col_escapes = col_escapes + 1 end
    end
    return {["all.escapes"] = c:sum() + col_escapes}
  end,
}
)lua");
  for (const char* threads : {"1", "2"}) {
    const Timed t = Kplab(std::string("eval ") + kSandboxTiny + " --no-store --output tsv --threads " + threads +
                          " --metrics tamper,exact --plugins " + dir_.File("plugins"));
    ASSERT_EQ(t.o.code, 0) << t.o.err;
    // Hand count on examples/tiny (README: P@5 micro = 0.48): the tampering changed nothing.
    EXPECT_NE(t.o.out.find("\nall.p@5.micro\t0.48\n"), std::string::npos) << t.o.out;
    EXPECT_NE(t.o.out.find("\nall.escapes\t0\n"), std::string::npos) << t.o.out;
    EXPECT_LT(t.seconds, kSandboxFinishes);
  }
}

// ---- 2. limits ---------------------------------------------------------------------------------------

constexpr const char* kSandboxBudget = "instruction budget of 10000000 exceeded";  // Run's (see there)

TEST_F(HostileTest, DefaultLimitsStopAnEndlessLoop) {
  default_budget_ = true;
  ExpectKilled("while true do end\n", ":1: instruction budget of 100000000 exceeded");
}

TEST_F(HostileTest, KillHoldsThroughPcallXpcallAndCoroutines) {
  ExpectKilled("while true do pcall(function() while true do end end) end\n", std::string(":1: ") + kSandboxBudget);
  ExpectKilled("while true do xpcall(function() while true do end end, function(m) return m end) end\n",
               std::string(":1: ") + kSandboxBudget);
  // A handler that turns the kill into a value cannot make the script end normally (exit 0).
  ExpectKilled(
      "local ok, e = xpcall(function() while true do end end, function() return 'fine' end)\n"
      "print(ok, e)\n",
      std::string(":1: ") + kSandboxBudget);
  ExpectKilled(
      "local co = coroutine.wrap(function() while true do coroutine.yield() end end)\n"
      "while true do co() end\n",
      std::string(":2: ") + kSandboxBudget);
  ExpectKilled(
      "while true do local co = coroutine.create(function() while true do end end)\n"
      "  coroutine.resume(co) end\n",
      std::string(":1: ") + kSandboxBudget);
}

// Finalizers run without hooks, so none can be planted; a looping __close runs under the budget.
TEST_F(HostileTest, NoFinalizerLoopsAndCloseHandlersAreBudgeted) {
  ExpectKilled("setmetatable({}, {__gc = function() while true do end end})\n",
               ":1: __gc metamethods are not allowed in the sandbox");
  // A __gc added after setmetatable does not mark the table for finalization (Lua 5.4 manual §2.5.3):
  // the loop never runs, even when the state closes.
  const Timed t = Run("local mt = {}\nlocal t = setmetatable({}, mt)\n"
                      "mt.__gc = function() while true do end end\nt = nil\nprint('done')\n");
  EXPECT_EQ(t.o.code, 0) << t.o.err;
  EXPECT_EQ(t.o.out, "done\n");
  EXPECT_LT(t.seconds, kSandboxFinishes);
  ExpectKilled(
      "do local x <close> = setmetatable({}, {__close = function() while true do end end})\n"
      "error('boom') end\n",
      std::string(":1: ") + kSandboxBudget);
}

// Work done outside the VM's instructions is charged too: big copies, pattern matching, kp natives.
// What the budget must stop, with the wall-clock deadline out of the way (a loaded machine must not
// turn a budget kill into a deadline kill; deadlines have their own tests below).
constexpr const char* kNoDeadline = "--time-limit 300";

TEST_F(HostileTest, NativeWorkIsChargedToTheBudget) {
  // Quadratic concatenation: few instructions, ~1e12 bytes copied.
  ExpectKilled("local s = '' while true do s = s .. string.rep('x', 65536) end\n", std::string(": ") + kSandboxBudget,
               kNoDeadline);
  // Backtracking patterns (~1e12 steps in Lua's own matcher), in each function and as a method.
  for (const char* call : {"string.find(s, '.-.-.-b')", "s:find('.-.-.-b')", "string.match(s, '.-.-.-b')",
                           "string.gsub(s, '.-.-.-b', '')", "for x in s:gmatch('.-.-.-b') do end",
                           "s:find('(.-)%1(.-)%2b')", "s:find('a*a*a*a*a*b')"}) {
    ExpectKilled(std::string("local s = string.rep('a', 20000)\n") + call + "\n", std::string(":2: ") + kSandboxBudget,
                 kNoDeadline);
  }
  ExpectKilled("kp.stats.bootstrap_ci({1, 2, 3}, {n = 1000000000})\n", std::string(":1: ") + kSandboxBudget,
               kNoDeadline);
  ExpectKilled("kp.stats.paired_bootstrap_ci({1, 2, 3}, {2, 3, 4}, {n = 1000000000})\n",
               std::string(":1: ") + kSandboxBudget, kNoDeadline);
  ExpectKilled("kp.stats.approx_randomization({1, 2, 3}, {2, 3, 4}, {n = 1000000000})\n",
               std::string(":1: ") + kSandboxBudget, kNoDeadline);
  ExpectKilled("local s = string.rep('w ', 200000)\nkp.homog.wer(s, s)\n", std::string(":2: ") + kSandboxBudget,
               kNoDeadline);
  ExpectKilled("kp.stats.parallel_analysis({{1, 2}, {2, 1}, {3, 5}, {4, 3}, {5, 4}}, {iter = 1000000000})\n",
               std::string(":1: ") + kSandboxBudget, kNoDeadline);
  // The same calls at a sane size work and give the hand-computed values.
  const Timed ok = Run("print(string.find(string.rep('a', 20) .. 'b', '.-.-.-b'))\n"
                       "print(kp.homog.wer('a b c d', 'a x c d'))\n"
                       "print(('x = 1, y = 22'):gsub('(%w+) = (%d+)', '%2=%1'))\n");
  EXPECT_EQ(ok.o.out, "1\t21\n0.25\n1=x, 22=y\t2\n") << ok.o.err;
}

// Native buffers are checked against the memory cap before they are allocated.
TEST_F(HostileTest, NativeAllocationsAreRefusedBeforeTheyAreMade) {
  default_budget_ = true;  // building the inputs takes more than Run's 10^7 instructions
  ExpectKilled("kp.stats.bootstrap_ci({1, 2, 3}, {n = 1000000000})\n",
               ":1: memory limit of 256 MiB exceeded (kp.stats.bootstrap_ci's resamples needs 7630 MiB)",
               "--instruction-limit 0");
  const std::string len3e9 = "local big = setmetatable({}, {__len = function() return 3e9 end})\n";
  ExpectKilled(len3e9 + "kp.matrix(big)\n", ":2: kp.matrix: 3000000000 rows (expected 0 to 2147483647)");
  ExpectKilled("local row = setmetatable({}, {__len = function() return 50000 end})\n"
               "kp.matrix(setmetatable({row}, {__len = function() return 50000 end}))\n",
               ":2: memory limit of 256 MiB exceeded (kp.matrix needs 19074 MiB)");
  ExpectKilled(len3e9 + "kp.calib.reliability(big, {})\n",
               ":2: memory limit of 256 MiB exceeded (the array of numbers needs 22889 MiB)");
  // A Matrix's cells count in the cap while it lives: keeping 8 MiB matrices fails at the cap; dropping
  // them does not (a collection gives their cells back).
  const std::string rows = "local rows = {} for i = 1, 1024 do local r = {} for j = 1, 1024 do r[j] = 0 end rows[i] = r end\n";
  ExpectKilled(rows + "local keep = {}\nfor i = 1, 100 do keep[i] = kp.matrix(rows) end\n",
               ":3: memory limit of 256 MiB exceeded (kp.matrix needs 8 MiB)");
  const Timed dropped = Run(rows + "for i = 1, 100 do local m = kp.matrix(rows) end\nprint('ok')\n");
  EXPECT_EQ(dropped.o.out, "ok\n") << dropped.o.err;
  ExpectKilled("kp.split(string.rep('a ', 1 << 25))\n", ":1: memory limit of 256 MiB exceeded (kp.split needs 1024 MiB)");
  ExpectKilled("kp.word_tokenize(string.rep('a ', 1 << 23))\n",
               ":1: memory limit of 256 MiB exceeded (kp.word_tokenize needs 512 MiB)");
}

// Out of memory in a native allocation (the process's address space, not the VM's cap): a clear
// error and exit 3, never an abort. The child runs with a 2 GiB address-space limit.
TEST_F(HostileTest, OutOfMemoryIsAClearErrorNotAnAbort) {
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer reserves terabytes of address space for its shadow memory at start: under `ulimit -v`
  // the child aborts before main ("ReserveShadowMemoryRange failed ... Perhaps you're using ulimit -v").
  GTEST_SKIP() << "built with AddressSanitizer (KPLAB_SANITIZE): a process under ulimit -v cannot start";
#endif
  std::string path;
  const std::string p = Write("s.lua",
                              "local row = setmetatable({}, {__len = function() return 40000 end})\n"
                              "kp.matrix(setmetatable({row}, {__len = function() return 40000 end}))\n");
  const Timed t = Kplab("run --memory-limit 0 --instruction-limit 0 " + p, "ulimit -v 2000000 &&");
  EXPECT_EQ(t.o.code, 3) << t.o.err;
  EXPECT_EQ(FirstLine(t.o.err), "kplab: " + p + ":2: out of memory (a native allocation failed)");
}

TEST_F(HostileTest, DeadlinesStopWhatInstructionsDoNot) {
  // A quarter of a second: limits are given in seconds, fractions too, and a test need not burn more.
  ExpectKilled("while true do end\n", ":1: time limit of 0.25 s exceeded", "--instruction-limit 0 --time-limit 0.25");
  ExpectKilled("local s = string.rep('a', 20000)\ns:find('.-.-.-b')\n", ":2: time limit of 0.25 s exceeded",
               "--instruction-limit 0 --time-limit 0.25");
}

// A loop of slow native calls that are not charged (kp.load of KP20k, ~0.3 s each) runs a handful of
// instructions per call, so the count hook alone would notice the deadline only after ~100 calls;
// every binding checks it when it returns.
TEST_F(HostileTest, SlowNativeCallsInALoopStopAtTheDeadline) {
  const std::string kp20k = std::string(KPLAB_SHARED_DATA) + "/kpg_testsets_meng2017/kp20k";
  if (!fs::exists(kp20k)) GTEST_SKIP() << "no " << kp20k;
  ExpectKilled("while true do kp.load{dataset = '" + kp20k + "'} end\n", ":1: time limit of 0.5 s exceeded",
               "--time-limit 0.5 --allow-read " + std::string(KPLAB_SHARED_DATA));
}

// The run budget covers all of a plugin's calls: the 5 documents of examples/tiny at ~2e7 instructions
// each pass the per-call budget (1e8) one by one, but not the run's 5e7.
TEST_F(HostileTest, PerRunBudgetSpansAllDocuments) {
  Write("plugins/burn.lua", R"lua(-- kplab-api: 1
return kp.metric {
  name = "burn", version = "1",
  score = function(doc, _, _, out)
    local x = 0
    for i = 1, 10000000 do x = x + i end
    out["all.burn"] = x
    return out
  end,
}
)lua");
  const std::string base = std::string("eval ") + kSandboxTiny +
                           " --no-store --output tsv --metrics burn,exact --plugins " + dir_.File("plugins");
  Timed t = Kplab(base + " --run-instruction-limit 50000000");
  EXPECT_EQ(t.o.code, 3) << t.o.err;
  EXPECT_NE(t.o.err.find(dir_.File("plugins/burn.lua") +
                         ":6: run instruction budget of 50000000 exceeded (all calls of this plugin)"),
            std::string::npos)
      << t.o.err;
  EXPECT_LT(t.seconds, kSandboxFinishes);
  // The run deadline, with no instruction budgets at all.
  Write("plugins/burn.lua", "-- kplab-api: 1\nreturn kp.metric { name = 'burn', version = '1',\n"
                            "  score = function() while true do end end }\n");
  t = Kplab(base + " --instruction-limit 0 --run-instruction-limit 0 --time-limit 0 --run-time-limit 0.25");
  EXPECT_EQ(t.o.code, 3) << t.o.err;
  EXPECT_NE(
      t.o.err.find(dir_.File("plugins/burn.lua") + ":3: run time limit of 0.25 s exceeded (all calls of this plugin)"),
      std::string::npos)
      << t.o.err;
  EXPECT_LT(t.seconds, kSandboxFinishes);
}

// Calls shorter than the hook's 1,000-instruction block reach the run budget too: the count carries from
// one call into the next. A plugin of ~50 instructions a document on KP20k's 20,000 documents runs ~10^6
// instructions, so a run budget of 10^5 stops it part-way (it used to finish: every call restarted the
// count and charged nothing).
TEST_F(HostileTest, PerRunBudgetCountsShortCalls) {
  Write("plugins/short.lua", R"lua(-- kplab-api: 1
return kp.metric {
  name = "short", version = "1",
  score = function(doc, _, _, out)
    local x = 0
    for i = 1, 10 do x = x + i end
    out["all.short"] = x
    return out
  end,
}
)lua");
  const std::string kp20k = std::string(" --dataset ") + KPLAB_SHARED_DATA + "/kpg_testsets_meng2017/kp20k --predictions " +
                            KPLAB_SHARED_DATA + "/predictions/catSeqTG-2RF1/kp20k/seed1234.txt";
  const std::string base = "eval" + kp20k + " --no-store --output tsv --metrics short --plugins " + dir_.File("plugins");
  for (const char* threads : {" --threads 1", " --threads 2"}) {
    Timed t = Kplab(base + threads + " --run-instruction-limit 100000");
    EXPECT_EQ(t.o.code, 3) << t.o.err;
    EXPECT_NE(t.o.err.find("run instruction budget of 100000 exceeded (all calls of this plugin)"), std::string::npos)
        << t.o.err;
    EXPECT_LT(t.seconds, kSandboxFinishes);
  }
  Timed ok = Kplab(base + " --run-instruction-limit 10000000");  // ~10^6 needed: it finishes
  EXPECT_EQ(ok.o.code, 0) << ok.o.err;
  EXPECT_NE(ok.o.out.find("all.short\t55"), std::string::npos) << ok.o.out;
}

// The budgeted string.find/match/gmatch/gsub agree with Lua's own on results and errors (Lua's are the
// reference: both run in one plain Lua state).
TEST(BudgetedPatternsTest, AgreeWithLuaStringLibrary) {
  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  lua_newtable(L);
  host::InstallBudgetedPatterns(L);
  lua_setglobal(L, "B");
  const char* chunk = R"lua(
local cases = {
  {"hello world", "o w"}, {"hello world", "l+"}, {"hello world", "l-o"}, {"hello", "^h(.)"},
  {"hello", "^e"}, {"hello", "o$"}, {"hel$lo", "l$l"}, {"  x = 1 ", "(%w+)%s*=%s*(%w+)"},
  {"f(a(b)c)d", "%b()"}, {"THE (quick) fox", "%f[%a]%a+"}, {"abcabc", "(abc)%1"}, {"abab", "()ab()"},
  {"[x]", "[%[]"}, {"a-b", "[a-]+"}, {"a]b", "[]]"}, {"x^y", "[^%a]"}, {"a.b", "%."}, {"", ""},
  {"abc", ""}, {"aaa", "a-"}, {"aaa", "a?a?a?a"}, {"key=val", "(%w+)=(%w*)"}, {"\0a\0", "%z"},
  {"caf\xc3\xa9", "[\x80-\xff]+"}, {"12ab", "%x+"}, {"a,b,,c", "([^,]*)"}, {"one two", "%S+", 4},
  {"one two", "o", -3}, {"x", "x", 10}, {"abc", "[b-]"}, {"aXb", "%u"}, {"a b", "%s()"},
  -- errors
  {"a", "%"}, {"a", "[a"}, {"a", "(a"}, {"a", "a)"}, {"a", "%1"}, {"a", "%f"}, {"a", "%b"}, {"a", "(()"},
}
local out = {}
local function add(...) out[#out + 1] = table.concat({...}, "|") end
local function pack(ok, ...)
  local t = {tostring(ok)}
  for i = 1, select("#", ...) do t[#t + 1] = tostring((select(i, ...))) end
  return table.concat(t, ",")
end
for i, c in ipairs(cases) do
  local s, p, init = c[1], c[2], c[3]
  for _, fn in ipairs{"find", "match"} do
    local a = pack(pcall(string[fn], s, p, init))
    local b = pack(pcall(B[fn], s, p, init))
    if a ~= b then add(i, fn, p, a, b) end
  end
  local a, b = {}, {}
  pcall(function() for x, y in string.gmatch(s, p, init) do a[#a + 1] = tostring(x) .. ":" .. tostring(y) end end)
  pcall(function() for x, y in B.gmatch(s, p, init) do b[#b + 1] = tostring(x) .. ":" .. tostring(y) end end)
  if table.concat(a, " ") ~= table.concat(b, " ") then add(i, "gmatch", p, table.concat(a, " "), table.concat(b, " ")) end
  for _, r in ipairs{"<%0>", "%1", "%%", {hello = "H", o = false}, function(x) return x and x:upper() end, "%2"} do
    local a = pack(pcall(string.gsub, s, p, r))
    local b = pack(pcall(B.gsub, s, p, r))
    if a ~= b then add(i, "gsub", p, tostring(r), a, b) end
  end
  local a = pack(pcall(string.gsub, s, p, "#", 1))
  local b = pack(pcall(B.gsub, s, p, "#", 1))
  if a ~= b then add(i, "gsub1", p, a, b) end
end
return table.concat(out, "\n")
)lua";
  ASSERT_EQ(luaL_dostring(L, chunk), LUA_OK) << lua_tostring(L, -1);
  EXPECT_EQ(std::string(lua_tostring(L, -1)), "");
  lua_close(L);
}

// ---- 3. the REPL -------------------------------------------------------------------------------------

class HostileReplTest : public ::testing::Test {
 protected:
  TempDir home_;
  PtySession Start(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {KPLAB_BINARY, "repl"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return PtySession(argv, KPLAB_SOURCE_DIR,
                      {"HOME=" + home_.path(), "XDG_STATE_HOME", "KPLAB_HISTORY", "KPLAB_DB=" + home_.File("db"),
                       "TERM=xterm"});
  }
};

// Ctrl-C stops loops that swallow errors (pcall, xpcall with a handler, coroutines) and long native
// calls (a backtracking pattern), and the prompt stays usable after each.
TEST_F(HostileReplTest, CtrlCStopsLoopsThatCatchErrorsAndLongNativeCalls) {
  PtySession s = Start();
  ASSERT_TRUE(s.started()) << s.start_error();
  ASSERT_TRUE(s.WaitFor("kp> ")) << s.Text();
  int n = 0;
  for (const char* loop : {
           "while true do pcall(function() while true do end end) end",
           "while true do xpcall(function() while true do end end, function(m) return m end) end",
           "local ok = xpcall(function() while true do end end, function() return 'fine' end) print('swallowed', ok)",
           "local co = coroutine.wrap(function() while true do coroutine.yield() end end) while true do co() end",
           "while true do pcall(string.find, string.rep('a', 20000), '.-.-.-b') end",
           // Long native loops whose charge fits the REPL's budget (~9e9 steps): Ctrl-C stops them inside.
           "local x = {} for i = 1, 10000 do x[i] = i end while true do pcall(kp.stats.bootstrap_ci, x, {n = 900000}) end",
           "local s = string.rep('w ', 90000) while true do pcall(kp.homog.wer, s, s) end",
       }) {
    ++n;
    s.Send(std::string("print('go" + std::to_string(n) + "') ") + loop + "\r");
    ASSERT_TRUE(s.WaitFor("go" + std::to_string(n) + "\n")) << s.Text();
    s.Drain(300);
    const auto start = Clock::now();
    s.Send("\x03");
    ASSERT_TRUE(s.WaitFor("interrupted!", 10000)) << loop << "\n" << s.Text();
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), kSandboxFinishes);
    ASSERT_TRUE(s.WaitFor("kp> ", 10000)) << s.Text();
    s.Send(std::to_string(n) + " * 1000\r");
    ASSERT_TRUE(s.WaitFor(std::to_string(n) + "000\n")) << s.Text();
  }
  EXPECT_EQ(s.Text().find("swallowed\t"), std::string::npos) << s.Text();
}

// The REPL has a budget and deadline of its own, set by flags.
TEST_F(HostileReplTest, BudgetAndDeadlineAreConfigurable) {
  PtySession s = Start({"--instruction-limit", "1000000"});
  ASSERT_TRUE(s.WaitFor("kp> ")) << s.Text();
  s.Send("while true do pcall(function() while true do end end) end\r");
  ASSERT_TRUE(s.WaitFor("stdin:1: instruction budget of 1000000 exceeded", 10000)) << s.Text();
  s.Send("6 * 7\r");
  ASSERT_TRUE(s.WaitFor("42\n")) << s.Text();
  PtySession t = Start({"--instruction-limit", "0", "--time-limit", "1"});
  ASSERT_TRUE(t.WaitFor("kp> ")) << t.Text();
  t.Send("while true do end\r");
  ASSERT_TRUE(t.WaitFor("stdin:1: time limit of 1 s exceeded", 10000)) << t.Text();
}

}  // namespace
}  // namespace kplab::test
