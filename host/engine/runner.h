// The metric runner: scores every document with each plugin and aggregates. Plugins that fail are
// reported with their ScriptError; the others still produce results.
//
// Threads: a MetricRunner is driven by one thread, which runs each lane on a thread of its own (one LuaVm per
// lane) and joins them before Run returns; the Corpus is shared read-only. A streamed run's ScoreRange is
// called by the corpus build's threads at once, between BeginStream and FinishStream on the driving one.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kplab/corpus.h"
#include "kplab/kernels.h"
#include "kplab/store.h"
#include "plugin.h"
#include "sandbox.h"

namespace kplab {
struct EmbeddingSpace;  // kplab/embedding_plan.h
}  // namespace kplab

namespace kplab::host {

inline constexpr int kDefaultVerifyDocs = 16;

// One unit reported by score with ctx.unit(key, values) (a plugin that declares c:units): the document
// (corpus index) and subset (index into the plugin's subsets, 0 without) it was scored in, the plugin's
// key for it (homogeneity: the partner document's corpus index), and the slots it wrote (1-based).
struct UnitRow {
  std::size_t doc = 0, subset = 0;
  double key = 0;
  std::vector<std::pair<int, double>> values;
};

struct PluginOutcome {
  std::string plugin;
  ScoreColumns columns;                   // public per-document columns, document order
  std::vector<AggregateValue> aggregates;  // in the plugin's order
  std::optional<ScriptError> error;
  // API 2, when RunContext::keep_slots: every declared slot (hidden ones too) of the scored documents,
  // slots[s][j] = slot j + 1 of subset s (empty when the run allocated none for that subset), with the
  // subset names ("" for a plugin without subsets), slot names and hidden flags.
  std::vector<std::vector<std::vector<double>>> slots;
  std::vector<std::string> slot_subsets;
  std::vector<std::pair<std::string, bool>> slot_names;
  // When RunContext::keep_slots and the plugin declares c:units: its units, in document order.
  std::vector<UnitRow> units;
  double verify_seconds = 0;  // wall time of the re-scoring after the run (RunContext::verify_docs)
  std::size_t lanes = 1;      // the lanes the plugin was scored on (LanesFor)
};

struct PairIndex;
struct DeclaredColumns;
struct UnitSink;
class BorrowScope;

struct RunContext {
  std::string dataset_name;
  std::string system;
  // Vectors planned for the run (plugins that declare needs = {"embeddings"}); null otherwise.
  std::shared_ptr<const EmbeddingSpace> space;
  // The documents scored, [begin, end) in corpus order (a shard, `kplab eval --shard`); end = 0 means
  // every document. Columns, slots and aggregates then cover these documents only (pairs and
  // embeddings still see the whole corpus).
  std::size_t begin = 0, end = 0;
  bool keep_slots = false;  // fill PluginOutcome::slots
  // After scoring, each plugin re-scores the first document of every lane and this many more (spread over
  // the documents) in a Lua state of its own, each document loaded afresh, and the run fails unless every
  // value is the same bit for bit (docs/plugins.md, "What a plugin may keep"); 0: no re-scoring.
  int verify_docs = kDefaultVerifyDocs;
  // The run seed of the plugins' math.random: document d's stream is math.randomseed(SeedKey(plugin, d),
  // random_seed)'s (SeedForDocument).
  std::uint64_t random_seed = 0;
  // At most this many lanes score a plugin (0: as many as the runner is given). How many do is LanesFor's
  // choice for the plugin (lanes.h), or all of them (up to one per document) when lanes_by_cost is false
  // (KPLAB_LANES=max).
  std::size_t max_lanes = 0;
  bool lanes_by_cost = true;
  // A streamed run's document count (design note 72): the corpus given to the runner is then the
  // streamed build's header, without documents (MetricRunner::BeginStream).
  std::optional<std::size_t> streamed_docs;
};

// Canonical display order of metric names (subset, then segments compared naturally).
bool MetricNameLess(std::string_view a, std::string_view b);

// Pushes the context table a plugin's custom aggregates see when no corpus is loaded (`kplab runs
// merge`): profile, n_docs, dataset, system. [-0, +1]
void PushMergeCtx(lua_State* L, const Profile& profile, std::size_t n_docs, const std::string& dataset,
                  const std::string& system);

// A run's slot columns of 4 MiB and more (half a million documents) are kept off 2 MiB pages (design
// note 75): AdviseSmallPages(p, bytes) advises the whole 2 MiB pages within [p, p + bytes)
// (WholeHugePages: [lo, hi), empty as {at, at}) MADV_NOHUGEPAGE on Linux, before their first touch;
// nothing elsewhere or for a smaller array. Advice only: the memory works the same either way.
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20, kSmallPagesFrom = 2 * kHugePageBytes;
std::pair<std::uintptr_t, std::uintptr_t> WholeHugePages(std::uintptr_t at, std::size_t bytes);
void AdviseSmallPages(const void* p, std::size_t bytes);
// A slot column of n documents, every value NaN (none written yet), advised so when it is that large.
std::vector<double> NewSlotColumn(std::size_t n);

// The run-level values (sorted by MetricNameLess) and public columns an API 2 plugin's slot values give:
// what a run does after scoring, and what `kplab runs merge` does with the shards' slots. values[s][j] is
// slot j + 1 of subset s over the documents. Errors name the plugin file.
Status FinishSlots(LuaVm& vm, const MetricPlugin& plugin, const DeclaredColumns& decl,
                   std::vector<std::vector<std::vector<double>>> values,
                   const std::function<void(lua_State*)>& push_ctx, PluginOutcome& out);

// Progress callback: (done, total) documents of the current plugin.
using Progress = std::function<void(const std::string& plugin, std::size_t done, std::size_t total)>;

// One scoring lane: a VM and the plugins loaded into it (same order in every lane).
struct Lane {
  LuaVm* vm;
  std::vector<const MetricPlugin*> plugins;
};

// Makes one more lane (a VM with the run's plugins loaded, owned by the caller), for a plugin scored in
// Lua that is to use more lanes than the runner has; called on the runner's thread.
using LaneFactory = std::function<Result<Lane>()>;

// Scores documents in parallel lanes (one thread each; documents split into contiguous ranges), then
// aggregates in the first lane. Each plugin gets the lanes its expected work pays for (LanesFor, within
// RunContext::max_lanes): a plugin scored in Lua one VM per lane (more are made with `more` when needed),
// a native kernel only the first lane's VM (its other lanes run no Lua). Results do not depend on the
// number of lanes: each document is scored by the same code, and columns are merged in document order.
class MetricRunner {
 public:
  MetricRunner(std::vector<Lane> lanes, std::shared_ptr<const Corpus> corpus, RunContext ctx, LaneFactory more = {});
  ~MetricRunner();
  MetricRunner(const MetricRunner&) = delete;
  MetricRunner& operator=(const MetricRunner&) = delete;
  // The lanes the last Run scored on.
  std::size_t lanes_used() const { return n_lanes_; }
  // Scores the corpus with plugin number `index` of every lane; never throws for script errors
  // (they land in outcome.error).
  PluginOutcome Run(std::size_t index, const Progress& progress = {});

