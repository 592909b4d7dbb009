// The sandbox: allow-list, read-only proxies, strict globals, memory cap, instruction budget and error
// capture, on the scripts in tests/data/plugins/{sandbox,limits}/. Error texts are exact.
#include "sandbox.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <lua.hpp>

namespace kplab::host {
namespace {

std::string ReadFixture(const std::string& rel) {
  std::ifstream in(std::string(KPLAB_TEST_DATA) + "/plugins/" + rel, std::ios::binary);
  EXPECT_TRUE(in) << rel;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Runs tests/data/plugins/<rel> in a fresh env with chunkname "@<rel>"; results stay on the stack.
std::optional<ScriptError> RunFile(LuaVm& vm, const std::string& rel, int nresults = 0) {
  vm.PushSandboxEnv(rel);
  return vm.RunChunk(ReadFixture(rel), rel, nresults);
}

// The error text of running <rel>, or "(no error)".
std::string SandboxErrorOf(LuaVm& vm, const std::string& rel) {
  const int top = lua_gettop(vm.state());
  std::optional<ScriptError> err = RunFile(vm, rel);
  EXPECT_EQ(lua_gettop(vm.state()), top) << rel;
  return err ? err->message : "(no error)";
}

int LowerFixture(lua_State* L) {
  lua_pushstring(L, "lower");
  return 1;
}

// A module as bindings install them: kp.text = { lower = ... }.
void InstallTextFixture(lua_State* L) {
  lua_newtable(L);
  lua_pushcfunction(L, &LowerFixture);
  lua_setfield(L, -2, "lower");
  lua_setfield(L, -2, "text");
}

int ThrowCpp(lua_State*) { throw std::runtime_error("core failure"); }

TEST(SandboxTest, ForbiddenGlobalsAreUndefined) {
  LuaVm vm;
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/io_open.lua"), "sandbox/io_open.lua:2: undefined global 'io'");
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/os_exit.lua"), "sandbox/os_exit.lua:2: undefined global 'os'");
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/require.lua"), "sandbox/require.lua:2: undefined global 'require'");
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/load.lua"), "sandbox/load.lua:2: undefined global 'load'");
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/dofile.lua"), "sandbox/dofile.lua:2: undefined global 'dofile'");
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/debug_getinfo.lua"), "sandbox/debug_getinfo.lua:2: undefined global 'debug'");
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/collectgarbage.lua"),
            "sandbox/collectgarbage.lua:2: undefined global 'collectgarbage'");
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/print.lua"), "sandbox/print.lua:2: undefined global 'print'");
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/kp_rawset.lua"), "sandbox/kp_rawset.lua:2: undefined global 'rawset'");
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/string_dump.lua"),
            "sandbox/string_dump.lua:2: attempt to call a nil value (field 'dump')");
}

TEST(SandboxTest, StrictGlobals) {
  LuaVm vm;
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/undefined_global.lua"),
            "sandbox/undefined_global.lua:2: undefined global 'undefined_thing'");
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/new_global.lua"),
            "sandbox/new_global.lua:2: assignment to undeclared global 'counter'");
}

TEST(SandboxTest, ApiTablesAreReadOnly) {
  LuaVm vm;
  vm.Install(&InstallTextFixture);
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/kp_assign.lua"),
            "sandbox/kp_assign.lua:2: attempt to modify read-only table 'kp'");
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/kp_nested_assign.lua"),
            "sandbox/kp_nested_assign.lua:2: attempt to modify read-only table 'kp.text'");
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/kp_setmetatable.lua"),
            "sandbox/kp_setmetatable.lua:2: cannot change a protected metatable");
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/math_assign.lua"),
            "sandbox/math_assign.lua:2: attempt to modify read-only table 'math'");
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/pairs_leak.lua"),
            "sandbox/pairs_leak.lua:3: attempt to modify read-only table 'string'");
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/string_meta.lua"),
            "sandbox/string_meta.lua:2: attempt to index a boolean value");
}

TEST(SandboxTest, AllowListWorksAndStringMethodsStayReal) {
  LuaVm vm;
  vm.Install(&InstallTextFixture);
  ASSERT_EQ(SandboxErrorOf(vm, "sandbox/string_meta.lua"),
            "sandbox/string_meta.lua:2: attempt to index a boolean value");
  lua_State* L = vm.state();
  testing::internal::CaptureStderr();
  std::optional<ScriptError> err = RunFile(vm, "sandbox/allowed.lua", 2);
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_FALSE(err) << err->Format();
  EXPECT_STREQ(lua_tostring(L, -2), "ABCxx");
  EXPECT_STREQ(lua_tostring(L, -1), "log,metric,text");
  lua_pop(L, 2);
  EXPECT_EQ(log, "[sandbox/allowed.lua] ok ABCxx 3 zz nil true\n");
}

