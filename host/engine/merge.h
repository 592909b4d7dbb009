// `kplab runs merge`: the shards of one evaluation (partial runs written by `kplab eval --shard I/N`,
// in one or several stores) rebuilt into the whole run. The shards' per-document slots (hidden ones
// too) are put back in document order and the plugins' own aggregation runs over them, so every
// aggregate is computed from the same numbers in the same order as by the single-process run
// (docs/store.md, "Shards and runs merge").
//
// Threads: MergeShards may be called from several threads at once (it opens its own stores and Lua VM); the
// requests and results are plain values.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kplab/result.h"
#include "kplab/store.h"
#include "sandbox.h"

namespace kplab::host {

struct MergeRequest {
  std::vector<std::string> from;  // stores to read shards from (at least one)
  // Runs to merge: "ID" (looked up in every store of `from`: it must be in exactly one) or "FILE:ID".
  // Empty: every shard found in `from` (they must all belong to one evaluation).
  std::vector<std::string> runs;
  // Where to look for a plugin whose recorded file is gone or has changed (as eval's --plugins); the
  // shipped directory and $KPLAB_PLUGIN_PATH are searched too. A file is used only when its SHA-256 is
  // the one the shards recorded.
  std::vector<std::string> plugin_dirs;
  Limits limits;
};

struct MergeResult {
  RunRecord run;  // the whole run (no shard), ready for RunStore::SaveRun
  ScoreColumns scores;
  std::vector<AggregateValue> aggregates;
  std::map<std::string, std::size_t> subset_docs;
  std::vector<std::string> shards;  // "run 3 in a.db (shard 0/4)", in document order
};

// Reads and checks the shards and recomputes the run; writes nothing. Errors (kUsage for shards that do
// not make one run, kStore for unreadable stores, kScript for a plugin that fails to aggregate) name the
// runs, files and what differs.
Result<MergeResult> MergeShards(const MergeRequest& request);

// The plugin file a run ran: the recorded path, else the same name in `dirs`, the shipped directory and
// $KPLAB_PLUGIN_PATH, with the recorded SHA-256. `who` names the run(s) in the error ("the shards").
Result<PluginFile> FindPluginFile(const PluginRecord& rec, const std::vector<std::string>& dirs,
                                  const std::string& who);

// What a run's params_json records (evaluate.cc writes it): an object whose members are objects of
// scalars, each member a plugin's parameters, or one of the run's own records when its key starts
// with '_' ("_dataset": how the dataset was read; "_ci": how CIs were drawn). Values are kept as text
// (strings unescaped), as ApplyParams takes them. An error for text that is not such JSON, or nests
// deeper than a small bound; "" is a run without parameters.
struct RunParams {
  std::map<std::string, std::map<std::string, std::string>> plugins;
  std::map<std::string, std::map<std::string, std::string>> records;
};
Result<RunParams> ParseRunParams(const std::string& params_json);
// ParseRunParams(params_json).plugins.
Result<std::map<std::string, std::map<std::string, std::string>>> ParsePluginParams(const std::string& params_json);

}  // namespace kplab::host
