// Bounded walks (docs/design-notes.md, "Bounded walks"): every entry point where the host walks a
// script's nested values, tried at depths 1 ... 10,000. A walk either accepts the value (200 levels or
// fewer, where it has a depth to accept) or refuses it with a clear message; it never crashes (a
// constant table nested ~50 deep as an upvalue used to segfault `kplab eval`) and never hangs.
// The C ABI and the Python module run the same code (tests/c_api, tests/python: their own deep cases).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "../core/temp_dir.h"
#include "cli_harness.h"

namespace kplab::test {
namespace {

namespace fs = std::filesystem;

constexpr int kLimit = 200;  // sandbox.h: kMaxWalkDepth
constexpr int kDepths[] = {1, 2, 3, 10, 50, 199, 200, 201, 1000, 10000};
constexpr const char* kWalksTiny = "--dataset examples/tiny --predictions examples/tiny/predictions.txt";

// nest(n): a table nested n deep through the key "k" ({k = {k = {}}} is 3 deep).
constexpr const char* kNest =
    "local function nest(n) local t = {} local cur = t for _ = 2, n do local c = {} cur.k = c cur = c end "
    "return t end\n";

struct Case {
  std::string entry;       // what is walked
  bool accepted;           // the run succeeds
  std::string message;     // a line of stderr (refused) or stdout (accepted) must contain this
};

class BoundedWalksTest : public ::testing::Test {
 protected:
  TempDir dir_;

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_.File(name);
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // Runs kplab; a crash (a signal: code -1) or a hang (timeout's 124) fails whatever the case expects.
  void Expect(const Case& c, int depth, const std::string& args) {
    SCOPED_TRACE(c.entry + " at depth " + std::to_string(depth));
    const auto start = std::chrono::steady_clock::now();
    const Output o = RunKplab(dir_.path(), "timeout 60", args);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_NE(o.code, -1) << "crashed\n" << o.err;
    ASSERT_NE(o.code, 124) << "hung";
    EXPECT_LT(s, 30.0);  // it finishes
    EXPECT_EQ(o.code, c.accepted ? 0 : 3) << o.err;
    EXPECT_NE((c.accepted ? o.out : o.err).find(c.message), std::string::npos) << o.out << o.err;
  }

  // An API 2 plugin "deep" whose declaration holds `body` (with nest() and N = depth in scope), run on
  // examples/tiny.
  void ExpectPlugin(const std::string& body, int depth, const Case& c) {
    Write("plugins/deep.lua", "-- kplab-api: 2\n" + std::string(kNest) + "local N = " + std::to_string(depth) +
                                  "\nreturn kp.metric {\n  name = \"deep\", version = \"1\",\n" + body + "\n}\n");
    Expect(c, depth,
           std::string("eval ") + kWalksTiny + " --no-store --output tsv --metrics deep --plugins " +
               dir_.File("plugins"));
  }