TEST(SandboxTest, FinalizersAreRefused) {
  LuaVm vm;
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/gc_finalizer.lua"),
            "sandbox/gc_finalizer.lua:2: __gc metamethods are not allowed in the sandbox");
}

TEST(SandboxTest, XpcallBehavesAsUsual) {
  LuaVm vm;
  lua_State* L = vm.state();
  std::optional<ScriptError> err = RunFile(vm, "sandbox/xpcall.lua", 5);
  ASSERT_FALSE(err) << err->Format();
  EXPECT_FALSE(lua_toboolean(L, 1));
  EXPECT_STREQ(lua_tostring(L, 2), "handled: sandbox/xpcall.lua:2: xy");
  EXPECT_TRUE(lua_toboolean(L, 3));
  EXPECT_EQ(lua_tointeger(L, 4), 1);
  EXPECT_EQ(lua_tointeger(L, 5), 2);
  lua_settop(L, 0);
}

TEST(SandboxTest, LogWritesLabelledLineToStderr) {
  LuaVm vm;
  testing::internal::CaptureStderr();
  vm.PushSandboxEnv("mymetric");
  std::optional<ScriptError> err = vm.RunChunk(ReadFixture("sandbox/log.lua"), "sandbox/log.lua", 0);
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_FALSE(err) << err->Format();
  EXPECT_EQ(log, "[mymetric] hello 42 true\n");
}

TEST(SandboxTest, EnvironmentsAreSeparate) {
  LuaVm vm;
  lua_State* L = vm.state();
  vm.PushSandboxEnv("a");
  const void* a = lua_topointer(L, -1);
  vm.PushSandboxEnv("b");
  EXPECT_NE(lua_topointer(L, -1), a);
  lua_getfield(L, -1, "kp");
  lua_getfield(L, -3, "kp");
  EXPECT_NE(lua_topointer(L, -1), lua_topointer(L, -2));  // each env binds its own kp.log label
  lua_pop(L, 4);
}

TEST(SandboxTest, MemoryCapStopsHugeTableAndVmStaysUsable) {
  LuaVm vm(Limits{.memory_bytes = 16u << 20, .instructions = 0});
  lua_State* L = vm.state();
  const int top = lua_gettop(L);
  std::optional<ScriptError> err = RunFile(vm, "limits/huge_table.lua");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, "limits/huge_table.lua: memory limit of 16 MiB exceeded");
  EXPECT_EQ(err->file, "limits/huge_table.lua");
  EXPECT_EQ(err->line, 0);
  EXPECT_EQ(lua_gettop(L), top);
  EXPECT_LT(vm.memory_in_use(), std::size_t{1} << 20);

  err = RunFile(vm, "limits/huge_string.lua");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, "limits/huge_string.lua: memory limit of 16 MiB exceeded");

  err = RunFile(vm, "limits/small.lua", 1);
  ASSERT_FALSE(err) << err->Format();
  EXPECT_EQ(lua_tointeger(L, -1), 500500);
  lua_pop(L, 1);
}

TEST(SandboxTest, MemoryCapInCallNamesTheFunctionsFile) {
  LuaVm vm(Limits{.memory_bytes = 8u << 20, .instructions = 0});
  lua_State* L = vm.state();
  // A chunk returning a function: the error of the later call names the file of that function.
  ASSERT_FALSE(RunFile(vm, "limits/small.lua", 0));
  vm.PushSandboxEnv("x");
  ASSERT_FALSE(vm.RunChunk("return function() local t = {} for i = 1, 1e9 do t[i] = i end end",
                           "limits/inline.lua", 1));
  std::optional<ScriptError> err = vm.Call(0, 0, "inline");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, "limits/inline.lua: memory limit of 8 MiB exceeded");
  EXPECT_EQ(err->plugin, "inline");
  EXPECT_EQ(lua_gettop(L), 0);
}

TEST(SandboxTest, InstructionBudgetKillsLoops) {
  LuaVm vm(Limits{.memory_bytes = 64u << 20, .instructions = 1'000'000});
  std::optional<ScriptError> err = RunFile(vm, "limits/loop.lua");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, "limits/loop.lua:2: instruction budget of 1000000 exceeded");
  EXPECT_EQ(err->file, "limits/loop.lua");
  EXPECT_EQ(err->line, 2);
  EXPECT_NE(err->traceback.find("stack traceback:"), std::string::npos) << err->traceback;
}

