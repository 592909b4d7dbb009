// One evaluation end to end (import, normalize, load plugins, score, aggregate), without storing it.
// Used by `kplab eval`, the conformance tests and the library entry points.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kplab/corpus.h"
#include "kplab/io.h"
#include "kplab/result.h"
#include "embedding.h"
#include "kplab/store.h"
#include "plugin.h"
#include "runner.h"
#include "sandbox.h"

namespace kplab::host {

inline constexpr const char* kDefaultMetrics = "exact,rank,rprec";
inline constexpr int kMaxThreads = 64;

struct EvalRequest {
  std::string dataset_path;
  DatasetOptions dataset_options;
  std::optional<std::string> source_path;  // --source
  std::string predictions_path;
  std::string predictions_format;
  std::string system;  // "" = derived from the predictions path
  std::string profile = "kplab";
  std::vector<std::string> metrics;  // empty = kDefaultMetrics
  std::vector<std::string> plugin_dirs;
  std::map<std::string, std::map<std::string, std::string>> params;  // metric -> name -> value
  Limits limits;
  int threads = 0;  // scoring lanes; 0 = one per core (at most 8), one for small corpora
  std::string model;     // embedding model for plugins that need embeddings; "" = DefaultModelName()
  std::string cache_db;  // phrase-cache database; "" = RunStore::DefaultPath()
};

// What the plan phase did (runs with semantic metrics).
struct EmbeddingReport {
  std::string model, fingerprint;
  std::size_t phrases = 0, hits = 0, embedded = 0, no_vector = 0;
  double seconds = 0;
};

struct EvalResult {
  RunRecord run;  // everything but id; status "failed" with error text when a plugin failed
  ScoreColumns scores;
  std::vector<AggregateValue> aggregates;
  std::vector<ScriptError> errors;
  std::optional<EmbeddingReport> embeddings;
  std::vector<std::string> warnings;  // one line each, for stderr (the corpus's, e.g. stemmed SemEval gold)
  // The corpus and Lua VMs the run used. A caller about to exit may leak this on purpose instead of
  // freeing a large corpus object by object (kplab eval does).
  std::shared_ptr<void> resources;
};

// Errors carry their kind: kUsage (unknown profile or metric, bad parameter), kInput (bad files),
// kScript (a plugin that does not load or check()s its parameters with a Lua error). Script errors while
// scoring come back inside EvalResult.errors instead (the run is recorded as failed).
Result<EvalResult> Evaluate(const EvalRequest& request, const Progress& progress = {});

// Imports the request's dataset (and its predictions, when predictions_path is not empty) and
// normalizes them under its profile: the first half of Evaluate.
Result<Corpus> LoadCorpus(const EvalRequest& request);

// Scores an already built corpus with the named metric plugins (the second half of Evaluate).
// Fills everything of the result's run record that the corpus and plugins know.
Result<EvalResult> EvaluateCorpus(std::shared_ptr<const Corpus> corpus, const EvalRequest& request,
                                  const Progress& progress = {});

std::string DefaultSystemName(const std::string& predictions_path);

// Resolves metric names to plugin files (shipped, $KPLAB_PLUGIN_PATH, user dirs) and loads them.
Result<std::vector<MetricPlugin>> LoadMetrics(
    LuaVm& vm, const std::vector<std::string>& names, const std::vector<std::string>& user_dirs,
    const std::map<std::string, std::map<std::string, std::string>>& params);

// The metric names a request selects: its list, or kDefaultMetrics when it names none. A name listed
// twice is a usage error.
Result<std::vector<std::string>> SelectedMetrics(const EvalRequest& request);

// What a run does with freshly loaded plugins before planning: check(params, profile), then
// needs(profile, params) for those whose needs is a function.
Status PreparePlugins(LuaVm& vm, std::vector<MetricPlugin>& plugins, const Profile& profile);

// The plan for prepared plugins: the forms their needs declare and whether the index is loaded.
// Returns false when no plugin needs embeddings (the run plans nothing).
bool PlanNeeds(const std::vector<MetricPlugin>& plugins, PlanRequest& plan);

// The distinct strings a run of this request on this corpus would embed, found by the run's own steps
// (SelectedMetrics, LoadMetrics, PreparePlugins, PlanNeeds, CollectPhrases) without a model or cache.
// Empty when no selected metric needs embeddings. `kplab cache phrases` prints it.
Result<PhrasePlan> PlannedPhrases(const Corpus& corpus, const EvalRequest& request);

// Installs every native module into vm's kp table.
void InstallAll(LuaVm& vm);

}  // namespace kplab::host
