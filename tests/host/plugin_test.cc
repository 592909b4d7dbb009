// Plugin discovery (header, override order), declaration checks with exact messages, ApplyParams, and
// script errors of a loaded plugin, on the files in tests/data/plugins/.
#include "plugin.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include <lua.hpp>

#include "kplab/io.h"

namespace kplab::host {
namespace {

const std::string kPluginData = std::string(KPLAB_TEST_DATA) + "/plugins";

// Keeps KPLAB_PLUGIN_PATH / KPLAB_SHIPPED_PLUGINS out of the way of each test.
class PluginTest : public testing::Test {
 protected:
  void SetUp() override {
    unsetenv("KPLAB_PLUGIN_PATH");
    unsetenv("KPLAB_SHIPPED_PLUGINS");
  }
  void TearDown() override { SetUp(); }
};

const PluginFile* FindPlugin(const std::vector<PluginFile>& files, const std::string& name) {
  for (const PluginFile& f : files) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// Loads decl/<name>.lua as a shipped plugin ("plugins/<name>.lua").
Result<MetricPlugin> LoadDecl(LuaVm& vm, const std::string& name) {
  Result<PluginFile> file = ReadPluginFile(kPluginData + "/decl/" + name + ".lua", "plugins/" + name + ".lua");
  if (!file) return file.error();
  return LoadMetricPlugin(vm, *file);
}

std::string DeclError(const std::string& name) {
  LuaVm vm;
  Result<MetricPlugin> plugin = LoadDecl(vm, name);
  EXPECT_EQ(lua_gettop(vm.state()), 0) << name;
  return plugin ? "(loaded)" : plugin.error().message;
}

std::string LoadedVersion(const PluginFile& file) {
  LuaVm vm;
  Result<MetricPlugin> plugin = LoadMetricPlugin(vm, file);
  return plugin ? plugin->version : plugin.error().message;
}

TEST_F(PluginTest, DiscoversShippedPlugins) {
  Result<std::vector<PluginFile>> files = DiscoverPlugins(kPluginData + "/shipped", {});
  ASSERT_TRUE(files) << files.error().message;
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].name, "boom");
  const PluginFile& exact = (*files)[1];
  EXPECT_EQ(exact.name, "exact");
  EXPECT_EQ(exact.display_name, "plugins/exact.lua");
  EXPECT_EQ(exact.path, kPluginData + "/shipped/exact.lua");
  EXPECT_EQ(exact.api_version, 1);
  EXPECT_EQ(exact.sha256, Sha256Hex(exact.source));
  EXPECT_EQ(exact.sha256.size(), 64u);
  EXPECT_EQ(LoadedVersion(exact), "1.0.0");
}

TEST_F(PluginTest, UserDirOverridesShipped) {
  Result<std::vector<PluginFile>> files = DiscoverPlugins(kPluginData + "/shipped", {kPluginData + "/user/"});
  ASSERT_TRUE(files) << files.error().message;
  const PluginFile* exact = FindPlugin(*files, "exact");
  ASSERT_NE(exact, nullptr);
  EXPECT_EQ(exact->display_name, kPluginData + "/user/exact.lua");
  EXPECT_EQ(LoadedVersion(*exact), "2.0.0");
  EXPECT_NE(FindPlugin(*files, "boom"), nullptr);
}

TEST_F(PluginTest, PluginPathOverridesShippedAndUserDirOverridesPluginPath) {
  setenv("KPLAB_PLUGIN_PATH", (kPluginData + "/envpath::" + kPluginData + "/header/crlf").c_str(), 1);
  Result<std::vector<PluginFile>> files = DiscoverPlugins(kPluginData + "/shipped", {});
  ASSERT_TRUE(files) << files.error().message;
  ASSERT_EQ(files->size(), 4u);  // boom, crlf, exact, extra
  EXPECT_EQ(LoadedVersion(*FindPlugin(*files, "exact")), "3.0.0");
  EXPECT_EQ(FindPlugin(*files, "extra")->display_name, kPluginData + "/envpath/extra.lua");
  EXPECT_EQ(LoadedVersion(*FindPlugin(*files, "crlf")), "1");  // header line ending in \r\n

  files = DiscoverPlugins(kPluginData + "/shipped", {kPluginData + "/user"});
  ASSERT_TRUE(files) << files.error().message;
  EXPECT_EQ(LoadedVersion(*FindPlugin(*files, "exact")), "2.0.0");
}

TEST_F(PluginTest, DirectoryErrors) {
  Result<std::vector<PluginFile>> files = DiscoverPlugins(kPluginData + "/shipped", {kPluginData + "/nope"});
  ASSERT_FALSE(files);
  EXPECT_EQ(files.error().message, kPluginData + "/nope: cannot read plugin directory (No such file or directory)");

  setenv("KPLAB_PLUGIN_PATH", "/nonexistent/kplab", 1);
  files = DiscoverPlugins(kPluginData + "/shipped", {});
  ASSERT_FALSE(files);
  EXPECT_EQ(files.error().message,
            "/nonexistent/kplab: cannot read plugin directory (No such file or directory)");
}

TEST_F(PluginTest, HeaderErrors) {
  Result<std::vector<PluginFile>> files = DiscoverPlugins(kPluginData + "/header/missing", {});
  ASSERT_FALSE(files);
  EXPECT_EQ(files.error().message,
            "plugins/nohead.lua:1: missing API header (expected '-- kplab-api: 2' on the first line)");

  files = DiscoverPlugins(kPluginData + "/shipped", {kPluginData + "/header/missing"});
  ASSERT_FALSE(files);
  EXPECT_EQ(files.error().message, kPluginData +
                                       "/header/missing/nohead.lua:1: missing API header (expected "
                                       "'-- kplab-api: 2' on the first line)");

  files = DiscoverPlugins(kPluginData + "/header/version", {});
  ASSERT_FALSE(files);
  EXPECT_EQ(files.error().message,
            "plugins/future.lua:1: unsupported API version 3 (expected '-- kplab-api: 2', or 1 for plugins written "
            "before API 2)");
}

TEST_F(PluginTest, ShippedPluginDir) {
  EXPECT_EQ(ShippedPluginDir(), std::string(KPLAB_SOURCE_DIR) + "/plugins");
  setenv("KPLAB_SHIPPED_PLUGINS", "/opt/kplab/plugins", 1);
  EXPECT_EQ(ShippedPluginDir(), "/opt/kplab/plugins");
}

TEST_F(PluginTest, DeclarationErrors) {
  EXPECT_EQ(DeclError("no_return"), "plugins/no_return.lua: must return kp.metric{...} (got nil)");
  EXPECT_EQ(DeclError("returns_string"),
            "plugins/returns_string.lua: must return kp.metric{...} (got string)");
  EXPECT_EQ(DeclError("name_not_string"),
            "plugins/name_not_string.lua: field 'name' must be a string");
  EXPECT_EQ(DeclError("name_mismatch"),
            "plugins/name_mismatch.lua: field 'name' is 'foo' but the file is name_mismatch.lua "
            "(expected 'name_mismatch')");
  EXPECT_EQ(DeclError("version_missing"),
            "plugins/version_missing.lua: field 'version' must be a string");
  EXPECT_EQ(DeclError("score_missing"), "plugins/score_missing.lua: field 'score' must be a function");
  EXPECT_EQ(DeclError("param_bad"),
            "plugins/param_bad.lua: field 'params.k' must be a number, string or boolean");
  EXPECT_EQ(DeclError("needs_bad"),
            "plugins/needs_bad.lua: field 'needs[1]' must be one of: source, embeddings, embeddings:stems, model, "
            "neighbors, pairs, tokens");
  EXPECT_EQ(DeclError("unknown_field"), "plugins/unknown_field.lua: unknown field 'scroe'");
  EXPECT_EQ(DeclError("aggregate_bad"),
            "plugins/aggregate_bad.lua: field 'aggregate' must be a function");
}

TEST_F(PluginTest, ChunkErrorsCarryPosition) {
  EXPECT_EQ(DeclError("syntax_error"), "plugins/syntax_error.lua:3: '}' expected (to close '{' at line 2) "
                                       "near 'version'");
  EXPECT_EQ(DeclError("top_error"),
            "plugins/top_error.lua:3: attempt to index a nil value (field 'missing')\n"
            "stack traceback:\n"
            "\tplugins/top_error.lua:3: in main chunk");
}

TEST_F(PluginTest, LoadsFullDeclarationAndScores) {
  LuaVm vm;
  lua_State* L = vm.state();
  Result<MetricPlugin> plugin = LoadDecl(vm, "full");
  ASSERT_TRUE(plugin) << plugin.error().message;
  EXPECT_EQ(lua_gettop(L), 0);
  EXPECT_EQ(plugin->name, "full");
  EXPECT_EQ(plugin->version, "1.2.3");
  EXPECT_EQ(plugin->doc, "Counts predictions.");
  EXPECT_EQ(plugin->needs, (std::vector<std::string>{"source", "embeddings"}));
  ASSERT_EQ(plugin->params.size(), 3u);
  EXPECT_EQ(std::get<double>(plugin->params.at("k")), 5.0);
  EXPECT_EQ(std::get<std::string>(plugin->params.at("mode")), "exact");
  EXPECT_EQ(std::get<bool>(plugin->params.at("strict")), true);
  EXPECT_GE(plugin->score_ref, 0);
  EXPECT_GE(plugin->aggregate_ref, 0);
  EXPECT_GE(plugin->env_ref, 0);

  lua_rawgeti(L, LUA_REGISTRYINDEX, plugin->score_ref);
  lua_pushnil(L);
  lua_newtable(L);
  lua_pushinteger(L, 4);
  lua_setfield(L, -2, "k");
  lua_pushnil(L);
  testing::internal::CaptureStderr();
  std::optional<ScriptError> err = vm.Call(3, 1, "full");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "[full] k is 4\n");
  ASSERT_FALSE(err) << err->Format();
  lua_getfield(L, -1, "n");
  EXPECT_EQ(lua_tointeger(L, -1), 8);
  lua_settop(L, 0);

