// Metric plugins: a Lua file with the header "-- kplab-api: 2" (or 1) that returns kp.metric{...}
// (docs/plugins.md).
// The declaration is checked field by field; errors name the file and field exactly, e.g.
// "plugins/semrp.lua: field 'params.k' must be a number, string or boolean".
//
// Threads: a MetricPlugin belongs to the LuaVm it was loaded in (its registry refs) and is used by that VM's
// thread only; every lane loads its own.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kplab/profile.h"
#include "kplab/result.h"
#include "params.h"
#include "sandbox.h"

struct lua_State;

namespace kplab::host {

struct MetricPlugin {
  PluginFile file;
  std::string name;     // declared name (must equal the file stem)
  std::string version;  // declared version string, e.g. "1.0.0"
  std::string doc;      // optional doc string
  int api = 1;          // the file's "-- kplab-api: N"
  std::map<std::string, ParamValue> params;  // declared defaults, then the run's values (ApplyParams)
  // API 2: every parameter's declared type, range and doc (same keys as params).
  std::map<std::string, ParamSpec> param_specs;
  // API 2: subsets the host iterates ("all", "present", "absent"); empty: score is called once per
  // document with full column names.
  std::vector<std::string> subsets;
  // API 2: why the run-level values cannot be rebuilt from the per-document slots of shards (`kplab runs
  // merge`); "" = they can (the default): `kplab eval --shard` refuses a plugin that declares a reason.
  std::string unmergeable;
  int columns_ref = -2;  // API 2: columns(c, params) (LUA_NOREF for API 1)
  int state_ref = -2;    // API 2: the record of frozen upvalues (LuaVm::FreezeState)
  std::vector<std::string> needs;            // e.g. {"source"}, {"embeddings"}
  // `needs` may be a function(profile, params) returning the list, called once per run after the
  // parameters are applied (ResolveNeeds), so a plugin embeds only the forms its profile uses.
  bool needs_is_function = false;
  int needs_ref = -2;  // LUA_NOREF unless needs_is_function
  // Registry refs into the VM that loaded the plugin; they live until ReleaseMetricPlugin or the VM's
  // end. An absent aggregate is LUA_NOREF (-2): test `ref >= 0` rather than comparing with -1.
  int score_ref = -1;
  // "exact", "rank" or "rprec" when score is kp.kernel.NAME: the host scores with that native kernel
  // (kplab/kernels.h) and never calls score; "" otherwise.
  std::string kernel;
  int aggregate_ref = -1;  // optional
  int env_ref = -1;        // the plugin's own _ENV
  // The generator behind the plugin's own math.random (LuaVm::GiveOwnRandom), re-seeded by the host before
  // every call into the plugin (SeedForDocument, SeedForCall).
  int random_ref = -2;
  int check_ref = -2;      // optional check(params, profile) -> nil | message (LUA_NOREF if none)
  // API 2, optional: prepare(corpus, params, ctx) -> plain data, called once per run and lane before any
  // document is scored, over the whole corpus (a shard's too); score reads the value as ctx.prepared.
  int prepare_ref = -2;
  // The files named by the kp.string parameter values the user set for this run (ApplyParams), resolved
  // (kplab/file_gate.h), and only those the context that set them may read itself (a script's grants;
  // the command line's: any): the only files the plugin may read (kp.bertscore_baseline), and only
  // while its prepare runs. Plugin code cannot name files itself — not even through a parameter's
  // default.
  std::vector<std::string> readable_files;
};

// Runs the plugin file in its own sandbox env inside vm and checks the returned declaration.
// Required: name (string == file stem), version (string), score (function); API 2 also columns
// (function). Optional: params (API 1: table of string -> number|boolean|string; API 2: kp.int{...} etc.),
// needs (array of strings among "source", "embeddings", "embeddings:stems", "neighbors", "pairs", "tokens", or a
// function), check (function), doc (string); API 1: aggregate (function); API 2: subsets (list of
// "all", "present", "absent"). Unknown fields are errors. An API 2 plugin's state is frozen after load
// (LuaVm::FreezeState).
Result<MetricPlugin> LoadMetricPlugin(LuaVm& vm, const PluginFile& file);

// For a plugin whose `needs` is a function: calls needs(profile, params) in `vm` (the VM that loaded it)
// under the instruction budget and replaces plugin.needs with the checked result. Errors name the
// plugin file ("plugins/x.lua:3: ..." with traceback, or "plugins/x.lua: needs() returned ..."). A
// plugin with a plain list is left as it is.
Status ResolveNeeds(LuaVm& vm, MetricPlugin& plugin, const Profile& profile);

// Calls the plugin's optional check(params, profile) once per run, after ApplyParams: nil means the
// parameters are fine; a string is the usage error "plugin 'x': MESSAGE"; a Lua error is a script error
// with its traceback.
Status CheckParams(LuaVm& vm, const MetricPlugin& plugin, const Profile& profile);

// Seed the plugin's math.random before a call into it (docs/plugins.md, Randomness): for scoring
// document `doc_id`, as math.randomseed(SeedKey(name, doc_id), run_seed) would; before any other call
// (`call`: "columns", "prepare", "aggregate", ...), as math.randomseed(SeedKey(name, "\x01" + call)).
// So a document's numbers depend on the run seed, the plugin and the document only: not on the lane,
// on what the lane scored before, or on the other plugins.
void SeedForDocument(lua_State* L, const MetricPlugin& plugin, std::uint64_t run_seed, std::string_view doc_id);
void SeedForCall(lua_State* L, const MetricPlugin& plugin, std::string_view call);

// Pushes the plugin's parameters as a strict read-only table (integral numbers as Lua integers; API 2
// cut-off lists as read-only lists {5, 10, "M"}). [-0, +1]
void PushParams(lua_State* L, const MetricPlugin& plugin);
// Pushes the profile as a table: name and every knob (booleans as booleans). [-0, +1]
void PushProfile(lua_State* L, const Profile& profile);

// Drops the plugin's registry refs (score, aggregate, env) so the VM can collect them; refs become
// LUA_NOREF. Only needed when a VM outlives the plugins it loaded (REPL reloads).
void ReleaseMetricPlugin(LuaVm& vm, MetricPlugin& plugin);

// Whether the plugin compares keys only within a document: a native kernel among exact, rank and rprec,
// with nothing that reads phrases across documents (no needs, no prepare). By what the plugin is, not
// by its name (a plugin directory may give a shipped name to another plugin). kplab eval streams a run
// whose plugins all are: each range of documents is scored as it is built, and no corpus is kept
// (kplab/corpus.h StreamCorpus, design note 72).
bool ComparesWithinDocuments(const MetricPlugin& plugin);

// Overrides declared defaults with user values ("k=5" strings from the CLI); unknown names and
// type mismatches are errors naming the plugin and parameter.
Status ApplyParams(MetricPlugin& plugin, const std::map<std::string, std::string>& overrides);

}  // namespace kplab::host