  // A streamed run (RunContext::streamed_docs; every plugin a kernel that ComparesWithinDocuments),
  // scored as StreamCorpus builds its ranges (design note 72). BeginStream declares each plugin's
  // columns, allocates its slots and makes its kernels, before any document is built (CorpusSinks::start's
  // plan); ScoreRange is CorpusSinks::range, called by the build's threads at once, each with documents
  // of its own; FinishStream gives plugin `index`'s outcome as Run would, the lanes being the build's
  // ranges. Script errors land in the outcome.
  void BeginStream(const StreamPlan& plan);
  void ScoreRange(const Corpus& range, std::size_t begin);
  PluginOutcome FinishStream(std::size_t index);

 private:
  struct Partial;
  // Stack indices of what score gets with every document (API 2): params, the ctx data table (ctx.subset
  // is written in it per call), the read-only ctx, and the reused out table.
  struct V2Frame {
    int params = 0, data = 0, ctx = 0, out = 0;
  };
  using SlotArrays = std::vector<std::vector<std::vector<double>>>;  // [subset][slot][row]
  void Score(std::size_t lane, std::size_t index, Partial& out, const Progress* progress);
  void ScoreV2(std::size_t lane, std::size_t index, const DeclaredColumns& decl, int slots_ref, Partial& out,
               const Progress* progress);
  V2Frame PushV2Frame(lua_State* L, const MetricPlugin& plugin, const DeclaredColumns& decl, int slots_ref,
                      UnitSink& sink, const BorrowScope& unit_scope);
  bool ScoreDocumentV2(LuaVm& vm, const MetricPlugin& plugin, const DeclaredColumns& decl, const V2Frame& f,
                       UnitSink& sink, std::size_t d, SlotArrays& dest, std::size_t row,
                       std::optional<ScriptError>& error);
  // The documents re-scored by Verify: the first of every lane (lanes[i] its first document, the last
  // entry the end) and rc_.verify_docs more.
  std::vector<std::size_t> VerifySample(const std::vector<std::size_t>& lanes) const;
  // Re-scores VerifySample() with the plugin loaded afresh (a fresh kernel for kp.kernel plugins) and
  // compares with what the lanes wrote (API 2: v2_ and `units`; API 1: `cols`, names -> columns over the
  // scored documents). Returns the error that fails the run, or nothing.
  std::optional<ScriptError> Verify(const MetricPlugin& plugin, const DeclaredColumns* decl,
                                    const std::vector<UnitRow>* units,
                                    const std::vector<std::pair<std::string, const std::vector<double>*>>* cols,
                                    const std::shared_ptr<RunBudget>& budget);
  Result<std::unique_ptr<MetricKernel>> MakeKernel(const MetricPlugin& plugin) const;
  void ScoreKernel(std::size_t lane, std::size_t index, const DeclaredColumns& decl, Partial& out,
                   const Progress* progress);
  PluginOutcome FinishV2(const MetricPlugin& plugin, const DeclaredColumns& decl, PluginOutcome out);
  // Run's steps for plugin `index`: declare and prepare in every lane (API 2), allocate the slot arrays,
  // make its native kernel, score in the lanes, and (API 1) merge, verify and aggregate the columns.
  class LaneDecls;
  std::optional<ScriptError> DeclareLanes(std::size_t index, LaneDecls& decls);
  void AllocateSlots(const MetricPlugin& plugin, const DeclaredColumns& decl, SlotArrays& slots, bool any_text) const;
  std::optional<ScriptError> SetUpKernel(const MetricPlugin& plugin, const DeclaredColumns* decl);
  std::vector<Partial> ScoreLanes(std::size_t index, LaneDecls& decls, const Progress& progress);
  PluginOutcome FinishV1(const MetricPlugin& plugin, std::vector<Partial>& parts,
                         const std::shared_ptr<RunBudget>& run_budget, PluginOutcome out);
  void PushCtx(lua_State* L);
  std::optional<ScriptError> Prepare(LuaVm& vm, const MetricPlugin& plugin, DeclaredColumns& decl);
  // Sets n_lanes_ and bounds_ for `plugin`, making the VMs it needs (fewer lanes when one cannot be made).
  void ChooseLanes(const MetricPlugin& plugin);
  // The lanes whose VMs a plugin uses: all of them, or the first for a native kernel.
  std::size_t VmLanes(const MetricPlugin& plugin) const;
  void SetUpVm(lua_State* L) const;
  std::vector<Lane> lanes_;  // the VMs made so far (at least the first)
  LaneFactory more_lanes_;
  std::size_t max_lanes_ = 1;
  std::size_t n_lanes_ = 1;          // the lanes of the plugin being run
  std::vector<std::size_t> bounds_;  // lane i scores documents [bounds_[i], bounds_[i + 1])
  std::size_t offset_ = 0, n_scored_ = 0;  // the documents scored: [offset_, offset_ + n_scored_)
  std::size_t n_docs_ = 0;                 // the corpus's documents (ctx.n_docs)
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
  // A streamed run's: each plugin's state, and the documents its verification re-scores.
  struct StreamState;
  std::vector<std::unique_ptr<StreamState>> streams_;
  std::vector<std::size_t> stream_sample_;
  std::size_t stream_ranges_ = 0;
};

}  // namespace kplab::host