  ReleaseMetricPlugin(vm, *plugin);
  EXPECT_EQ(plugin->score_ref, LUA_NOREF);
  EXPECT_EQ(plugin->aggregate_ref, LUA_NOREF);
  EXPECT_EQ(plugin->env_ref, LUA_NOREF);
}

TEST_F(PluginTest, AbsentAggregateIsNoRef) {
  LuaVm vm;
  Result<std::vector<PluginFile>> files = DiscoverPlugins(kPluginData + "/shipped", {});
  ASSERT_TRUE(files);
  Result<MetricPlugin> plugin = LoadMetricPlugin(vm, *FindPlugin(*files, "exact"));
  ASSERT_TRUE(plugin) << plugin.error().message;
  EXPECT_EQ(plugin->aggregate_ref, LUA_NOREF);
  EXPECT_TRUE(plugin->params.empty());
  EXPECT_TRUE(plugin->needs.empty());
}

TEST_F(PluginTest, ErrorCarriesFileLineAndTraceback) {
  LuaVm vm;
  lua_State* L = vm.state();
  Result<std::vector<PluginFile>> files = DiscoverPlugins(kPluginData + "/shipped", {});
  ASSERT_TRUE(files);
  Result<MetricPlugin> plugin = LoadMetricPlugin(vm, *FindPlugin(*files, "boom"));
  ASSERT_TRUE(plugin) << plugin.error().message;
  lua_rawgeti(L, LUA_REGISTRYINDEX, plugin->score_ref);
  lua_pushnil(L);
  lua_pushnil(L);
  lua_pushnil(L);
  std::optional<ScriptError> err = vm.Call(3, 1, "boom");
  ASSERT_TRUE(err);
  EXPECT_EQ(lua_gettop(L), 0);
  EXPECT_EQ(err->plugin, "boom");
  EXPECT_EQ(err->file, "plugins/boom.lua");
  EXPECT_EQ(err->line, 5);
  EXPECT_EQ(err->message, "plugins/boom.lua:5: boom: 42");
  EXPECT_EQ(err->traceback,
            "stack traceback:\n"
            "\t[C]: in function 'error'\n"
            "\tplugins/boom.lua:5: in upvalue 'helper'\n"
            "\tplugins/boom.lua:11: in function <plugins/boom.lua:10>");
  EXPECT_EQ(err->Format(), err->message + "\n" + err->traceback);
}

