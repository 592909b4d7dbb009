// One gate for files, checked as a property: every kp function of a script's VM and of a plugin's VM,
// called with paths outside the grants in every argument shape (a path, a table of path fields, a
// corpus and options), every plugin parameter type set to such a path through kp.evaluate, a plugin
// that is a symbolic link out of a granted directory, a dataset file that is one, a SQLite URI: the gate
// (kplab/file_gate.h) allows no file outside, and no message carries a byte of a file outside.
// tests/layout/file_gate.py checks the other half: that every opener in core/ and host/ asks the gate.
#include <gtest/gtest.h>
#include <unistd.h>

#include <lua.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "bindings.h"
#include "cli_harness.h"
#include "evaluate.h"
#include "kplab/file_gate.h"
#include "lua_script.h"
#include "sandbox.h"

namespace kplab::host {
namespace {

namespace fs = std::filesystem;

const char* const kSecret = "TOPSECRET-7f3a";

// Every path under `outside` the gate let through, and how many it refused there.
std::mutex g_mu;
std::string g_outside;
std::vector<std::string> g_allowed_outside;
int g_refused_outside = 0;

void Observe(std::string_view path, FileAccess /*access*/, bool allowed) {
  Result<std::string> resolved = ResolvePath(path.substr(0, path.find('\0')));
  if (!resolved) return;
  // A SQLite "file:" name is a path relative to the working directory for the gate (and for SQLite, which
  // kplab gives "./file:..."): it is outside when what follows "file:" names the outside directory.
  std::string_view p(path);
  const bool uri_outside =
      p.starts_with("file:") && ResolvePath(p.substr(5)) && PathWithin(*ResolvePath(p.substr(5)), g_outside);
  std::lock_guard<std::mutex> lock(g_mu);
  if (!PathWithin(*resolved, g_outside) && !uri_outside) return;
  if (allowed && !uri_outside) {
    g_allowed_outside.emplace_back(path);
  } else {
    ++g_refused_outside;
  }
}

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

const char* kPeek = R"(-- kplab-api: 2
return kp.metric{
  name = "peek", version = "1",
  params = { path = kp.string{ default = "", doc = "a path the plugin tries to read" } },
  columns = function(c, p) return { x = c:column("x") } end,
  prepare = function(corpus, p, ctx)
    local ok, err = pcall(kp.bertscore_baseline, p.path, 0)
    if not ok then error(err, 0) end
    return {}
  end,
  score = function(doc, p, ctx, out) out[ctx.slots.x] = 0 end,
}
)";

// One parameter of every declared type; prepare tries each value as a path.
const char* kTyped = R"(-- kplab-api: 2
return kp.metric{
  name = "typed", version = "1",
  params = { n = kp.number{ default = 0 }, i = kp.int{ default = 0 }, b = kp.bool{ default = false },
             s = kp.string{ default = "" }, c = kp.cutoffs{ default = "5" } },
  columns = function(c, p) return { x = c:column("x") } end,
  prepare = function(corpus, p, ctx)
    for _, k in ipairs{"n", "i", "b", "s", "c"} do
      local v = p[k]
      if type(v) == "table" then v = table.concat(v, ",") end
      local ok, err = pcall(kp.bertscore_baseline, tostring(v), 0)
      if not ok then error(err, 0) end
    end
    return {}
  end,
  score = function(doc, p, ctx, out) out[ctx.slots.x] = 0 end,
}
)";

