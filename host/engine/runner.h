// The metric runner: scores every document with each plugin and aggregates. Plugins that fail are
// reported with their ScriptError; the others still produce results.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kplab/corpus.h"
#include "kplab/kernels.h"
#include "kplab/store.h"
#include "plugin.h"
#include "sandbox.h"

namespace kplab::host {

struct PluginOutcome {
  std::string plugin;
  ScoreColumns columns;                   // public per-document columns, document order
  std::vector<AggregateValue> aggregates;  // in the plugin's order
  std::optional<ScriptError> error;
};

struct EmbeddingSpace;
struct PairIndex;
struct DeclaredColumns;

struct RunContext {
  std::string dataset_name;
  std::string system;
  // Vectors planned for the run (plugins that declare needs = {"embeddings"}); null otherwise.
  std::shared_ptr<const EmbeddingSpace> space;
};

// Progress callback: (done, total) documents of the current plugin.
using Progress = std::function<void(const std::string& plugin, std::size_t done, std::size_t total)>;

// One scoring lane: a VM and the plugins loaded into it (same order in every lane).
struct Lane {
  LuaVm* vm;
  std::vector<const MetricPlugin*> plugins;
};

// Scores documents in parallel lanes (one thread and one Lua VM each; documents split into contiguous
// ranges), then aggregates in the first lane. Results do not depend on the number of lanes: each
// document is scored by the same code, and columns are merged in document order.
class MetricRunner {
 public:
  MetricRunner(std::vector<Lane> lanes, std::shared_ptr<const Corpus> corpus, RunContext ctx);
  // Scores the corpus with plugin number `index` of every lane; never throws for script errors
  // (they land in outcome.error).
  PluginOutcome Run(std::size_t index, const Progress& progress = {});

 private:
  struct Partial;
  void Score(std::size_t lane, std::size_t index, Partial& out, const Progress* progress);
  void ScoreV2(std::size_t lane, std::size_t index, const DeclaredColumns& decl, int slots_ref, Partial& out,
               const Progress* progress);
  Result<std::unique_ptr<MetricKernel>> MakeKernel(const MetricPlugin& plugin) const;
  void ScoreKernel(std::size_t lane, std::size_t index, const DeclaredColumns& decl, Partial& out,
                   const Progress* progress);
  PluginOutcome FinishV2(const MetricPlugin& plugin, const DeclaredColumns& decl, PluginOutcome out);
  void PushCtx(lua_State* L);
  std::vector<Lane> lanes_;
  std::vector<std::size_t> bounds_;  // lane i scores documents [bounds_[i], bounds_[i + 1])
  std::shared_ptr<const Corpus> corpus_;
  RunContext rc_;
  // Gold-similar document pairs for the plugin being run, when it declares needs = {"pairs"}
  // (MineCorpusPairs; read-only while lanes score).
  std::shared_ptr<const PairIndex> pairs_;
  // API 2: v2_[s][j][d] = slot j + 1 of subset s for document d (NaN = none), for the plugin being run;
  // lanes write their own document ranges.
  std::vector<std::vector<std::vector<double>>> v2_;
  // The native kernel of the plugin being run (kp.kernel.NAME), shared by the lanes; null otherwise.
  std::unique_ptr<const MetricKernel> kernel_;
};

}  // namespace kplab::host
