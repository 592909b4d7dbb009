// The read-back layer of the run store (docs/store.md, "Reading a store back"). Every value RunStore
// returns from a file is read here, with the type the schema gives it, and checked against the rest of
// its run before any caller sees it: NULLs and types, enum and text columns, counts against the run's
// documents, blob lengths against counts, shard ranges (computed without overflow), the numbering of
// documents, plugins, columns and slots, every slot present in every subset of its plugin, the public
// slots against the score columns, units against the documents, JSON fields. A file that fails any of
// these is refused by name ("PATH: run 7: scores of 'all.p@5' hold 3 values, the run has 5
// documents") and never returned, so no consumer — runs list/show/export/compare/table/report/drill/
// merge, kp.runs, Python, the C ABI — can read a run that is not sound: host code has no SQLite of its
// own (tests/layout/store_access.py checks it), and RunStore's reading methods only call these.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <SQLiteCpp/Database.h>

#include "kplab/result.h"
#include "kplab/store.h"

namespace kplab::store_internal {

// What the readers need of an open RunStore.
struct ReadContext {
  SQLite::Database& db;
  const std::string& path;
  int schema_version;
};

Result<std::vector<RunSummary>> ReadRunList(const ReadContext& c);

// What the slot checks need to know of a run.
struct RunFacts {
  bool ok = true;      // status "ok"
  bool shard = false;  // a partial run: keeps every slot of every plugin
  bool ci = false;     // scored with --ci (params_json "_ci"): keeps every slot of every plugin
  int64_t n_docs = 0;  // the dataset's documents (units index them)
};
// The slots of a run as a whole (each plugin's subsets number their slots 1..k with the same names;
// units; shards and --ci runs keep every plugin's) and against its score columns as stored (a shard's
// over its own documents): the public slots are the score columns. SaveRun checks what it is given
// with this before writing, the read-back what it read. Errors start with `where`.
Status CheckRunSlots(const std::string& where, const RunFacts& facts, const std::vector<PluginRecord>& plugins,
                     const ScoreColumns& scores, const std::vector<SlotColumn>& slots);
// Whether run `id` exists; a file whose runs table cannot be read is an error, not "no".
Result<bool> ReadRunExists(const ReadContext& c, int64_t id);
Result<RunRecord> ReadRun(const ReadContext& c, int64_t id);
Result<std::vector<AggregateValue>> ReadAggregates(const ReadContext& c, int64_t id);
// The score columns (a shard's padded with NaN to every document), checked against the slots the run
// stores beside them.
Result<ScoreColumns> ReadScores(const ReadContext& c, int64_t id);
// The slots, checked against the score columns.
Result<std::vector<SlotColumn>> ReadSlots(const ReadContext& c, int64_t id);

}  // namespace kplab::store_internal
