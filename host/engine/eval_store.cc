#include "eval_store.h"

#include <chrono>
#include <utility>

#include <fmt/format.h>

namespace kplab::host {

Status AddParam(ParamMap& params, const std::string& metric, const std::string& name, std::string value) {
  if (metric.empty() || name.empty()) {
    return Error::Usage(fmt::format("parameter must be METRIC.NAME=VALUE (got '{}.{}={}')", metric, name, value));
  }
  if (!params[metric].emplace(name, std::move(value)).second) {
    return Error::Usage(fmt::format("parameter {}.{} is given twice (expected one value per parameter)", metric, name));
  }
  return Status::Ok();
}

Status ParseParam(std::string_view text, ParamMap& params) {
  const auto dot = text.find('.');
  const auto eq = text.find('=');
  if (dot == std::string_view::npos || eq == std::string_view::npos || dot > eq || dot == 0 || eq == dot + 1) {
    return Error::Usage(fmt::format("parameter must be METRIC.NAME=VALUE (got '{}')", text));
  }
  return AddParam(params, std::string(text.substr(0, dot)), std::string(text.substr(dot + 1, eq - dot - 1)),
                  std::string(text.substr(eq + 1)));
}

Status AddDottedParam(ParamMap& params, std::string_view key, std::string value) {
  const auto dot = key.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == key.size()) {
    return Error::Usage(fmt::format("parameter key '{}' (expected METRIC.NAME, e.g. 'semrp.k')", key));
  }
  return AddParam(params, std::string(key.substr(0, dot)), std::string(key.substr(dot + 1)), std::move(value));
}

Result<RunStore*> PathSink::Store() {
  if (!store_) {
    auto store = RunStore::Open(path_);
    if (!store) return store.error();
    store_.emplace(std::move(*store));
  }
  return &*store_;
}

Result<std::int64_t> PathSink::Save(const RunRecord& run, const ScoreColumns& scores,
                                    const std::vector<AggregateValue>& aggregates,
                                    const std::vector<SlotColumn>& slots) {
  auto store = Store();
  if (!store) return store.error();
  return (*store)->SaveRun(run, scores, aggregates, slots);
}

std::string ScriptErrorsText(const std::vector<ScriptError>& errors) {
  std::string out;
  for (const auto& e : errors) {
    if (!out.empty()) out += '\n';
    out += e.Format();
  }
  return out;
}

Result<std::int64_t> RecordRun(const EvalResult& res, RunSink& sink) {
  // A failed run keeps no scores: `kplab runs list` shows what was tried and why it failed.
  auto id = res.errors.empty() ? sink.Save(res.run, res.scores, res.aggregates, res.slots) : sink.Save(res.run, {}, {}, {});
  if (!id) return id.error();
  return id;
}

Result<StoredRun> EvaluateAndStore(const EvalRequest& request, std::shared_ptr<const Corpus> corpus, RunSink* sink,
                                   const SeamHooks& hooks) {
  const auto start = hooks.started.value_or(std::chrono::steady_clock::now());
  Result<EvalResult> res = corpus ? EvaluateCorpus(std::move(corpus), request, hooks.progress)
                                  : Evaluate(request, hooks.progress);
  if (!res) return res.error();
  res->run.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (hooks.scored) hooks.scored(*res);
  StoredRun out;
  if (!res->errors.empty()) {
    std::string message = ScriptErrorsText(res->errors);
    if (sink != nullptr) {
      if (auto id = RecordRun(*res, *sink)) {
        message += fmt::format("\nrun {} recorded as failed in {}", *id, sink->path());
      }
    }
    return Error::Script(std::move(message));
  }
  if (sink != nullptr) {
    auto id = RecordRun(*res, *sink);
    if (!id) return id.error();
    out.run_id = *id;
    res->run.id = *id;
  }
  out.result = std::move(*res);
  return out;
}

}  // namespace kplab::host