TEST_F(PluginTest, EachPluginHasItsOwnEnvironment) {
  LuaVm vm;
  lua_State* L = vm.state();
  Result<MetricPlugin> a = LoadDecl(vm, "full");
  Result<std::vector<PluginFile>> files = DiscoverPlugins(kPluginData + "/shipped", {});
  ASSERT_TRUE(a && files);
  Result<MetricPlugin> b = LoadMetricPlugin(vm, *FindPlugin(*files, "exact"));
  ASSERT_TRUE(b);
  lua_rawgeti(L, LUA_REGISTRYINDEX, a->env_ref);
  lua_rawgeti(L, LUA_REGISTRYINDEX, b->env_ref);
  EXPECT_TRUE(lua_istable(L, -1) && lua_istable(L, -2));
  EXPECT_FALSE(lua_rawequal(L, -1, -2));
  lua_settop(L, 0);
}

MetricPlugin WithParams() {
  MetricPlugin p;
  p.name = "x";
  p.params = {{"k", 5.0}, {"mode", std::string("exact")}, {"strict", true}};
  return p;
}

TEST(ApplyParamsTest, ConvertsToTheDeclaredType) {
  MetricPlugin p = WithParams();
  ASSERT_TRUE(ApplyParams(p, {{"k", "10"}, {"mode", "partial"}, {"strict", "0"}}));
  EXPECT_EQ(std::get<double>(p.params.at("k")), 10.0);
  EXPECT_EQ(std::get<std::string>(p.params.at("mode")), "partial");
  EXPECT_EQ(std::get<bool>(p.params.at("strict")), false);
  ASSERT_TRUE(ApplyParams(p, {{"k", "2.5"}, {"strict", "true"}}));
  EXPECT_EQ(std::get<double>(p.params.at("k")), 2.5);
  EXPECT_EQ(std::get<bool>(p.params.at("strict")), true);
  ASSERT_TRUE(ApplyParams(p, {{"strict", "false"}}));
  EXPECT_EQ(std::get<bool>(p.params.at("strict")), false);
  ASSERT_TRUE(ApplyParams(p, {{"strict", "1"}}));
  EXPECT_EQ(std::get<bool>(p.params.at("strict")), true);
}

