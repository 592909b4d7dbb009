// Real run stores changed behind kplab's back (store_mutator.h).
#include "store_mutator.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "compare.h"
#include "drill.h"
#include "evaluate.h"
#include "kplab/store.h"
#include "merge.h"
#include "table.h"

namespace kplab::storefuzz {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "store_mutator: %s\n", what.c_str());
  std::abort();
}

// A plugin that declares units (c:units), so that the --ci runs store '#' subsets as homogeneity does.
constexpr const char* kUnitsPlugin = R"(-- kplab-api: 2
return kp.metric {
  name = "unitsx", version = "1",
  columns = function(c)
    local s = { n = c:hidden("n"), d = c:hidden("d") }
    c:sum("all.n", s.n)
    c:ratio("all.r", s.n, s.d)
    c:units("items")
    return s
  end,
  score = function(doc, _, ctx, out)
    out[ctx.slots.n], out[ctx.slots.d] = 2, 1
    ctx.unit(1, { [ctx.slots.n] = 1, [ctx.slots.d] = 0.5 })
    ctx.unit(2, { [ctx.slots.n] = 1, [ctx.slots.d] = 0.5 })
  end,
}
)";

void Save(const std::string& db, host::EvalRequest req) {
  auto corpus = host::LoadCorpus(req);
  if (!corpus) Die(corpus.error().message);
  auto res = host::EvaluateCorpus(std::make_shared<const Corpus>(std::move(*corpus)), req);
  if (!res) Die(res.error().message);
  if (!res->errors.empty()) Die(res->errors.front().Format());
  res->run.dataset_path = req.dataset_path;
  res->run.predictions_path = req.predictions_path;
  auto store = RunStore::Open(db);
  if (!store) Die(store.error().message);
  auto id = store->SaveRun(res->run, res->scores, res->aggregates, res->slots);
  if (!id) Die(id.error().message);
}

