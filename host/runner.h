// The metric runner: scores every document with each plugin and aggregates. Plugins that fail are
// reported with their ScriptError; the others still produce results.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kplab/corpus.h"
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

struct RunContext {
  std::string dataset_name;
  std::string system;
};

// Progress callback: (done, total) documents of the current plugin.
using Progress = std::function<void(const std::string& plugin, std::size_t done, std::size_t total)>;

class MetricRunner {
 public:
  MetricRunner(LuaVm& vm, std::shared_ptr<const Corpus> corpus, RunContext ctx);
  // Scores the corpus with the plugin; never throws for script errors (they land in outcome.error).
  PluginOutcome Run(const MetricPlugin& plugin, const Progress& progress = {});

 private:
  void PushCtx();
  LuaVm& vm_;
  std::shared_ptr<const Corpus> corpus_;
  RunContext rc_;
  int docs_ref_ = -1;  // registry table of Document userdata, built once
  int ctx_ref_ = -1;
};

}  // namespace kplab::host
