// One evaluation end to end (import, normalize, load plugins, score, aggregate), without storing it.
// Used by `kplab eval`, the conformance tests and the library entry points.
//
// Threads: Evaluate and EvaluateCorpus may be called from several threads at once: each call makes its own Lua
// VMs (one per lane) and threads, and reads the Corpus it is given, which may be shared; the requests and
// results are plain values.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kplab/corpus.h"
#include "kplab/io.h"
#include "kplab/profile.h"
#include "kplab/result.h"
#include "kplab/store.h"
#include "plugin.h"
#include "runner.h"
#include "sandbox.h"

namespace kplab::host {

inline constexpr const char* kDefaultMetrics = "exact,rank,rprec";
inline constexpr int kMaxThreads = 64;

// `kplab eval --ci` (host/engine/bootstrap.h): percentile bootstrap CIs of every aggregate.
struct CiOptions {
  int resamples = 1000;
  double confidence = 0.95;
  std::uint64_t seed = 1;
};

inline constexpr int kMaxCiResamples = 1000000;

struct EvalRequest {
  std::string dataset_path;
  DatasetOptions dataset_options;
  std::optional<std::string> source_path;  // --source
  std::string predictions_path;
  std::string predictions_format;
  std::string system;  // "" = derived from the predictions path (SystemAndSeedFromPath)
  std::optional<std::int64_t> seed;  // nullopt = from the predictions path when it names one
  std::string profile = "kplab";
  std::vector<std::string> metrics;  // empty = kDefaultMetrics
  std::vector<std::string> plugin_dirs;
  std::map<std::string, std::map<std::string, std::string>> params;  // metric -> name -> value
  Limits limits;
  int threads = 0;  // at most this many threads; 0 = one per core (at most 8); each metric as its work pays for
  // false: the run will not be stored, so a Meng-2017 dataset and its "lines" predictions are not hashed
  // (SHA-256 of every byte; RunRecord's dataset_hash and predictions_hash stay empty). kplab eval --no-store.
  bool hash_inputs = true;
  // false: each plugin's per-document columns serve its aggregates and are dropped (EvalResult.scores
  // stays empty; subset_docs is still filled), so a run nobody stores holds one plugin's columns at a
  // time after its corpus is built (kplab eval --no-store); a streamed run (design note 72) holds every
  // plugin's slots while its documents are built and scored, and no corpus.
  bool keep_columns = true;
  std::string model;     // embedding model for plugins that need embeddings; "" = DefaultModelName()
  std::string cache_db;  // phrase-cache database; "" = RunStore::DefaultPath()
  // A partial run (`kplab eval --shard I/N`): score only shard `index` (0-based) of `count` contiguous
  // document ranges, documents [n * index / count, n * (index + 1) / count). Every selected metric must
  // be mergeable (ShardableMetrics), checked before anything is scored.
  struct Shard {
    int64_t index = 0, count = 1;
  };
  std::optional<Shard> shard;
  // `kplab eval --ci`: a percentile bootstrap CI for every aggregate, by re-running each plugin's
  // aggregation over resampled documents (or pairs, for a plugin with units; bootstrap.h). Every
  // selected metric must be re-runnable (NotResampleable), checked before anything is scored. The run
  // then keeps its slots (EvalResult.slots), which `kplab runs compare` resamples.
  std::optional<CiOptions> ci;
  // After scoring, each plugin re-scores the first document of every lane and this many more, each loaded
  // afresh in a Lua state of its own, and the run fails naming the plugin unless every value is the same
  // bit for bit: "plugin 'x' carried state across documents (...)" (RunContext::verify_docs; docs/plugins.md,
  // "What a plugin may keep"); 0 turns it off. Recorded with the run ("_verify").
  int verify_docs = kDefaultVerifyDocs;
  // The run seed of the plugins' math.random (RunContext::random_seed); recorded ("_random_seed") when not 0.
  std::uint64_t random_seed = 0;
};

inline constexpr int kMaxVerifyDocs = 1000000;

// The profile of that name (kplab/profile.h), or the usage error every front-end reports for an unknown
// one: "unknown profile 'x' (did you mean 'y'? expected one of: ...)".
Result<Profile> ProfileNamed(const std::string& name);

// "I/N" (as --shard takes it) -> the shard, or a usage error naming what is wrong.
Result<EvalRequest::Shard> ParseShard(const std::string& text);

// What the plan phase did (runs with semantic metrics).
struct EmbeddingReport {
  std::string model, fingerprint;
  std::size_t phrases = 0, hits = 0, embedded = 0, no_vector = 0;
  double seconds = 0;
  bool phrase_vectors = true;  // false: only token embeddings were asked for (computed while scoring)
};

struct EvalResult {
  RunRecord run;  // everything but id; status "failed" with error text when a plugin failed
  ScoreColumns scores;  // a shard's: its documents only (RunStore::SaveRun stores them so)
  // A shard's (for `kplab runs merge`) or a --ci run's (for `kplab runs compare`): every slot of every
  // plugin, hidden ones too.
  std::vector<SlotColumn> slots;
  std::vector<AggregateValue> aggregates;
  std::vector<ScriptError> errors;
  std::optional<EmbeddingReport> embeddings;
  std::vector<std::string> warnings;  // one line each, for stderr (the corpus's, e.g. stemmed SemEval gold)
  // Documents behind each subset ("all", "present", "absent"): SubsetDocCounts over every plugin's columns.
  std::map<std::string, std::size_t> subset_docs;
  // The corpus and Lua VMs the run used. A caller about to exit may leak this on purpose instead of
  // freeing a large corpus object by object (kplab eval does).
  std::shared_ptr<void> resources;
};

// Documents behind each subset column: the most defined values of any per-document column of that
// subset (present/absent have fewer than all when only some documents have source text).
std::map<std::string, std::size_t> SubsetDocCounts(const ScoreColumns& scores);

// Errors carry their kind: kUsage (unknown profile or metric, bad parameter), kInput (bad files),
// kScript (a plugin that does not load or check()s its parameters with a Lua error). Script errors while
// scoring come back inside EvalResult.errors instead (the run is recorded as failed).
// When every metric compares keys only within a document (the default metrics exact, rank and rprec:
// native kernels without needs or prepare), the run is streamed: each range of documents is scored as
// it is built and then freed (StreamCorpus, design note 72), and the result keeps no corpus; its numbers
// are those of EvaluateCorpus on LoadCorpus, bit for bit. Other runs build the corpus whole first.
Result<EvalResult> Evaluate(const EvalRequest& request, const Progress& progress = {});

// Imports the request's dataset (and its predictions, when predictions_path is not empty) and
// normalizes them under its profile: the first half of Evaluate.
Result<Corpus> LoadCorpus(const EvalRequest& request);

// Scores an already built corpus with the named metric plugins (the second half of Evaluate).
// Fills everything of the result's run record that the corpus and plugins know.
Result<EvalResult> EvaluateCorpus(std::shared_ptr<const Corpus> corpus, const EvalRequest& request,
                                  const Progress& progress = {});

// The system and training seed a predictions path names, for runs stored without --system / --seed:
// a file or directory named seedN (also NAME_seedN, NAME-seedN) gives the seed N; the system is the file's
// stem unless that is a seed or a generic name (predictions, preds, pred, output, outputs, results,
// test, ...), else the nearest directory that is none of those and not the dataset's name
// (`catSeqTG-2RF1/semeval/seed1234.txt` -> catSeqTG-2RF1, 1234; `catSeq/inspec/predictions.txt` ->
// catSeq). dataset_name: the corpus's name (e.g. "semeval", "inspec_hulth2003/Test").
struct SystemSeed {
  std::string system;
  std::optional<std::int64_t> seed;
};
SystemSeed SystemAndSeedFromPath(const std::string& predictions_path, const std::string& dataset_name);

// The dataset identity a run stores: the content hash, mixed with the split and the references file when
// they choose the documents or their references (two splits of one file are two datasets to the store,
// `runs compare` and `runs table`).
std::string RunDatasetHash(const std::string& content_hash, const DatasetOptions& options);

// `path` made absolute and normalized when it names an existing file or directory (runs store paths that
// `runs doc` and `kplab report` can re-read from any directory); otherwise as given.
std::string AbsolutePath(const std::string& path);

// The dataset half of LoadCorpus (with --source attached), imported once for several predictions files.
Result<RawDataset> ImportRequestDataset(const EvalRequest& request);
// The other half: request.predictions_path aligned to `dataset` and normalized under request.profile.
Result<Corpus> LoadCorpusFor(const RawDataset& dataset, const EvalRequest& request);

// Resolves metric names to plugin files (shipped, $KPLAB_PLUGIN_PATH, user dirs) and loads them.
Result<std::vector<MetricPlugin>> LoadMetrics(
    LuaVm& vm, const std::vector<std::string>& names, const std::vector<std::string>& user_dirs,
    const std::map<std::string, std::map<std::string, std::string>>& params);

// Installs every native module into vm's kp table.
void InstallAll(LuaVm& vm);

}  // namespace kplab::host