std::string MakePristine() {
  // In memory when the system has a tmpfs: thousands of copies and changes are made.
  std::string tmpl = std::string(fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp") + "/kplab-storefuzz-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp " + tmpl);
  const std::string dir = tmpl;
  // Removed at exit; the name is kept apart from the static that destructors may have ended by then.
  static const std::string* removed_at_exit = new std::string(dir);
  std::atexit([] {
    std::error_code ec;
    fs::remove_all(*removed_at_exit, ec);
  });
  fs::create_directories(dir + "/pl");
  std::ofstream(dir + "/pl/unitsx.lua") << kUnitsPlugin;
  host::EvalRequest req;
  req.dataset_path = std::string(KPLAB_SOURCE_DIR) + "/examples/tiny";
  req.predictions_path = req.dataset_path + "/predictions.txt";
  req.threads = 1;
  req.system = "a";
  Save(dir + "/whole.db", req);
  req.system = "b";
  Save(dir + "/whole.db", req);
  req.system = "a";
  for (int i : {0, 1}) {
    req.shard = host::EvalRequest::Shard{i, 2};
    Save(dir + "/s" + std::to_string(i) + ".db", req);
  }
  req.shard.reset();
  req.metrics = {"exact", "unitsx"};
  req.plugin_dirs = {dir + "/pl"};
  req.ci = host::CiOptions{100, 0.95, 1};
  Save(dir + "/ci.db", req);
  req.system = "b";
  Save(dir + "/ci.db", req);
  // 4 KiB pages instead of kplab's 64 KiB: the same rows in a tenth of the bytes, for the thousands of
  // copies a run of the tests makes (the page size is SQLite's business, not the rows').
  for (const char* name : kStores) {
    SQLite::Database db(dir + "/" + name, SQLite::OPEN_READWRITE);
    db.exec("PRAGMA journal_mode = DELETE");
    db.exec("PRAGMA page_size = 4096");
    db.exec("VACUUM");
    db.exec("PRAGMA journal_mode = WAL");
  }
  return dir;
}

struct Table {
  const char* name;
  std::vector<const char*> keys, columns;  // columns: every column, keys first
};

// The schema of version 6 (core/src/store/store.cc). A column added to a table goes last, so that the
// inputs kept in tests/fuzz (which pick a column by its byte modulo the count) keep the columns they
// had where their byte is below the old count.
const std::vector<Table>& Tables() {
  static const std::vector<Table> kTables = {
      {"runs",
       {"id"},
       {"id", "dataset_id", "system_id", "predictions_path", "predictions_hash", "profile", "params_json",
        "embedder_fingerprint", "kplab_version", "created_at", "elapsed_seconds", "status", "error", "seed",
        "shard_index", "shard_count", "doc_begin", "doc_end", "slots_digest"}},
      {"datasets", {"id"}, {"id", "name", "path", "format", "content_hash", "n_docs"}},
      {"documents", {"dataset_id", "idx"}, {"dataset_id", "idx", "doc_id"}},
      {"systems", {"id"}, {"id", "name"}},
      {"run_plugins", {"run_id", "idx"}, {"run_id", "idx", "name", "version", "sha256", "file"}},
      {"scores", {"run_id", "idx"}, {"run_id", "idx", "metric", "n", "values_f64le"}},
      {"aggregates", {"run_id", "idx"}, {"run_id", "idx", "metric", "value", "ci_low", "ci_high"}},
      {"run_slots",
       {"run_id", "plugin_idx", "subset", "slot"},
       {"run_id", "plugin_idx", "subset", "slot", "name", "hidden", "n", "values_f64le"}},
      {"meta", {"key"}, {"key", "value"}},
  };
  return kTables;
}

// Values a column is set to: integers at their limits and around the counts of tiny (5 documents,
// shards of 2 and 3), reals, texts that are meaningful somewhere in the schema, blobs, NULL.
const std::vector<std::string>& Values() {
  static const std::vector<std::string> kValues = {
      "NULL", "0", "1", "-1", "2", "3", "5", "6", "4294967296", "2305843009213693952", "4611686018427387904",
      "9223372036854775807", "-9223372036854775808", "2.5", "-0.0", "1e300", "9e999", "''", "'x'", "'ok'",
      "'failed'", "'all'", "'present'", "'#:units'", "'{}'", "'{\"_ci\": {}}'", "'[[['", "'2026-11-29T10:00:00Z'",
      "char(27) || '[2J'", "x''", "x'00'", "zeroblob(8)", "zeroblob(40)", "randomblob(24)"};
  return kValues;
}

// The systematic test's smaller list: one value of each kind that matters (NULL, zero, negative, one
// past tiny's counts, the limits, a count whose 8 * n wraps, a non-integer, infinity, texts, a blob).
const std::vector<std::string>& SystematicValues() {
  static const std::vector<std::string> kValues = {"NULL",  "0",    "-1",     "6",      "2305843009213693952",
                                                   "9223372036854775807", "-9223372036854775808", "2.5",
                                                   "9e999", "''",   "'x'",    "x'00'"};
  return kValues;
}

// WHERE clause choosing row `row` of the table in key order (negative: from the end).
std::string RowWhere(const Table& t, int row) {
  std::string keys;
  for (const char* k : t.keys) keys += std::string(keys.empty() ? "" : ", ") + k;
  std::string order;
  for (const char* k : t.keys) order += std::string(order.empty() ? "" : ", ") + k + (row < 0 ? " DESC" : "");
  return fmt::format("({}) IN (SELECT {} FROM {} ORDER BY {} LIMIT 1 OFFSET {})", keys, keys, t.name, order,
                     row < 0 ? -row - 1 : row);
}

std::string Update(const Table& t, const std::string& column, int row, const std::string& value) {
  return fmt::format("UPDATE {} SET {} = {} WHERE {}", t.name, column, value, RowWhere(t, row));
}

std::string Delete(const Table& t, int row) { return fmt::format("DELETE FROM {} WHERE {}", t.name, RowWhere(t, row)); }

// A copy of a row whose key column `key` is moved by `by` (a duplicate run, document, column, slot).
std::string Duplicate(const Table& t, const std::string& key, int row, int by) {
  std::string cols, values;
  for (const char* c : t.columns) {
    cols += std::string(cols.empty() ? "" : ", ") + c;
    values += std::string(values.empty() ? "" : ", ") + (c == key ? fmt::format("{} + {}", c, by) : std::string(c));
  }
  return fmt::format("INSERT INTO {}({}) SELECT {} FROM {} WHERE {}", t.name, cols, values, t.name, RowWhere(t, row));
}

// The blob changes of a values_f64le column.
std::vector<std::string> BlobValues() {
  return {"substr(values_f64le, 1, 8)",    "substr(values_f64le, 1, length(values_f64le) - 3)",
          "values_f64le || zeroblob(8)",   "zeroblob(length(values_f64le))",
          "x'000000000000f87f' || substr(values_f64le, 9)",  // the first value NaN
          "substr(values_f64le, 1, 8) || x'0000000000000040' || substr(values_f64le, 17)"};  // the second 2.0
}

// Bytes read one at a time; 0 past the end.
struct Reader {
  const std::uint8_t* p;
  std::size_t n, i = 0;
  std::uint8_t Byte() { return i < n ? p[i++] : 0; }
  bool More() const { return i < n; }
};

}  // namespace