  void ExpectScript(const std::string& body, int depth, const Case& c) {
    const std::string path = Write("s.lua", std::string(kNest) + "local N = " + std::to_string(depth) + "\n" + body);
    Expect(c, depth, "run " + path);
  }
};

const std::string kTooDeep = "is nested more than 200 levels deep";

TEST_F(BoundedWalksTest, PluginUpvalueTable) {
  for (int d : kDepths) {
    ExpectPlugin("  columns = function(c) c:column('x', 'mean') end,\n"
                 "  score = (function() local DEEP = nest(N) return function(_, _, _, out) out.x = DEEP and 1 end end)(),",
                 d,
                 d <= kLimit ? Case{"an upvalue table", true, "\nx\t1\n"}
                             : Case{"an upvalue table", false,
                                    "upvalue 'DEEP' " + kTooDeep + " (tables and functions), which plugin API 2 "
                                    "cannot make read-only"});
  }
}

// Closures over closures: the freeze follows functions through their upvalues too.
TEST_F(BoundedWalksTest, PluginUpvalueClosureChain) {
  for (int d : kDepths) {
    // score -> f_N -> ... -> f_0: N + 1 functions below score.
    ExpectPlugin("  columns = function(c) c:column('x', 'mean') end,\n"
                 "  score = (function() local f = function() return 1 end\n"
                 "    for _ = 1, N do local g = f f = function() return g() end end\n"
                 "    return function(_, _, _, out) out.x = f() end end)(),",
                 d,
                 d + 1 <= kLimit ? Case{"a closure chain", true, "\nx\t1\n"}
                                 : Case{"a closure chain", false, kTooDeep + " (tables and functions)"});
  }
}

TEST_F(BoundedWalksTest, ColumnsResult) {
  for (int d : kDepths) {
    ExpectPlugin("  columns = function(c) c:column('x', 'mean') return nest(N) end,\n"
                 "  score = function(_, _, _, out) out.x = 1 end,",
                 d,
                 d <= kLimit ? Case{"what columns() returns", true, "\nx\t1\n"}
                             : Case{"what columns() returns", false,
                                    "plugins/deep.lua: the value columns(c, params) returned " + kTooDeep +
                                        " (expected plain data"});
  }
}

TEST_F(BoundedWalksTest, PrepareResult) {
  for (int d : kDepths) {
    ExpectPlugin("  columns = function(c) c:column('x', 'mean') end,\n"
                 "  prepare = function() return nest(N) end,\n"
                 "  score = function(_, _, ctx, out) local p = ctx.prepared for _ = 2, N do p = p.k end out.x = 1 end,",
                 d,
                 d <= kLimit ? Case{"what prepare() returns", true, "\nx\t1\n"}
                             : Case{"what prepare() returns", false,
                                    "plugins/deep.lua: the value prepare(corpus, params, ctx) returned " + kTooDeep});
  }
}

// Declarations are read field by field (raw, not walked): a nested table where a value is expected is
// refused at the first level whatever its depth.
TEST_F(BoundedWalksTest, ParameterDeclaration) {
  for (int d : kDepths) {
    ExpectPlugin("  params = { k = nest(N) },\n  columns = function(c) c:column('x', 'mean') end,\n"
                 "  score = function(_, _, _, out) out.x = 1 end,",
                 d, Case{"a parameter declaration", false, "field 'params.k'"});
  }
}

// A script's own values handed to the host: parameters and options of kp.evaluate, kp.write's text, an
// error object, print.
TEST_F(BoundedWalksTest, ScriptEntryPoints) {
  const std::string load = "local c = kp.load{dataset = 'examples/tiny', predictions = "
                           "'examples/tiny/predictions.txt'}\n";
  for (int d : kDepths) {
    ExpectScript(load + "kp.evaluate(c, 'exact', {exact = nest(N)})\nprint('ok')\n", d,
                 d == 1 ? Case{"kp.evaluate's params", true, "ok"}
                        : Case{"kp.evaluate's params", false, "kp.evaluate: params.exact.k must be a number, string or boolean"});
    ExpectScript(load + "kp.evaluate(c, 'exact', nil, {plugins = nest(N)})\nprint('ok')\n", d,
                 Case{"kp.evaluate's options", true, "ok"});
    ExpectScript("kp.write('out.txt', nest(N))\n", d,
                 Case{"kp.write's text", false, "bad argument #2 to 'write' (string expected, got table)"});
    ExpectScript("error(nest(N))\n", d, Case{"an error object", false, "(error object is a table value)"});
    ExpectScript("print(type(nest(N)), #tostring(nest(N)) > 0)\n", d, Case{"print", true, "table\ttrue"});
  }
}

// The REPL's printer shows three levels and cuts the rest ({...}), whatever the depth.
TEST_F(BoundedWalksTest, ReplPrinter) {
  // One line each: the REPL runs every line as a chunk of its own, with plain globals.
  std::string input = "nest = function(n) local t = {} local cur = t for _ = 2, n do local c = {} cur.k = c cur = c end "
                      "return t end\n";
  std::string expected;
  for (int d : kDepths) {
    input += "return nest(" + std::to_string(d) + ")\n";
    expected += d == 1 ? "{}\n" : d == 2 ? "{ k = {} }\n" : d == 3 ? "{ k = { k = {} } }\n" : "{ k = { k = { k = {...} } } }\n";
  }
  const Output o = RunKplab(dir_.path(), "timeout 60", "repl", input);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, expected);
}

}  // namespace
}  // namespace kplab::test