TEST(ApplyParamsTest, Errors) {
  MetricPlugin p = WithParams();
  EXPECT_EQ(ApplyParams(p, {{"kk", "5"}}).message(),
            "plugin 'x': unknown parameter 'kk' (expected one of: k, mode, strict)");
  EXPECT_EQ(ApplyParams(p, {{"k", "abc"}}).message(), "plugin 'x': parameter 'k' must be a number (got 'abc')");
  EXPECT_EQ(ApplyParams(p, {{"k", "5x"}}).message(), "plugin 'x': parameter 'k' must be a number (got '5x')");
  EXPECT_EQ(ApplyParams(p, {{"k", ""}}).message(), "plugin 'x': parameter 'k' must be a number (got '')");
  EXPECT_EQ(ApplyParams(p, {{"k", "inf"}}).message(), "plugin 'x': parameter 'k' must be a number (got 'inf')");
  EXPECT_EQ(ApplyParams(p, {{"strict", "yes"}}).message(),
            "plugin 'x': parameter 'strict' must be a boolean: true, false, 1 or 0 (got 'yes')");
  // A failing override leaves every parameter as it was.
  EXPECT_FALSE(ApplyParams(p, {{"k", "7"}, {"strict", "maybe"}}));
  EXPECT_EQ(std::get<double>(p.params.at("k")), 5.0);

  MetricPlugin bare;
  bare.name = "exact";
  EXPECT_EQ(ApplyParams(bare, {{"k", "5"}}).message(),
            "plugin 'exact': unknown parameter 'k' (the plugin declares no parameters)");
  EXPECT_TRUE(ApplyParams(bare, {}));
}

}  // namespace
}  // namespace kplab::host