// Calls every kp function with outside paths in many shapes; returns "name\tmessage" lines.
const char* kProbe = R"(
local S, SD, GP, DSL, C = ...
local lines, fns = {}, {}
local function try(name, f, ...)
  local ok, err = pcall(f, ...)
  lines[#lines + 1] = name .. "\t" .. tostring(err)
end
local function walk(t, prefix)
  for k, v in pairs(t) do
    if type(v) == "function" then fns[#fns + 1] = {prefix .. k, v}
    elseif type(v) == "table" then walk(v, prefix .. k .. ".") end
  end
end
walk(kp, "kp.")
table.sort(fns, function(a, b) return a[1] < b[1] end)
local T = {dataset = S, predictions = S, source = S, db = S, path = S, file = S, plugins = {SD}, model = SD,
           baseline = S}
local shapes = {table.pack(S), table.pack(S, S), table.pack(S, 0), table.pack(T), table.pack(1, S),
                table.pack(S, T)}
if C then
  shapes[#shapes + 1] = table.pack(C, S)
  shapes[#shapes + 1] = table.pack(C, T)
  shapes[#shapes + 1] = table.pack(C, {"exact"}, nil, T)
end
for _, e in ipairs(fns) do
  -- kp.log only writes its arguments to stderr: called once, not in every shape.
  for i, a in ipairs(shapes) do
    if e[1] ~= "kp.log" or i == 1 then try(e[1], e[2], table.unpack(a, 1, a.n)) end
  end
end
if C then
  try("kp.evaluate>peek.path", kp.evaluate, C, {"peek"}, {peek = {path = S}}, {plugins = {GP}})
  try("kp.evaluate>bertscore.baseline", kp.evaluate, C, {"bertscore"}, {bertscore = {baseline = S}})
  for _, k in ipairs{"n", "i", "b", "s", "c"} do
    try("kp.evaluate>typed." .. k, kp.evaluate, C, {"typed"}, {typed = {[k] = S}}, {plugins = {GP}})
  end
  try("kp.evaluate>leak", kp.evaluate, C, {"leak"}, nil, {plugins = {GP}})
  try("kp.evaluate>db uri", kp.evaluate, C, {"exact"}, nil, {db = "file:" .. S .. ".db"})
  try("kp.evaluate>model", kp.evaluate, C, {"semantic"}, nil, {model = "../../" .. SD})
  try("kp.load>dataset file", kp.load, {dataset = DSL})
  try("kp.runs.list>uri", kp.runs.list, "file:" .. S .. "?mode=ro")
end
lines[#lines + 1] = "functions\t" .. #fns
return lines
)";

class FileGateProperty : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_gate_prop_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    for (const char* f : {"tiny_context.txt", "tiny_allkeywords.txt", "predictions.txt"}) {
      fs::create_directories(dir_ / "granted/ds");
      fs::copy_file(fs::path(KPLAB_SOURCE_DIR) / "examples/tiny" / f, dir_ / "granted/ds" / f);
    }
    Write(dir_ / "outside/secret.txt", std::string(kSecret) + "\nsecond line\n");
    Write(dir_ / "outside/secret.lua", std::string("-- kplab-api: 2\n") + kSecret + " plugin code\n");
    Write(dir_ / "outside/plugins/exact.lua", "-- kplab-api: 2\n" + std::string(kSecret) + "\n");
    Write(dir_ / "outside/keys.txt", std::string(kSecret) + "\n");
    Write(dir_ / "granted/plugins/peek.lua", kPeek);
    Write(dir_ / "granted/plugins/typed.lua", kTyped);
    fs::create_symlink(dir_ / "outside/secret.lua", dir_ / "granted/plugins/leak.lua");
    fs::create_directories(dir_ / "granted/ds_link");
    fs::copy_file(dir_ / "granted/ds/tiny_context.txt", dir_ / "granted/ds_link/tiny_context.txt");
    fs::create_symlink(dir_ / "outside/keys.txt", dir_ / "granted/ds_link/tiny_allkeywords.txt");
    g_outside = *ResolvePath((dir_ / "outside").string());
    g_allowed_outside.clear();
    g_refused_outside = 0;
    SetFileGateObserver(&Observe);
  }
  void TearDown() override {
    SetFileGateObserver(nullptr);
    fs::remove_all(dir_);
  }

  // Runs kProbe in `vm` (a fresh env) with the probe's arguments; with_corpus: C is kp.load of
  // granted/ds (the VM has the script API). Returns the probe's lines.
  std::vector<std::string> Probe(LuaVm& vm, bool with_corpus) {
    lua_State* L = vm.state();
    const int top = lua_gettop(L);
    vm.PushSandboxEnv("probe.lua");  // [env]
    if (luaL_loadbufferx(L, kProbe, std::strlen(kProbe), "@probe.lua", "t") != LUA_OK) {
      ADD_FAILURE() << lua_tostring(L, -1);
      lua_settop(L, top);
      return {};
    }
    lua_pushvalue(L, -2);
    lua_setupvalue(L, -2, 1);  // [env, probe] with _ENV = env
    for (const std::string& a : {(dir_ / "outside/secret.txt").string(), (dir_ / "outside/plugins").string(),
                                 (dir_ / "granted/plugins").string(), (dir_ / "granted/ds_link").string()}) {
      lua_pushlstring(L, a.data(), a.size());
    }
    int nargs = 4;
    if (with_corpus) {
      vm.PushSandboxEnv("load.lua");
      const std::string load = "return kp.load{dataset = '" + (dir_ / "granted/ds").string() + "', predictions = '" +
                               (dir_ / "granted/ds/predictions.txt").string() + "'}";
      if (std::optional<ScriptError> err = vm.RunChunk(load, "load.lua", 1)) {
        ADD_FAILURE() << err->Format();
        lua_settop(L, top);
        return {};
      }
      nargs = 5;
    }
    std::optional<ScriptError> err = vm.Call(nargs, 1, "probe.lua");
    std::vector<std::string> lines;
    if (err) {
      ADD_FAILURE() << err->Format();
    } else {
      for (lua_Integer i = 1; i <= static_cast<lua_Integer>(lua_rawlen(L, -1)); ++i) {
        lua_rawgeti(L, -1, i);
        lines.emplace_back(lua_tostring(L, -1));
        lua_pop(L, 1);
      }
    }
    lua_settop(L, top);
    return lines;
  }

  fs::path dir_;
};

// The message of the first line for `name` containing `needle` (any line when needle is empty).
std::string Find(const std::vector<std::string>& lines, const std::string& name, const std::string& needle = "") {
  for (const auto& l : lines) {
    if (l.starts_with(name + "\t") && l.find(needle, name.size()) != std::string::npos)
      return l.substr(name.size() + 1);
  }
  return "(no line " + name + " with '" + needle + "')";
}

TEST_F(FileGateProperty, NoKpFunctionOfAScriptOrAPluginReachesAFileOutsideItsGrants) {
  Limits limits;
  limits.seconds = 120;
  // A script: the granted directory (as its current directory would be), nothing else.
  LuaVm script(limits);
  InstallAll(script);
  FileGrants grants = FileGrants::Script();
  grants.write.push_back(*ResolvePath((dir_ / "granted").string()));
  InstallScriptApi(script, (dir_ / "granted/probe.lua").string(), grants);
  const std::vector<std::string> s = Probe(script, true);
  // A plugin's VM: no script API, no grants.
  LuaVm plugin(limits);
  InstallAll(plugin);
  const std::vector<std::string> p = Probe(plugin, false);

  EXPECT_TRUE(g_allowed_outside.empty()) << "allowed outside: " << g_allowed_outside.front();
  EXPECT_GT(g_refused_outside, 0) << "the gate was asked about the outside paths";
  for (const auto* lines : {&s, &p}) {
    for (const std::string& l : *lines) EXPECT_EQ(l.find(kSecret), std::string::npos) << l;
  }
  // Every kp function was called (the script has the plugin's API and the script API).
  const int script_fns = std::stoi(Find(s, "functions")), plugin_fns = std::stoi(Find(p, "functions"));
  EXPECT_GE(plugin_fns, 60);
  EXPECT_EQ(script_fns, plugin_fns + 8);  // load, evaluate, read, write, include, runs.list/get/table
  // The deep paths, each refused for the reason that applies.
  const std::string outside_read = "outside the directories scripts may read";
  const std::string plugin_read = "not a file a plugin may read";
  const std::string secret = (dir_ / "outside/secret.txt").string();
  EXPECT_NE(Find(s, "kp.evaluate>peek.path").find("kp.bertscore_baseline: " + secret + ": " + plugin_read),
            std::string::npos)
      << Find(s, "kp.evaluate>peek.path");
  EXPECT_NE(Find(s, "kp.evaluate>typed.s").find(plugin_read), std::string::npos) << Find(s, "kp.evaluate>typed.s");
  for (const char* k : {"n", "i", "b", "c"}) {  // the other types do not take a path at all
    EXPECT_NE(Find(s, std::string("kp.evaluate>typed.") + k).find("plugin 'typed': parameter '" + std::string(k)),
              std::string::npos)
        << Find(s, std::string("kp.evaluate>typed.") + k);
  }
  EXPECT_NE(Find(s, "kp.evaluate>leak").find("leak.lua: " + outside_read), std::string::npos)
      << Find(s, "kp.evaluate>leak");
  EXPECT_NE(Find(s, "kp.load>dataset file").find("ds_link/tiny_allkeywords.txt: " + outside_read), std::string::npos)
      << Find(s, "kp.load>dataset file");
  EXPECT_NE(Find(s, "kp.evaluate>model").find("invalid model name"), std::string::npos) << Find(s, "kp.evaluate>model");
  EXPECT_FALSE(fs::exists(dir_ / "outside/secret.txt.db"));
  EXPECT_NE(Find(p, "kp.bertscore_baseline", plugin_read),
            "(no line kp.bertscore_baseline with '" + plugin_read + "')");
  EXPECT_NE(Find(s, "kp.read", outside_read), "(no line kp.read with '" + outside_read + "')");
  EXPECT_NE(Find(s, "kp.write", "outside the directories scripts may write"), "");
  EXPECT_NE(Find(s, "kp.include", outside_read), "(no line kp.include with '" + outside_read + "')");
  EXPECT_NE(Find(s, "kp.runs.list", outside_read), "(no line kp.runs.list with '" + outside_read + "')");
}

// The same through the command line: a confined `kplab run` cannot hand a plugin a path outside its grants
// (the first line of the file was the plugin's for the asking), the user's own --param is read but no
// error quotes the file to the plugin, and the $KPLAB_* locations grant what they name and no more.
class FileGateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kplab_gate_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    Write(dir_ / "outside/secret.txt", std::string(kSecret) + "\n");
    Write(dir_ / "plugins/peek.lua", kPeek);
  }
  void TearDown() override { fs::remove_all(dir_); }
  kplab::test::Output Script(const std::string& lua, const std::string& env = "") {
    Write(dir_ / "s.lua", lua);
    return kplab::test::RunKplab(dir_, "KPLAB_DB=" + (dir_ / "runs.db").string() + " " + env,
                                 "run --allow-read " + (dir_ / "plugins").string() + " " + (dir_ / "s.lua").string());
  }
  fs::path dir_;
};

TEST_F(FileGateCli, AScriptCannotHandAPluginAPathOutsideItsGrants) {
  const std::string secret = (dir_ / "outside/secret.txt").string();
  auto o = Script(
      "local c = kp.load{dataset = 'examples/tiny', predictions = 'examples/tiny/predictions.txt'}\n"
      "print(pcall(kp.evaluate, c, {'peek'}, {peek = {path = '" +
      secret + "'}}, {plugins = {'" + (dir_ / "plugins").string() + "'}}))\n");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.find(kSecret), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("false\tkp.evaluate: "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("kp.bertscore_baseline: " + secret +
                       ": not a file a plugin may read (only the value of one of its string parameters "
                       "set for the run, e.g. --param METRIC.NAME=PATH, read while its prepare runs)"),
            std::string::npos)
      << o.out;
}

TEST_F(FileGateCli, TheUsersOwnParameterIsReadButNotQuotedToThePlugin) {
  const std::string secret = (dir_ / "outside/secret.txt").string();
  auto o = kplab::test::RunKplab(dir_, "",
                                 "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt "
                                 "--no-store --plugins " +
                                     (dir_ / "plugins").string() + " --metrics peek --param peek.path=" + secret);
  EXPECT_EQ(o.code, 3);
  EXPECT_EQ(o.err.find(kSecret), std::string::npos) << o.err;
  EXPECT_NE(o.err.find(secret + ":1: expected the header LAYER,P,R,F (the line is not shown: a plugin is given a "
                                "baseline's numbers, not its text)"),
            std::string::npos)
      << o.err;
}

TEST_F(FileGateCli, KplabEnvironmentLocationsGrantWhatTheyNameAndNoMore) {
  // $KPLAB_PLUGIN_PATH: a script may run a plugin found there (by name), not read its directory.
  Write(dir_ / "envplugins/hidden.txt", std::string(kSecret) + "\n");
  fs::copy_file(fs::path(KPLAB_SOURCE_DIR) / "plugins/exact.lua", dir_ / "envplugins/envexact.lua");
  {
    std::string src = kplab::test::Slurp(dir_ / "envplugins/envexact.lua");
    const std::string from = "name = \"exact\"";
    ASSERT_NE(src.find(from), std::string::npos);
    src.replace(src.find(from), from.size(), "name = \"envexact\"");
    Write(dir_ / "envplugins/envexact.lua", src);
  }
  const std::string env =
      "KPLAB_PLUGIN_PATH=" + (dir_ / "envplugins").string() + " KPLAB_MODELS=" + (dir_ / "envplugins").string();
  auto o = Script(
      "local c = kp.load{dataset = 'examples/tiny', predictions = 'examples/tiny/predictions.txt'}\n"
      "print(kp.evaluate(c, {'envexact'}).aggregates['all.p@5.micro'])\n"
      "print(pcall(kp.read, '" +
          (dir_ / "envplugins/hidden.txt").string() + "'))\n",
      env);
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.substr(0, o.out.find('\n')), "0.48") << o.out;
  EXPECT_EQ(o.out.find(kSecret), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("kp.read: " + (dir_ / "envplugins/hidden.txt").string() +
                       ": outside the directories scripts "
                       "may read"),
            std::string::npos)
      << o.out;
  // $KPLAB_DB: that file is readable (kp.runs), not writable, and nothing beside it is readable.
  ASSERT_EQ(kplab::test::RunKplab(dir_, "KPLAB_DB=" + (dir_ / "outside/runs.db").string(),
                                  "eval --dataset examples/tiny --predictions examples/tiny/predictions.txt")
                .code,
            0);
  o = Script(
      "print(#kp.runs.list())\n"
      "print(pcall(kp.read, '" +
          (dir_ / "outside/secret.txt").string() +
          "'))\n"
          "local c = kp.load{dataset = 'examples/tiny', predictions = 'examples/tiny/predictions.txt'}\n"
          "print(pcall(kp.evaluate, c, 'exact', nil, {db = '" +
          (dir_ / "outside/runs.db").string() + "'}))\n",
      "KPLAB_DB=" + (dir_ / "outside/runs.db").string());
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.substr(0, o.out.find('\n')), "1") << o.out;
  EXPECT_EQ(o.out.find(kSecret), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("kp.evaluate: opts.db: " + (dir_ / "outside/runs.db").string() +
                       ": outside the directories scripts may write"),
            std::string::npos)
      << o.out;
}

}  // namespace
}  // namespace kplab::host