std::string Change::Describe() const {
  return fmt::format("{}{}: {}", kStores[store], loosen ? " (constraints off)" : "", sql);
}

const std::string& PristineDir() {
  static const std::string dir = MakePristine();
  return dir;
}

// Layout: per change 6 bytes — store, kind, table, column, row, value. kind % 8: 0-2 set a column to a
// value of Values(), 3 delete the row, 4 duplicate it under another key, 5 change a blob column, 6 the
// same with constraints off, 7 set a column to a value read from the next 8 bytes (an integer).
std::vector<Change> Decode(const std::uint8_t* data, std::size_t size) {
  Reader r{data, size};
  std::vector<Change> out;
  while (r.More() && out.size() < 8) {
    Change c;
    c.store = r.Byte() % 4;
    const int kind = r.Byte() % 8;
    const Table& t = Tables()[r.Byte() % Tables().size()];
    const std::string column = t.columns[r.Byte() % t.columns.size()];
    const int row = static_cast<int>(r.Byte() % 16) - 8;  // 0..7 from the start, -1..-8 from the end
    const std::uint8_t v = r.Byte();
    if (kind <= 2 || kind == 6) {
      c.sql = Update(t, column, row, Values()[v % Values().size()]);
      c.loosen = kind == 6;
    } else if (kind == 3) {
      c.sql = Delete(t, row);
    } else if (kind == 4) {
      c.sql = Duplicate(t, t.keys.back(), row, 1 + v % 4);
    } else if (kind == 5) {
      const std::string blob_table = v % 2 ? "scores" : "run_slots";
      const Table& b = *std::find_if(Tables().begin(), Tables().end(),
                                     [&](const Table& x) { return x.name == blob_table; });
      c.sql = Update(b, "values_f64le", row, BlobValues()[v / 2 % BlobValues().size()]);
    } else {
      std::uint64_t x = 0;
      for (int k = 0; k < 8; ++k) x = x << 8 | r.Byte();
      c.sql = Update(t, column, row, std::to_string(static_cast<std::int64_t>(x)));
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<std::vector<Change>> Systematic() {
  std::vector<std::vector<Change>> out;
  for (int store : {0, 2, 3}) {  // s0.db is s1.db's twin
    for (const Table& t : Tables()) {
      for (int row : {0, -1}) {
        for (const char* column : t.columns) {
          for (const std::string& v : SystematicValues()) {
            const bool loosen = v == "NULL";
            out.push_back({{store, Update(t, column, row, v), loosen}});
          }
        }
        out.push_back({{store, Delete(t, row), false}});
        out.push_back({{store, Duplicate(t, t.keys.back(), row, 1), false}});
      }
    }
    for (const char* table : {"scores", "run_slots"}) {
      const Table& b = *std::find_if(Tables().begin(), Tables().end(),
                                     [&](const Table& x) { return std::string(x.name) == table; });
      for (int row : {0, 3, -1}) {
        for (const std::string& v : BlobValues()) out.push_back({{store, Update(b, "values_f64le", row, v), false}});
      }
    }
  }
  // Every slot row of a shard zeroed, hidden ones too: the fuzzer's first finding on the store was the
  // sixth (exact's rden@5 of subset 'absent', whose zeros the merge's re-aggregation could not see);
  // the first and last rows above do not reach the rows between.
  {
    SQLite::Database s1(PristineDir() + "/" + kStores[2], SQLite::OPEN_READONLY);
    const int rows = s1.execAndGet("SELECT count(*) FROM run_slots").getInt();
    const Table& slots = *std::find_if(Tables().begin(), Tables().end(),
                                       [](const Table& x) { return std::string(x.name) == "run_slots"; });
    for (int row = 0; row < rows; ++row) {
      out.push_back({{2, Update(slots, "values_f64le", row, "zeroblob(length(values_f64le))"), false}});
    }
  }
  // Both shards changed alike (a merge checks one against the other).
  out.push_back({{1, "DELETE FROM run_slots WHERE subset = 'present'"}, {2, "DELETE FROM run_slots WHERE subset = 'present'"}});
  out.push_back({{1, "DELETE FROM run_plugins WHERE idx = 1"}, {2, "DELETE FROM run_plugins WHERE idx = 1"}});
  out.push_back({{1, "UPDATE runs SET profile = 'kpeval'"}, {2, "UPDATE runs SET profile = 'kpeval'"}});
  out.push_back({{1, "DELETE FROM aggregates"}, {2, "DELETE FROM aggregates"}});
  return out;
}

std::vector<std::string> ColumnsNotMutated() {
  std::vector<std::string> out;
  SQLite::Database db(PristineDir() + "/" + kStores[2], SQLite::OPEN_READONLY);
  SQLite::Statement tables(db,
                           "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                           "AND name NOT IN ('embed_models', 'phrase_vectors') ORDER BY name");
  while (tables.executeStep()) {
    const std::string table = tables.getColumn(0).getString();
    const auto t = std::find_if(Tables().begin(), Tables().end(), [&](const Table& x) { return x.name == table; });
    SQLite::Statement cols(db, "SELECT name FROM pragma_table_info(?)");
    cols.bind(1, table);
    while (cols.executeStep()) {
      const std::string column = cols.getColumn(0).getString();
      if (t == Tables().end() || std::find(t->columns.begin(), t->columns.end(), column) == t->columns.end()) {
        out.push_back(table + "." + column);
      }
    }
  }
  return out;
}

bool Apply(const std::string& work, const std::vector<Change>& changes) {
  std::error_code ec;
  fs::remove_all(work, ec);
  fs::create_directories(work);
  // The stores Exercise reads: those changed, and both shards when one is (a merge reads them together).
  std::set<int> copy;
  for (const Change& c : changes) copy.insert(c.store);
  if (copy.count(1) || copy.count(2)) copy.insert({1, 2});
  for (int s : copy) fs::copy_file(PristineDir() + "/" + kStores[s], work + "/" + kStores[s]);
  try {
    for (const Change& c : changes) {
      const std::string path = work + "/" + kStores[c.store];
      // A copy thrown away after the test: no need to wait for the disk.
      auto open = [&] {
        auto db = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READWRITE);
        db->exec("PRAGMA synchronous = OFF");
        return db;
      };
      if (c.loosen) {
        auto db = open();
        db->exec("PRAGMA writable_schema = ON");
        db->exec(
            "UPDATE sqlite_master SET sql = replace(replace(sql, 'NOT NULL', ''), "
            "'CHECK(status IN (''ok'', ''failed''))', '') WHERE type = 'table'");
        const int v = db->execAndGet("PRAGMA schema_version").getInt();
        db->exec("PRAGMA schema_version = " + std::to_string(v + 1));
      }
      auto db = open();
      db->exec(c.sql);
    }
  } catch (const SQLite::Exception&) {
    return false;
  }
  return true;
}

namespace {

bool Same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// What every reader of a run relies on (the read-back's promises), checked on what was returned.
void CheckRun(const std::string& where, const RunRecord& run, const ScoreColumns* scores,
              const std::vector<AggregateValue>* aggs, const std::vector<SlotColumn>* slots,
              const std::function<void(const std::string&)>& fail) {
  const auto n = static_cast<std::int64_t>(run.doc_ids.size());
  if (run.status != "ok" && run.status != "failed") fail(where + ": a status that is neither ok nor failed");
  if (run.shard) {
    const ShardInfo want = ShardRange(n, run.shard->index, run.shard->count);
    if (run.shard->count < 1 || run.shard->index < 0 || run.shard->index >= run.shard->count ||
        run.shard->count > std::max<std::int64_t>(n, 1) || run.shard->begin != want.begin || run.shard->end != want.end) {
      fail(fmt::format("{}: shard {}/{} [{}, {}) of {} documents", where, run.shard->index, run.shard->count,
                       run.shard->begin, run.shard->end, n));
    }
  }
  if (scores) {
    std::set<std::string> names;
    if (scores->metrics.size() != scores->columns.size()) fail(where + ": score names and columns disagree");
    for (std::size_t c = 0; c < scores->columns.size(); ++c) {
      if (scores->columns[c].size() != run.doc_ids.size()) {
        fail(fmt::format("{}: column '{}' has {} values for {} documents", where, scores->metrics[c],
                         scores->columns[c].size(), n));
      }
      if (scores->metrics[c].empty() || !names.insert(scores->metrics[c]).second) fail(where + ": a column name twice or empty");
      // What `runs export` does: every value of every document.
      double sink = 0;
      for (std::size_t d = 0; d < run.doc_ids.size(); ++d) sink += scores->columns[c][d] * 0;
      (void)sink;
      if (run.shard) {
        for (std::int64_t d = 0; d < n; ++d) {
          if ((d < run.shard->begin || d >= run.shard->end) && !std::isnan(scores->columns[c][static_cast<std::size_t>(d)])) {
            fail(where + ": a shard's column has a value outside its documents");
          }
        }
      }
    }
    if (run.status == "failed" && !scores->metrics.empty()) fail(where + ": a failed run with scores");
  }
  if (aggs) {
    std::set<std::string> names;
    for (const auto& a : *aggs) {
      if (a.metric.empty() || !names.insert(a.metric).second) fail(where + ": an aggregate name twice or empty");
    }
  }
  if (slots) {
    const std::size_t len = run.shard ? static_cast<std::size_t>(run.shard->end - run.shard->begin) : run.doc_ids.size();
    for (const SlotColumn& s : *slots) {
      if (s.plugin < 0 || s.plugin >= static_cast<std::int64_t>(run.plugins.size()) || s.slot < 1) {
        fail(where + ": a slot of no plugin, or numbered below 1");
      }
      if (!s.subset.starts_with("#") && s.values.size() != len) fail(where + ": a slot of the wrong length");
    }
  }
}

}  // namespace

Outcome Exercise(const std::string& work, const std::vector<Change>& changes,
                 const std::function<void(const std::string&)>& fail) {
  Outcome o;
  auto note = [&](bool ok) { ++(ok ? o.accepted : o.refused); };
  std::set<std::string> touched;
  for (const Change& c : changes) touched.insert(kStores[c.store]);
  // Each store as list, show, export read it.
  for (const char* name : kStores) {
    if (!touched.count(name)) continue;
    const std::string path = work + "/" + name;
    auto store = RunStore::Open(path, RunStore::Mode::kReadOnly);
    note(store.ok());
    if (!store) continue;
    auto runs = store->ListRuns();
    note(runs.ok());
    if (runs) {
      for (const RunSummary& r : *runs) {
        if (r.n_docs < 0 || (r.shard && (r.shard->begin < 0 || r.shard->end > r.n_docs || r.shard->begin > r.shard->end))) {
          fail(fmt::format("{}: runs list: run {} with {} documents, shard [{}, {})", name, r.id, r.n_docs,
                           r.shard ? r.shard->begin : 0, r.shard ? r.shard->end : 0));
        }
      }
    }
    for (std::int64_t id : {1, 2, 3}) {
      auto run = store->GetRun(id);
      auto aggs = store->GetAggregates(id);
      auto scores = store->GetScores(id);
      auto slots = store->GetSlots(id);
      note(run.ok() && aggs.ok() && scores.ok() && slots.ok());
      if (run) {
        CheckRun(fmt::format("{} run {}", name, id), *run, scores ? &*scores : nullptr, aggs ? &*aggs : nullptr,
                 slots ? &*slots : nullptr, fail);
      }
    }
  }
  // Commands over several runs.
  host::CompareOptions copt;
  copt.resamples = 50;
  copt.ci_resamples = 50;
  copt.threads = 1;
  copt.plugin_dirs = {PristineDir() + "/pl"};
  for (const char* name : {"whole.db", "ci.db"}) {
    if (!touched.count(name)) continue;
    auto store = RunStore::Open(work + "/" + name, RunStore::Mode::kReadOnly);
    if (!store) continue;
    auto cmp = host::CompareRuns(*store, 1, 2, copt);
    note(cmp.ok());
    if (cmp && cmp->shared_docs > cmp->a.doc_ids.size()) fail(fmt::format("{}: compare shares more documents than it has", name));
    host::TableOptions topt;
    topt.metrics = {"all.p@5*", "all.r"};
    topt.baseline = "a";
    topt.resamples = 50;
    note(host::BuildTable(*store, topt).ok());
    note(host::RankDocuments(*store, 1, "all.p@5", true, 0).ok());
  }
  // runs merge: refused, or the numbers of the unchanged shards.
  if (!touched.count("s0.db") && !touched.count("s1.db")) return o;
  static const host::MergeResult truth = [] {
    host::MergeRequest req;
    req.from = {PristineDir() + "/s0.db", PristineDir() + "/s1.db"};
    auto m = host::MergeShards(req);
    if (!m) Die("the pristine shards do not merge: " + m.error().message);
    return std::move(*m);
  }();
  host::MergeRequest req;
  req.from = {work + "/s0.db", work + "/s1.db"};
  auto merged = host::MergeShards(req);
  note(merged.ok());
  if (merged && merged->run.profile == truth.run.profile && merged->run.params_json == truth.run.params_json) {
    bool same = merged->aggregates.size() == truth.aggregates.size() &&
                merged->scores.metrics == truth.scores.metrics;
    for (std::size_t i = 0; same && i < truth.aggregates.size(); ++i) {
      same = merged->aggregates[i].metric == truth.aggregates[i].metric &&
             Same(merged->aggregates[i].value, truth.aggregates[i].value);
    }
    for (std::size_t c = 0; same && c < truth.scores.columns.size(); ++c) {
      same = merged->scores.columns[c].size() == truth.scores.columns[c].size();
      for (std::size_t d = 0; same && d < truth.scores.columns[c].size(); ++d) {
        same = Same(merged->scores.columns[c][d], truth.scores.columns[c][d]);
      }
    }
    if (!same) fail("runs merge accepted changed shards and gave other numbers than the unchanged ones");
  }
  return o;
}

}  // namespace kplab::storefuzz
