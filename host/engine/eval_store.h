// The one evaluate-and-store seam (docs/design-notes.md, "One evaluate-and-store seam"): a request in,
// a stored run or an Error with its kind out. `kplab eval` (and its batches), the C ABI
// (kplab_evaluate*), the Python module (kplab.evaluate), `kp.evaluate` in scripts and the Lua module
// all call EvaluateAndStore, parse `METRIC.NAME=VALUE` parameters with AddParam/ParseParam, and turn
// an Error into their own form with FormFor (exit_code.h): so the same bad request fails the same way,
// with the same message, and a run whose plugin fails is recorded as failed the same way, everywhere.
//
// Threads: EvaluateAndStore may be called from several threads at once with different sinks; a sink
// is used by the calling thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evaluate.h"
#include "kplab/result.h"
#include "kplab/store.h"

namespace kplab::host {

using ParamMap = std::map<std::string, std::map<std::string, std::string>>;  // metric -> name -> value

// Adds METRIC.NAME = VALUE to `params`. A parameter given twice is a usage error, in every front-end
// ("parameter exact.k is given twice (expected one value per parameter)"): which of two values a run
// used would otherwise depend on the front-end (the C ABI used to keep the last, the CLI refused).
Status AddParam(ParamMap& params, const std::string& metric, const std::string& name, std::string value);

// "METRIC.NAME=VALUE" (as --param, the C ABI's ';'-separated list) into `params`, through AddParam.
// Anything else is a usage error: "parameter must be METRIC.NAME=VALUE (got 'x')".
Status ParseParam(std::string_view text, ParamMap& params);

// "METRIC.NAME" (a Python params key) split at its first dot, through AddParam.
Status AddDottedParam(ParamMap& params, std::string_view key, std::string value);

// Where the seam stores a run. path() is what messages name ("run 3 recorded as failed in PATH").
class RunSink {
 public:
  virtual ~RunSink() = default;
  virtual const std::string& path() const = 0;
  virtual Result<std::int64_t> Save(const RunRecord& run, const ScoreColumns& scores,
                                    const std::vector<AggregateValue>& aggregates,
                                    const std::vector<SlotColumn>& slots) = 0;
};

// A store opened at `path` on the first Save (`kplab eval` opens it after scoring: a store that cannot
// be opened is then a store error, and nothing was created for a request that failed before).
class PathSink : public RunSink {
 public:
  explicit PathSink(std::string path) : path_(std::move(path)) {}
  const std::string& path() const override { return path_; }
  Result<std::int64_t> Save(const RunRecord& run, const ScoreColumns& scores,
                            const std::vector<AggregateValue>& aggregates,
                            const std::vector<SlotColumn>& slots) override;
  // The store once opened (a batch keeps using it); opens it now when it is not.
  Result<RunStore*> Store();

 private:
  std::string path_;
  std::optional<RunStore> store_;
};

// A store its caller keeps open (the C ABI's kplab_store).
class OpenSink : public RunSink {
 public:
  OpenSink(RunStore& store, std::string path) : store_(store), path_(std::move(path)) {}
  const std::string& path() const override { return path_; }
  Result<std::int64_t> Save(const RunRecord& run, const ScoreColumns& scores,
                            const std::vector<AggregateValue>& aggregates,
                            const std::vector<SlotColumn>& slots) override {
    return store_.SaveRun(run, scores, aggregates, slots);
  }

 private:
  RunStore& store_;
  std::string path_;
};

struct StoredRun {
  EvalResult result;      // result.run.id is the stored id (0: no sink)
  std::int64_t run_id = 0;
};

struct SeamHooks {
  Progress progress;
  // Called once scoring is done, before anything is stored, also for a run that failed while scoring
  // (the CLI prints the corpus's warnings and the embedding report there, as before the seam).
  std::function<void(const EvalResult&)> scored;
  // When the front-end started the work the run's elapsed_seconds counts (Python converts its objects
  // first); nullopt: when EvaluateAndStore was called.
  std::optional<std::chrono::steady_clock::time_point> started;
};

// Evaluates `request` and stores the run in `sink` (null: not stored).
//  * corpus null: the request's dataset and predictions are imported (Evaluate); the run records their
//    absolute paths. Otherwise the given corpus is scored (EvaluateCorpus), as kp.evaluate and Python's
//    in-memory documents do.
//  * A request that cannot be evaluated (unknown metric or profile, bad or repeated parameter, missing
//    file, a plugin that does not load) is an Error of its kind, and nothing is stored.
//  * A plugin that fails while scoring (a Lua error, a limit reached) gives an Error of kind kScript whose
//    message is each plugin error (file:line and traceback), one after another; with a sink the run is
//    first recorded as failed, without scores, and the message ends "\nrun N recorded as failed in PATH".
//  * A store that fails while saving a good run is an Error of kind kStore.
Result<StoredRun> EvaluateAndStore(const EvalRequest& request, std::shared_ptr<const Corpus> corpus, RunSink* sink,
                                   const SeamHooks& hooks = {});

// Stores an evaluated run in `sink`: a run that failed while scoring (res.errors) is recorded as failed,
// without scores; the new run's id, or the store's error. EvaluateAndStore and `kplab eval`'s batches.
Result<std::int64_t> RecordRun(const EvalResult& res, RunSink& sink);

// The message of a run whose plugins failed while scoring (the errors, one after another).
std::string ScriptErrorsText(const std::vector<ScriptError>& errors);

}  // namespace kplab::host