// Each of these scripts catches the kill (pcall, xpcall with a looping handler, coroutine.resume)
// and would loop forever if the hook did not fire again on the next instruction.
class BudgetEscapeTest : public testing::TestWithParam<const char*> {};

TEST_P(BudgetEscapeTest, IsStillKilled) {
  LuaVm vm(Limits{.memory_bytes = 64u << 20, .instructions = 1'000'000});
  const std::string rel = std::string("limits/") + GetParam() + ".lua";
  EXPECT_EQ(SandboxErrorOf(vm, rel), rel + ":2: instruction budget of 1000000 exceeded");
  EXPECT_EQ(SandboxErrorOf(vm, "limits/small.lua"), "(no error)");
}

INSTANTIATE_TEST_SUITE_P(Scripts, BudgetEscapeTest,
                         testing::Values("pcall_loop", "pcall_in_loop", "xpcall_handler",
                                         "coroutine_loop"));

TEST(SandboxTest, EachCallGetsAFreshBudget) {
  LuaVm vm(Limits{.memory_bytes = 64u << 20, .instructions = 1'000'000});
  lua_State* L = vm.state();
  ASSERT_TRUE(RunFile(vm, "limits/loop.lua"));
  // 1000 iterations per run, 2000 runs: far more than one budget in total, never in one call.
  for (int i = 0; i < 2000; ++i) {
    std::optional<ScriptError> err = RunFile(vm, "limits/small.lua", 1);
    ASSERT_FALSE(err) << err->Format();
    ASSERT_EQ(lua_tointeger(L, -1), 500500);
    lua_pop(L, 1);
  }
}

TEST(SandboxTest, RuntimeErrorCarriesPositionAndTraceback) {
  LuaVm vm;
  std::optional<ScriptError> err = RunFile(vm, "sandbox/undefined_global.lua");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->file, "sandbox/undefined_global.lua");
  EXPECT_EQ(err->line, 2);
  EXPECT_EQ(err->plugin, "sandbox/undefined_global.lua");
  EXPECT_EQ(err->traceback,
            "stack traceback:\n"
            "\t[C]: in metamethod 'index'\n"
            "\tsandbox/undefined_global.lua:2: in main chunk");
}

TEST(SandboxTest, SyntaxErrorIsReportedWithoutRunning) {
  LuaVm vm;
  vm.PushSandboxEnv("s");
  std::optional<ScriptError> err = vm.RunChunk("local x = = 1", "sandbox/inline.lua", 0);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, "sandbox/inline.lua:1: unexpected symbol near '='");
  EXPECT_EQ(err->file, "sandbox/inline.lua");
  EXPECT_EQ(err->line, 1);
  EXPECT_EQ(err->traceback, "");
  EXPECT_EQ(err->Format(), err->message);
  EXPECT_EQ(lua_gettop(vm.state()), 0);
}

TEST(SandboxTest, BinaryChunksAreRefused) {
  LuaVm vm;
  vm.PushSandboxEnv("s");
  std::optional<ScriptError> err = vm.RunChunk("\x1bLua", "sandbox/binary.lua", 0);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, "attempt to load a binary chunk (mode is 't')");
}

TEST(SandboxTest, CppExceptionFromNativeCodeBecomesScriptError) {
  LuaVm vm;
  vm.Install([](lua_State* L) {
    lua_pushcfunction(L, &ThrowCpp);
    lua_setfield(L, -2, "throw_cpp");
  });
  EXPECT_EQ(SandboxErrorOf(vm, "sandbox/cpp_throw.lua"),
            "sandbox/cpp_throw.lua: a native function threw a C++ exception instead of raising a Lua "
            "error");
  EXPECT_EQ(SandboxErrorOf(vm, "limits/small.lua"), "(no error)");
}

TEST(SandboxTest, FormatJoinsMessageAndTraceback) {
  ScriptError e{.plugin = "x", .file = "plugins/x.lua", .line = 3, .message = "plugins/x.lua:3: bad",
                .traceback = "stack traceback:\n\t[C]: in ?"};
  EXPECT_EQ(e.Format(), "plugins/x.lua:3: bad\nstack traceback:\n\t[C]: in ?");
}

}  // namespace
}  // namespace kplab::host
