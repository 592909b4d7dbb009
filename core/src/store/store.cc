// RunStore on SQLiteCpp. Schema, blob encoding and migrations are described in docs/store.md; keep the
// two in step.
#include "kplab/store.h"
#include "kplab/io.h"
#include "kplab/file_gate.h"
#include "kplab/safe_text.h"
#include "kplab/utf8.h"
#include "store/readback.h"
#include "store/store_internal.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <sqlite3.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <vector>

namespace kplab {

// DocIds::Numbered's: n, and the strings "1" to n once an id is read (then only read).
struct NumberedDocIds {
  std::size_t n = 0;
  mutable std::once_flag made;
  mutable std::vector<std::string> ids;
};

const std::string& NumberedDocId(const NumberedDocIds& numbers, std::size_t i) {
  std::call_once(numbers.made, [&] {
    numbers.ids.reserve(numbers.n);
    char digits[24];
    for (std::size_t d = 1; d <= numbers.n; ++d) {
      const char* end = std::to_chars(digits, digits + sizeof digits, d).ptr;
      numbers.ids.emplace_back(digits, static_cast<std::size_t>(end - digits));
    }
  });
  return numbers.ids[i];
}

DocIds DocIds::Numbered(std::size_t n) {
  DocIds out;
  auto numbers = std::make_shared<NumberedDocIds>();
  numbers->n = n;
  out.numbered_ = numbers.get();
  out.owner_ = std::move(numbers);
  out.n_ = n;
  return out;
}

namespace {

// Every failure of the run store is a store error (the CLI's exit 4).
Error StoreFail(std::string message) { return Error::Store(std::move(message)); }

// One migration step: `sql` takes a database at version - 1 to `version`, then `fill` (if any) computes
// what SQL cannot. Steps run in order inside one IMMEDIATE transaction, so a failed step leaves the file
// at its old version. Append new steps here; never edit a released one (files in the wild were created
// by it).
struct Migration {
  int version;
  const char* sql;
  void (*fill)(SQLite::Database& db) = nullptr;
};

constexpr const char kSchemaV1[] = R"sql(
CREATE TABLE meta(
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE datasets(
  id           INTEGER PRIMARY KEY,
  name         TEXT NOT NULL,
  path         TEXT NOT NULL,
  format       TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  n_docs       INTEGER NOT NULL,
  UNIQUE(content_hash, path, format)
);
CREATE TABLE documents(
  dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
  idx        INTEGER NOT NULL,
  doc_id     TEXT NOT NULL,
  PRIMARY KEY(dataset_id, idx)
) WITHOUT ROWID;
CREATE TABLE systems(
  id   INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);
CREATE TABLE runs(
  id                   INTEGER PRIMARY KEY AUTOINCREMENT,
  dataset_id           INTEGER NOT NULL REFERENCES datasets(id),
  system_id            INTEGER NOT NULL REFERENCES systems(id),
  predictions_path     TEXT NOT NULL,
  predictions_hash     TEXT NOT NULL,
  profile              TEXT NOT NULL,
  params_json          TEXT NOT NULL,
  embedder_fingerprint TEXT NOT NULL,
  kplab_version        TEXT NOT NULL,
  created_at           TEXT NOT NULL,
  elapsed_seconds      REAL NOT NULL,
  status               TEXT NOT NULL CHECK(status IN ('ok', 'failed')),
  error                TEXT NOT NULL
);
CREATE INDEX runs_by_created_at ON runs(created_at, id);
CREATE INDEX runs_by_dataset ON runs(dataset_id);
CREATE INDEX runs_by_system ON runs(system_id);
CREATE TABLE run_plugins(
  run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  idx     INTEGER NOT NULL,
  name    TEXT NOT NULL,
  version TEXT NOT NULL,
  sha256  TEXT NOT NULL,
  file    TEXT NOT NULL,
  PRIMARY KEY(run_id, idx)
) WITHOUT ROWID;
CREATE TABLE scores(
  run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  idx         INTEGER NOT NULL,
  metric      TEXT NOT NULL,
  n           INTEGER NOT NULL,
  values_f64le BLOB NOT NULL,
  PRIMARY KEY(run_id, idx),
  UNIQUE(run_id, metric)
);
CREATE TABLE aggregates(
  run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  idx     INTEGER NOT NULL,
  metric  TEXT NOT NULL,
  value   REAL,
  ci_low  REAL,
  ci_high REAL,
  PRIMARY KEY(run_id, idx),
  UNIQUE(run_id, metric)
) WITHOUT ROWID;
)sql";

// Version 2: the phrase cache (docs/embeddings.md). A model is known by its fingerprint; a phrase's
// vector is stored as it was embedded (float32 little-endian), NULL when the model has none for it.
// Rowids of phrase_vectors are the labels of the model's HNSW index.
constexpr const char kSchemaV2[] = R"sql(
CREATE TABLE embed_models(
  id          INTEGER PRIMARY KEY,
  fingerprint TEXT NOT NULL UNIQUE,
  name        TEXT NOT NULL,
  backend     TEXT NOT NULL,
  dims        INTEGER NOT NULL
);
CREATE TABLE phrase_vectors(
  id       INTEGER PRIMARY KEY,
  model_id INTEGER NOT NULL REFERENCES embed_models(id),
  phrase   TEXT NOT NULL,
  vec      BLOB,
  UNIQUE(model_id, phrase)
);
)sql";

// Version 3: a run's training seed (NULL when unknown), so that runs of one system and dataset with
// different seeds can be grouped (`kplab runs table`).
constexpr const char kSchemaV3[] = R"sql(
ALTER TABLE runs ADD COLUMN seed INTEGER;
)sql";

// Version 4: the phrase cache keyed by (model_id, phrase) in one B-tree (WITHOUT ROWID), so an insert
// writes one tree instead of the table and its UNIQUE index, and a model's phrases are read in key
// order by one scan (docs/embeddings.md). The HNSW labels, which were rowids, become the column
// `label`, numbered per model in commit order; embed_models.next_label is the next one to give.
// Every row is copied with its id as label, so existing vectors and index files stay valid.
constexpr const char kSchemaV4[] = R"sql(
ALTER TABLE embed_models ADD COLUMN next_label INTEGER NOT NULL DEFAULT 1;
UPDATE embed_models SET next_label =
  coalesce((SELECT max(id) FROM phrase_vectors WHERE model_id = embed_models.id), 0) + 1;
CREATE TABLE phrase_vectors_v4(
  model_id INTEGER NOT NULL REFERENCES embed_models(id),
  phrase   TEXT NOT NULL,
  label    INTEGER NOT NULL,
  vec      BLOB,
  PRIMARY KEY(model_id, phrase)
) WITHOUT ROWID;
INSERT INTO phrase_vectors_v4(model_id, phrase, label, vec)
  SELECT model_id, phrase, id, vec FROM phrase_vectors ORDER BY model_id, phrase;
DROP TABLE phrase_vectors;
ALTER TABLE phrase_vectors_v4 RENAME TO phrase_vectors;
)sql";

// Version 5: partial runs (`kplab eval --shard I/N`, docs/store.md). A shard records which of how many
// contiguous document ranges it scored (NULL for a whole run), and keeps every per-document slot of its
// plugins, hidden ones too, in run_slots (values of its own documents only), so that `kplab runs merge`
// can recompute the whole run's aggregates.
constexpr const char kSchemaV5[] = R"sql(
ALTER TABLE runs ADD COLUMN shard_index INTEGER;
ALTER TABLE runs ADD COLUMN shard_count INTEGER;
ALTER TABLE runs ADD COLUMN doc_begin INTEGER;
ALTER TABLE runs ADD COLUMN doc_end INTEGER;
CREATE TABLE run_slots(
  run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  plugin_idx   INTEGER NOT NULL,
  subset       TEXT NOT NULL,
  slot         INTEGER NOT NULL,
  name         TEXT NOT NULL,
  hidden       INTEGER NOT NULL,
  n            INTEGER NOT NULL,
  values_f64le BLOB NOT NULL,
  PRIMARY KEY(run_id, plugin_idx, subset, slot)
);
)sql";

// Version 6: the digest of each run's slots (store_internal.h, SlotsDigest), written with them and
// compared with them when they are read back, so that a slot changed behind kplab's back is refused
// even where the consistency checks cannot see it. The runs already stored get the digest of the slots
// they hold, so that every run of a version-6 file has one.
constexpr const char kSchemaV6[] = R"sql(
ALTER TABLE runs ADD COLUMN slots_digest TEXT;
)sql";

// The digest of run `run_id`'s slots as stored (the read-back computes it from the same query).
std::string DigestStoredSlots(SQLite::Database& db, int64_t run_id) {
  SQLite::Statement st(db, store_internal::kSlotRowsSql);
  st.bind(1, run_id);
  store_internal::SlotsDigest digest;
  while (st.executeStep()) {
    for (int i = 0; i < store_internal::kSlotRowColumns; ++i) digest.Column(st.getColumn(i));
  }
  return digest.FinishHex();
}

void FillSlotsDigests(SQLite::Database& db) {
  std::vector<int64_t> ids;
  SQLite::Statement runs(db, "SELECT id FROM runs");
  while (runs.executeStep()) ids.push_back(runs.getColumn(0).getInt64());
  SQLite::Statement set(db, "UPDATE runs SET slots_digest = ? WHERE id = ?");
  for (const int64_t id : ids) {
    set.bind(1, DigestStoredSlots(db, id));
    set.bind(2, id);
    set.exec();
    set.reset();
  }
}

constexpr Migration kMigrations[] = {
    {1, kSchemaV1}, {2, kSchemaV2}, {3, kSchemaV3}, {4, kSchemaV4}, {5, kSchemaV5}, {6, kSchemaV6, FillSlotsDigests},
};

constexpr int kCurrentVersion = kMigrations[std::size(kMigrations) - 1].version;

// Page size for new files. Score columns are 160 KB blobs for KP20k; 64 KiB pages cut the overflow
// chain SQLite walks per blob by 16x compared with the 4 KiB default. Only takes effect before the
// first table is created.
constexpr int kPageSize = 65536;

// A failure detected by kplab (not by SQLite) inside a transaction: thrown to unwind and roll back,
// caught at the API boundary and turned into an Error with exactly this message.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

bool IsMemoryPath(const std::string& path) { return path.empty() || path == ":memory:"; }

// The first n bytes of s, shortened to a UTF-8 character boundary.
std::string_view CutUtf8(std::string_view s, std::size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && IsUtf8Continuation(static_cast<unsigned char>(s[n]))) --n;
  return s.substr(0, n);
}

constexpr std::size_t kMaxErrorText = RunStore::kMaxErrorText;

// How long a connection waits for another one's lock, per statement (sqlite3_busy_timeout), and how long
// the set-up of a file (WAL switch, schema) keeps retrying as a whole.
constexpr int kBusyTimeoutMs = 30000;

bool IsBusy(const SQLite::Exception& e) {
  const int code = e.getErrorCode() & 0xFF;
  return code == SQLITE_BUSY || code == SQLITE_LOCKED;
}

// Version stored in meta; 0 for a database without any table (new or empty file). Throws StoreError
// for a database that is someone else's.
int ReadSchemaVersion(SQLite::Database& db, const std::string& path) {
  SQLite::Statement has_meta(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
  has_meta.executeStep();
  if (has_meta.getColumn(0).getInt() == 0) {
    SQLite::Statement tables(db, "SELECT count(*) FROM sqlite_master");
    tables.executeStep();
    if (tables.getColumn(0).getInt() != 0) {
      // Never add kplab tables to an unrelated database the user pointed us at by mistake.
      throw StoreError(fmt::format("{}: not a kplab database (it has tables but no meta table)", path));
    }
    return 0;
  }
  SQLite::Statement get(db, "SELECT value FROM meta WHERE key = 'schema_version'");
  if (!get.executeStep()) {
    throw StoreError(fmt::format("{}: not a kplab database (meta has no schema_version)", path));
  }
  const std::string text = get.getColumn(0).getString();
  int version = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
  if (ec != std::errc() || end != text.data() + text.size() || version < 0) {
    throw StoreError(
        fmt::format("{}: not a kplab database (schema_version '{}' is not a version number)", path, text));
  }
  return version;
}

void CheckNotNewer(int version, const std::string& path) {
  if (version > kCurrentVersion) {
    throw StoreError(fmt::format("{}: schema version {} is newer than this kplab supports (expected <= {})",
                                 path, version, kCurrentVersion));
  }
}

// Brings the file to kCurrentVersion. Re-reads the version under the write lock so that two processes
// opening a new file at once migrate it once.
int Migrate(SQLite::Database& db, const std::string& path) {
  // Up to date (every open but the first): no write lock, so that many openers do not queue for it.
  if (const int current = ReadSchemaVersion(db, path); current == kCurrentVersion) return current;
  SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
  int version = ReadSchemaVersion(db, path);
  CheckNotNewer(version, path);
  const int from = version;
  for (const Migration& m : kMigrations) {
    if (m.version <= version) continue;
    try {
      db.exec(m.sql);
      if (m.fill) m.fill(db);
    } catch (const SQLite::Exception& e) {
      throw StoreError(fmt::format("{}: cannot migrate schema from version {} to {} ({})", path, from,
                                   m.version, e.what()));
    }
    version = m.version;
  }
  if (version != from) {
    SQLite::Statement set(db,
                          "INSERT INTO meta(key, value) VALUES('schema_version', ?) "
                          "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
    set.bind(1, std::to_string(version));
    set.exec();
  }
  tx.commit();
  return version;
}


// Blob encoding of a score column: n IEEE-754 binary64 values, little-endian, no header (n is its own
// column). memcpy keeps NaN payloads; on little-endian hosts the vector's bytes are the blob.
void EncodeF64Le(const std::vector<double>& values, std::vector<unsigned char>& out) {
  out.resize(values.size() * sizeof(double));
  if constexpr (std::endian::native == std::endian::little) {
    if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  } else {
    for (size_t i = 0; i < values.size(); ++i) {
      uint64_t bits = std::bit_cast<uint64_t>(values[i]);
      for (int b = 0; b < 8; ++b) out[i * 8 + b] = static_cast<unsigned char>(bits >> (8 * b));
    }
  }
}

// SQLite stores a bound NaN as NULL; NULL is read back as NaN for values and as "absent" for CI bounds.
void BindDouble(SQLite::Statement& st, int index, double v) {
  if (std::isnan(v)) {
    st.bind(index);
  } else {
    st.bind(index, v);
  }
}
void BindOptional(SQLite::Statement& st, int index, const std::optional<double>& v) {
  if (v.has_value()) {
    BindDouble(st, index, *v);
  } else {
    st.bind(index);
  }
}

// Checks everything that does not need the database, so most bad input fails before BEGIN. The bounds
// (docs/store.md) keep one misbehaving plugin from filling the file: a metric name is an identifier,
// not a payload, and no metric set comes near 10,000 columns.
void ValidateRun(const RunRecord& run, const ScoreColumns& scores,
                 const std::vector<AggregateValue>& aggregates, const std::vector<SlotColumn>& slots) {
  // Names are checked where they are made (kplab/safe_text.h); the store checks them again so that none
  // that got past a front end -- a merge of shards another program wrote, a library caller -- is stored.
  auto refuse_bad_name = [](std::string_view field, std::string_view value) {
    if (Status st = CheckName(field, value); !st.ok()) throw StoreError("cannot save run: " + st.message());
  };
  refuse_bad_name("system name", run.system);
  refuse_bad_name("dataset name", run.dataset_name);
  for (const std::string& m : scores.metrics) refuse_bad_name("metric name", m);
  for (const AggregateValue& a : aggregates) refuse_bad_name("metric name", a.metric);
  for (const SlotColumn& c : slots) refuse_bad_name("slot name", c.name);
  // A partial run's columns hold its own documents only.
  std::size_t expected = run.doc_ids.size();
  if (run.shard) {
    const ShardInfo& sh = *run.shard;
    const auto n = static_cast<int64_t>(run.doc_ids.size());
    if (sh.count < 1 || sh.index < 0 || sh.index >= sh.count || sh.begin < 0 || sh.begin > sh.end || sh.end > n) {
      throw StoreError(fmt::format("cannot save run: shard {}/{} of documents [{}, {}) does not fit {} documents",
                                   sh.index, sh.count, sh.begin, sh.end, n));
    }
    expected = static_cast<std::size_t>(sh.end - sh.begin);
  }
  if (slots.size() > RunStore::kMaxSlots) {
    throw StoreError(fmt::format("cannot save run: {} slot columns (expected at most {})", slots.size(),
                                 RunStore::kMaxSlots));
  }
  for (const SlotColumn& c : slots) {
    if (c.plugin < 0 || c.plugin >= static_cast<int64_t>(run.plugins.size())) {
      throw StoreError(fmt::format("cannot save run: slot '{}' belongs to plugin {} of {}", c.name, c.plugin,
                                   run.plugins.size()));
    }
    // A subset named "#..." holds units finer than documents (host/engine/bootstrap.h): any number of rows.
    if (c.values.size() != expected && !c.subset.starts_with("#")) {
      throw StoreError(fmt::format("cannot save run: slot '{}' has {} values (expected {}, one per document of the "
                                   "{})",
                                   c.name, c.values.size(), expected, run.shard ? "shard" : "run"));
    }
  }
  if (scores.metrics.size() > RunStore::kMaxColumns) {
    throw StoreError(fmt::format("cannot save run: {} score columns (expected at most {})", scores.metrics.size(),
                                 RunStore::kMaxColumns));
  }
  if (aggregates.size() > RunStore::kMaxColumns) {
    throw StoreError(fmt::format("cannot save run: {} aggregates (expected at most {})", aggregates.size(),
                                 RunStore::kMaxColumns));
  }
  auto check_name = [](const std::string& name, const char* where) {
    if (name.size() > RunStore::kMaxMetricName) {
      throw StoreError(fmt::format("cannot save run: a metric name in {} has {} bytes, starting '{}...' (expected "
                                   "at most {})",
                                   where, name.size(), name.substr(0, 40), RunStore::kMaxMetricName));
    }
  };
  for (const std::string& m : scores.metrics) check_name(m, "scores");
  for (const AggregateValue& a : aggregates) check_name(a.metric, "aggregates");
  if (run.status != "ok" && run.status != "failed") {
    throw StoreError(fmt::format("cannot save run: status '{}' is not 'ok' or 'failed'", run.status));
  }
  if (run.status == "failed") {
    if (run.error.empty()) throw StoreError("cannot save run: a failed run needs an error message");
    if (!scores.metrics.empty() || !scores.columns.empty() || !aggregates.empty()) {
      throw StoreError("cannot save run: a failed run has no scores or aggregates");
    }
    if (!slots.empty()) throw StoreError("cannot save run: a failed run has no slots");
  }
  if (!run.created_at.empty() && !store_internal::IsIsoUtc(run.created_at)) {
    throw StoreError(
        fmt::format("cannot save run: created_at '{}' is not ISO 8601 UTC (expected YYYY-MM-DDTHH:MM:SSZ)",
                    run.created_at));
  }
  if (!std::isfinite(run.elapsed_seconds)) {
    throw StoreError("cannot save run: elapsed_seconds is not a finite number");
  }
  if (scores.metrics.size() != scores.columns.size()) {
    throw StoreError(fmt::format("cannot save run: scores have {} metric names but {} columns",
                                 scores.metrics.size(), scores.columns.size()));
  }
  std::unordered_set<std::string_view> seen;
  for (size_t i = 0; i < scores.metrics.size(); ++i) {
    const std::string& m = scores.metrics[i];
    if (m.empty()) throw StoreError("cannot save run: scores have an empty metric name");
    if (!seen.insert(m).second) {
      throw StoreError(fmt::format("cannot save run: metric '{}' appears twice in scores", m));
    }
    if (scores.columns[i].size() != expected) {
      throw StoreError(fmt::format("cannot save run: score column '{}' has {} values (expected {}, one per document{})",
                                   m, scores.columns[i].size(), expected, run.shard ? " of the shard" : ""));
    }
  }
  seen.clear();
  for (const AggregateValue& a : aggregates) {
    if (a.metric.empty()) throw StoreError("cannot save run: aggregates have an empty metric name");
    if (!seen.insert(a.metric).second) {
      throw StoreError(fmt::format("cannot save run: metric '{}' appears twice in aggregates", a.metric));
    }
  }
}

}  // namespace

struct RunStore::Impl {
  // file-gate: takes a connection store_internal::OpenSqlite opened, after GateFile
  Impl(std::string p, SQLite::Database d) : path(std::move(p)), db(std::move(d)) {}
  std::string path;
  SQLite::Database db;  // file-gate: opened by store_internal::OpenSqlite, which calls GateFile
  int schema_version = 0;

  // Dataset row for this run, inserting it and its documents on first sight. An existing row must hold
  // the same documents: per-document scores are only meaningful in that order.
  int64_t UpsertDataset(const RunRecord& run) {
    SQLite::Statement find(
        db, "SELECT id, n_docs FROM datasets WHERE content_hash = ? AND path = ? AND format = ?");
    find.bind(1, run.dataset_hash);
    find.bind(2, run.dataset_path);
    find.bind(3, run.dataset_format);
    if (find.executeStep()) {
      const int64_t id = find.getColumn(0).getInt64();
      const int64_t n = find.getColumn(1).getInt64();
      if (n != static_cast<int64_t>(run.doc_ids.size())) {
        throw StoreError(fmt::format(
            "cannot save run: dataset {} (hash {}) is stored with {} documents but this run has {}",
            run.dataset_path, run.dataset_hash, n, run.doc_ids.size()));
      }
      SQLite::Statement docs(db, "SELECT doc_id FROM documents WHERE dataset_id = ? ORDER BY idx");
      docs.bind(1, id);
      for (size_t i = 0; docs.executeStep(); ++i) {
        const SQLite::Column c = docs.getColumn(0);
        if (i >= run.doc_ids.size() ||
            std::string_view(c.getText(), static_cast<size_t>(c.getBytes())) != run.doc_ids[i]) {
          throw StoreError(fmt::format(
              "cannot save run: dataset {} (hash {}) is stored with other document ids (document {} is '{}', "
              "this run has '{}')",
              run.dataset_path, run.dataset_hash, i + 1, c.getString(),
              i < run.doc_ids.size() ? run.doc_ids[i] : std::string()));
        }
      }
      return id;
    }
    SQLite::Statement ins(
        db, "INSERT INTO datasets(name, path, format, content_hash, n_docs) VALUES(?, ?, ?, ?, ?)");
    ins.bind(1, run.dataset_name);
    ins.bind(2, run.dataset_path);
    ins.bind(3, run.dataset_format);
    ins.bind(4, run.dataset_hash);
    ins.bind(5, static_cast<int64_t>(run.doc_ids.size()));
    ins.exec();
    const int64_t id = db.getLastInsertRowid();
    SQLite::Statement doc(db, "INSERT INTO documents(dataset_id, idx, doc_id) VALUES(?, ?, ?)");
    doc.bind(1, id);
    for (size_t i = 0; i < run.doc_ids.size(); ++i) {
      doc.bind(2, static_cast<int64_t>(i));
      doc.bindNoCopy(3, run.doc_ids[i]);
      doc.exec();
      doc.reset();
    }
    return id;
  }

  int64_t UpsertSystem(const std::string& name) {
    SQLite::Statement ins(db, "INSERT INTO systems(name) VALUES(?) ON CONFLICT(name) DO NOTHING");
    ins.bind(1, name);
    ins.exec();
    SQLite::Statement get(db, "SELECT id FROM systems WHERE name = ?");
    get.bind(1, name);
    get.executeStep();
    return get.getColumn(0).getInt64();
  }

  store_internal::ReadContext Reader() { return {db, path, schema_version}; }

  Error DbError(const char* what_failed, const std::exception& e) const {
    return StoreFail(fmt::format("{}: {} ({})", path, what_failed, e.what()));
  }
};

RunStore::RunStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RunStore::RunStore(RunStore&&) noexcept = default;
RunStore& RunStore::operator=(RunStore&&) noexcept = default;
RunStore::~RunStore() = default;

int RunStore::CurrentSchemaVersion() { return kCurrentVersion; }

ShardInfo ShardRange(int64_t n, int64_t index, int64_t count) {
  // n * index needs up to 126 bits; the quotients fit int64 because 0 <= index < count.
  const auto at = [&](int64_t i) {
    return static_cast<int64_t>(static_cast<__int128>(n) * static_cast<__int128>(i) / static_cast<__int128>(count));
  };
  return ShardInfo{index, count, at(index), at(index + 1)};
}

std::string RunStore::DefaultPath() {
  const char* env = std::getenv("KPLAB_DB");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string("kplab.db");
}

int RunStore::schema_version() const { return impl_->schema_version; }

namespace store_internal {

// "YYYY-MM-DDTHH:MM:SS[.fff]Z". ListRuns orders by this text, which is only chronological in this form.
bool IsIsoUtc(std::string_view s) {
  if (s.size() < 20 || s.back() != 'Z') return false;
  constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd";
  for (size_t i = 0; i < kShape.size(); ++i) {
    const bool digit = s[i] >= '0' && s[i] <= '9';
    if (kShape[i] == 'd' ? !digit : s[i] != kShape[i]) return false;
  }
  std::string_view frac = s.substr(19, s.size() - 20);
  if (frac.empty()) return true;
  if (frac.size() < 2 || frac[0] != '.') return false;
  for (char c : frac.substr(1)) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::string NowIsoUtc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Result<int> PrepareDatabase(SQLite::Database& db, const std::string& path) {
  // A CLI and a REPL may share the file; wait for the other writer instead of failing at once.
  db.setBusyTimeout(kBusyTimeoutMs);
  // Every step is idempotent, so the whole set-up is retried when a step meets another connection's
  // lock in a way SQLite does not wait for (it returns SQLITE_BUSY at once where waiting could
  // deadlock, e.g. a journal-mode switch racing another opener's).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (int attempt = 0;; ++attempt) {
    try {
      // The first read of the file is where SQLite notices that it is not a database.
      const int version = ReadSchemaVersion(db, path);
      CheckNotNewer(version, path);
      if (!IsMemoryPath(path)) {
        if (version == 0) db.exec(fmt::format("PRAGMA page_size = {}", kPageSize));
        // WAL: readers (runs list, REPL) never block the writer; NORMAL is durable across application
        // crashes and only loses the last commits on power loss, which for a re-runnable evaluation is
        // fine. The switch needs the file to itself; only the first opener makes it.
        // Each statement finished before the next (an unfinished one is an open read transaction).
        auto journal_mode = [&](const char* sql) {
          SQLite::Statement st(db, sql);
          st.executeStep();
          return st.getColumn(0).getString();
        };
        if (journal_mode("PRAGMA journal_mode") != "wal" && journal_mode("PRAGMA journal_mode = WAL") != "wal") {
          throw SQLite::Exception("could not switch to WAL (another connection holds the file)", SQLITE_BUSY);
        }
        db.exec("PRAGMA synchronous = NORMAL");
      }
      db.exec("PRAGMA foreign_keys = ON");
      return Migrate(db, path);
    } catch (const StoreError& e) {
      return StoreFail(e.what());
    } catch (const SQLite::Exception& e) {
      if (IsBusy(e) && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5 + (attempt * 7 + ::getpid()) % 40));
        continue;
      }
      if (e.getErrorCode() == SQLITE_NOTADB) {
        return StoreFail(fmt::format("{}: not a kplab database ({})", path, e.what()));
      }
      return StoreFail(fmt::format("{}: cannot open database ({})", path, e.what()));
    }
  }
}

// Read-only set-up: no WAL switch, no migration; any version from 1 to the current one is read.
Result<int> PrepareReadOnly(SQLite::Database& db, const std::string& path) {
  try {
    db.setBusyTimeout(kBusyTimeoutMs);
    const int version = ReadSchemaVersion(db, path);
    CheckNotNewer(version, path);
    if (version == 0) return StoreFail(fmt::format("{}: not a kplab database (it has no tables)", path));
    return version;
  } catch (const StoreError& e) {
    return StoreFail(e.what());
  } catch (const SQLite::Exception& e) {
    if (e.getErrorCode() == SQLITE_NOTADB) return StoreFail(fmt::format("{}: not a kplab database ({})", path, e.what()));
    return StoreFail(fmt::format("{}: cannot open database read-only ({})", path, e.what()));
  }
}

}  // namespace store_internal

namespace {

// "file:" URI for a path: the characters URIs give a meaning percent-encoded; an absolute path gets an
// empty authority ("file:///x"), so that "//x" is not read as a host name.
std::string FileUri(const std::string& path, std::string_view query) {
  std::string uri = path.starts_with('/') ? "file://" : "file:";
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      uri += c;
    }
  }
  uri += query;
  return uri;
}

// One file of a store: absent (lstat: nothing there, not even a dangling link) or a regular file.
Status CheckOneStoreFile(const std::string& path, std::string_view expected) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return Status::Ok();
  Status s = CheckRegularFile(path, expected);
  if (s.ok() || s.kind() == ErrorKind::kUsage) return s;  // the gate's refusal stays usage (file_gate.h)
  // Gone between the two looks: another connection's transaction ended and SQLite removed its journal
  // (StoreHostileTest.TwoHundredConcurrentFirstOpensAllSucceed failed on it once, 2026-12-01). Absent.
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return Status::Ok();
  // Relabel on purpose (tests/layout/error_relabels.py): CheckRegularFile calls a directory, FIFO or
  // device where a file belongs bad input, but here it is one of a store's own files: the store is broken.
  return Error::Store(s.message());
}

}  // namespace

namespace store_internal {

Status CheckStorePath(const std::string& path) {
  if (IsMemoryPath(path)) return Status::Ok();
  if (path.find('\0') != std::string::npos) {
    return StoreFail(fmt::format("{}: path contains a NUL byte (expected a kplab database)",
                                 std::string_view(path).substr(0, path.find('\0'))));
  }
  if (Status st = CheckOneStoreFile(path, "a kplab database"); !st.ok()) return st;
  // SQLite opens its side files beside the file the path's links resolve to; check both places.
  std::vector<std::string> bases = {path};
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(path, ec);
  if (!ec && real.string() != path) bases.push_back(real.string());
  for (const std::string& base : bases) {
    for (const auto& [suffix, what] : {std::pair{"-wal", "SQLite's write-ahead log of a kplab database, or no file"},
                                       {"-shm", "SQLite's shared-memory index of a kplab database, or no file"},
                                       {"-journal", "SQLite's rollback journal of a kplab database, or no file"}}) {
      if (Status st = CheckOneStoreFile(base + suffix, what); !st.ok()) return st;
    }
  }
  return Status::Ok();
}

// file-gate: the one opener; GateFile runs below before SQLite touches the path
Result<SQLite::Database> OpenSqlite(const std::string& path, int flags, std::string_view query) {
  if (IsMemoryPath(path)) return SQLite::Database(path, flags);  // file-gate: "" and ":memory:" name no file
  const FileAccess access = (flags & SQLite::OPEN_READONLY) != 0 ? FileAccess::kRead : FileAccess::kWrite;
  if (Status st = GateFile(path, access); !st.ok()) return st.error();
  if (Status st = CheckStorePath(path); !st.ok()) return st.error();
  return SQLite::Database(FileUri(path, query), flags | SQLite::OPEN_URI);
}

}  // namespace store_internal

Result<RunStore> RunStore::Open(const std::string& path, Mode mode) {
  if (!IsMemoryPath(path)) {
    if (mode == Mode::kRead && !GateFile(path, FileAccess::kWrite).ok()) {
      // A reading command in a context that may read the store but not write it (a script's or the REPL's
      // $KPLAB_DB): read-only, as for a write-protected file.
      if (Status st = GateFile(path, FileAccess::kRead); !st.ok()) return st.error();
      return Open(path, Mode::kReadOnly);
    }
    const FileAccess access = mode == Mode::kReadOnly ? FileAccess::kRead : FileAccess::kWrite;
    if (Status st = GateFile(path, access); !st.ok()) return st.error();
  }
  // Before anything touches the file: a FIFO, device or directory (or such a side file) is refused here.
  if (Status st = store_internal::CheckStorePath(path); !st.ok()) return st.error();
  // A reading command never makes a store: an empty file (no database yet) is read as it is, not given
  // a schema (`kplab runs list --db EMPTY` used to write 1.5 MB into it).
  if (mode == Mode::kRead && !IsMemoryPath(path)) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) == 0 && !ec) {
      return Open(path, Mode::kReadOnly);
    }
  }
  if (mode == Mode::kReadOnly && !IsMemoryPath(path)) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      return StoreFail(fmt::format("{}: no such run store (expected a kplab database; `kplab eval` creates one)", path));
    }
    std::string first_error;
    for (const char* query : {"?mode=ro", "?immutable=1"}) {
      if (std::string_view(query) == "?immutable=1") {
        // Immutable skips the WAL: only safe when it holds nothing.
        const auto wal = std::filesystem::file_size(path + "-wal", ec);
        if (!ec && wal > 0) break;
      }
      try {
        auto db = store_internal::OpenSqlite(path, SQLite::OPEN_READONLY, query);
        if (!db) return db.error();
        auto impl = std::make_unique<Impl>(path, std::move(*db));
        auto version = store_internal::PrepareReadOnly(impl->db, path);
        if (!version) {
          if (first_error.empty()) first_error = version.error().message;
          continue;
        }
        impl->schema_version = *version;
        return RunStore(std::move(impl));
      } catch (const SQLite::Exception& e) {
        if (first_error.empty()) first_error = fmt::format("{}: cannot open database read-only ({})", path, e.what());
      }
    }
    return StoreFail(first_error);
  }
  std::unique_ptr<Impl> impl;
  try {
    auto db = store_internal::OpenSqlite(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    if (!db) return db.error();
    impl = std::make_unique<Impl>(path, std::move(*db));
  } catch (const SQLite::Exception& e) {
    if (mode == Mode::kRead) return Open(path, Mode::kReadOnly);
    return StoreFail(fmt::format("{}: cannot open database ({})", path, e.what()));
  }
  auto version = store_internal::PrepareDatabase(impl->db, path);
  if (!version.ok()) {
    std::error_code ec;
    // Not writable (file, directory or filesystem): the reading commands still read it.
    if (mode == Mode::kRead && std::filesystem::exists(path, ec)) {
      impl.reset();
      if (auto ro = Open(path, Mode::kReadOnly)) return ro;
    }
    return version.error();
  }
  impl->schema_version = *version;
  return RunStore(std::move(impl));
}

const std::string& RunStore::path() const { return impl_->path; }

namespace {

// The checks that need SQLite's JSON functions, then the slots against the score columns: what is saved
// must read back (readback.h). Throws StoreError.
void CheckSavedRun(SQLite::Database& db, const RunRecord& run, const ScoreColumns& scores,
                   const std::vector<SlotColumn>& slots) {
  bool ci = false;  // scored with --ci: its slots are kept, as a shard's
  if (!run.params_json.empty()) {
    SQLite::Statement type(db,
                           "SELECT CASE WHEN json_valid(?1) THEN json_type(?1) = 'object' ELSE 0 END, "
                           "CASE WHEN json_valid(?1) THEN json_type(?1, '$._ci') IS NOT NULL ELSE 0 END");
    type.bind(1, run.params_json);
    type.executeStep();
    if (type.getColumn(0).getInt() == 0) throw StoreError("cannot save run: params_json is not a JSON object");
    ci = type.getColumn(1).getInt() != 0;
  }
  // What is saved must read back (readback.h): the slots as a whole and against the score columns.
  const store_internal::RunFacts facts{run.status == "ok", run.shard.has_value(), ci,
                                       static_cast<int64_t>(run.doc_ids.size())};
  if (Status st = store_internal::CheckRunSlots("cannot save run", facts, run.plugins, scores, slots); !st.ok()) {
    throw StoreError(st.message());
  }
}

// The digest of the slots as InsertSlots writes them: the rows in key order (plugin, subset, slot: the
// order of SQLite's ORDER BY for integers and texts under BINARY collation), each value as stored.
std::string DigestSlots(const std::vector<SlotColumn>& slots) {
  std::vector<const SlotColumn*> order;
  order.reserve(slots.size());
  for (const SlotColumn& c : slots) order.push_back(&c);
  std::sort(order.begin(), order.end(), [](const SlotColumn* a, const SlotColumn* b) {
    return std::tie(a->plugin, a->subset, a->slot) < std::tie(b->plugin, b->subset, b->slot);
  });
  store_internal::SlotsDigest digest;
  std::vector<unsigned char> blob;
  for (const SlotColumn* c : order) {
    // The blob InsertSlots binds: on a little-endian host the values' own bytes, read in place.
    std::string_view bytes(reinterpret_cast<const char*>(c->values.data()), c->values.size() * sizeof(double));
    if constexpr (std::endian::native != std::endian::little) {
      EncodeF64Le(c->values, blob);
      bytes = std::string_view(reinterpret_cast<const char*>(blob.data()), blob.size());
    }
    digest.Int(c->plugin);
    digest.Text(c->subset);
    digest.Int(c->slot);
    digest.Text(c->name);
    digest.Int(c->hidden ? 1 : 0);
    digest.Int(static_cast<int64_t>(c->values.size()));
    digest.Blob(bytes);
  }
  return digest.FinishHex();
}

// The runs row; returns its id.
int64_t InsertRunRow(SQLite::Database& db, const RunRecord& run, int64_t dataset_id, int64_t system_id,
                     const std::string& slots_digest) {
  SQLite::Statement ins(db,
                        "INSERT INTO runs(dataset_id, system_id, predictions_path, predictions_hash, profile, "
                        "params_json, embedder_fingerprint, kplab_version, created_at, elapsed_seconds, status, "
                        "error, seed, shard_index, shard_count, doc_begin, doc_end, slots_digest) "
                        "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  ins.bind(1, dataset_id);
  ins.bind(2, system_id);
  ins.bind(3, run.predictions_path);
  ins.bind(4, run.predictions_hash);
  ins.bind(5, run.profile);
  ins.bind(6, run.params_json);
  ins.bind(7, run.embedder_fingerprint);
  ins.bind(8, run.kplab_version);
  ins.bind(9, run.created_at.empty() ? store_internal::NowIsoUtc() : run.created_at);
  ins.bind(10, run.elapsed_seconds);
  ins.bind(11, run.status);
  // A failed run is still recorded when its message is huge (a plugin's error(string.rep(...))):
  // cut, saying so, rather than refused.
  if (run.error.size() > kMaxErrorText) {
    ins.bind(12, fmt::format("{} ... (error text cut at {} of {} bytes)", CutUtf8(run.error, kMaxErrorText),
                             kMaxErrorText, run.error.size()));
  } else {
    ins.bind(12, run.error);
  }
  if (run.seed) {
    ins.bind(13, *run.seed);
  } else {
    ins.bind(13);  // NULL
  }
  if (run.shard) {
    ins.bind(14, run.shard->index);
    ins.bind(15, run.shard->count);
    ins.bind(16, run.shard->begin);
    ins.bind(17, run.shard->end);
  } else {
    for (int i = 14; i <= 17; ++i) ins.bind(i);
  }
  ins.bind(18, slots_digest);
  ins.exec();
  return db.getLastInsertRowid();
}

void InsertPlugins(SQLite::Database& db, int64_t run_id, const std::vector<PluginRecord>& plugins) {
  SQLite::Statement plugin(db,
                           "INSERT INTO run_plugins(run_id, idx, name, version, sha256, file) "
                           "VALUES(?, ?, ?, ?, ?, ?)");
  plugin.bind(1, run_id);
  for (size_t i = 0; i < plugins.size(); ++i) {
    const PluginRecord& p = plugins[i];
    plugin.bind(2, static_cast<int64_t>(i));
    plugin.bindNoCopy(3, p.name);
    plugin.bindNoCopy(4, p.version);
    plugin.bindNoCopy(5, p.sha256);
    plugin.bindNoCopy(6, p.file);
    plugin.exec();
    plugin.reset();
  }
}

// Each column as one blob of little-endian doubles. Throws StoreError for a column SQLite cannot bind.
void InsertScores(SQLite::Database& db, int64_t run_id, const ScoreColumns& scores) {
  SQLite::Statement score(db, "INSERT INTO scores(run_id, idx, metric, n, values_f64le) VALUES(?, ?, ?, ?, ?)");
  score.bind(1, run_id);
  std::vector<unsigned char> blob;
  for (size_t i = 0; i < scores.metrics.size(); ++i) {
    const std::vector<double>& column = scores.columns[i];
    if (column.size() > static_cast<size_t>(std::numeric_limits<int>::max()) / sizeof(double)) {
      throw StoreError(fmt::format("cannot save run: score column '{}' is too large", scores.metrics[i]));
    }
    const int bytes = static_cast<int>(column.size() * sizeof(double));
    score.bind(2, static_cast<int64_t>(i));
    score.bindNoCopy(3, scores.metrics[i]);
    score.bind(4, static_cast<int64_t>(column.size()));
    if constexpr (std::endian::native == std::endian::little) {
      // An empty vector's data() may be null, which SQLite would store as NULL instead of an empty blob.
      static const char kEmpty = 0;
      score.bindNoCopy(5, column.empty() ? static_cast<const void*>(&kEmpty) : column.data(), bytes);
    } else {
      EncodeF64Le(column, blob);
      score.bindNoCopy(5, blob.data(), bytes);
    }
    score.exec();
    score.reset();
  }
}

void InsertSlots(SQLite::Database& db, int64_t run_id, const std::vector<SlotColumn>& slots) {
  std::vector<unsigned char> blob;
  SQLite::Statement slot(db,
                         "INSERT INTO run_slots(run_id, plugin_idx, subset, slot, name, hidden, n, values_f64le) "
                         "VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
  slot.bind(1, run_id);
  for (const SlotColumn& c : slots) {
    if (c.values.size() > static_cast<size_t>(std::numeric_limits<int>::max()) / sizeof(double)) {
      throw StoreError(fmt::format("cannot save run: slot '{}' is too large", c.name));
    }
    EncodeF64Le(c.values, blob);
    static const char kEmpty = 0;
    slot.bind(2, c.plugin);
    slot.bindNoCopy(3, c.subset);
    slot.bind(4, c.slot);
    slot.bindNoCopy(5, c.name);
    slot.bind(6, c.hidden ? 1 : 0);
    slot.bind(7, static_cast<int64_t>(c.values.size()));
    slot.bindNoCopy(8, blob.empty() ? static_cast<const void*>(&kEmpty) : blob.data(), static_cast<int>(blob.size()));
    slot.exec();
    slot.reset();
  }
}

void InsertAggregates(SQLite::Database& db, int64_t run_id, const std::vector<AggregateValue>& aggregates) {
  SQLite::Statement agg(db,
                        "INSERT INTO aggregates(run_id, idx, metric, value, ci_low, ci_high) "
                        "VALUES(?, ?, ?, ?, ?, ?)");
  agg.bind(1, run_id);
  for (size_t i = 0; i < aggregates.size(); ++i) {
    const AggregateValue& a = aggregates[i];
    agg.bind(2, static_cast<int64_t>(i));
    agg.bindNoCopy(3, a.metric);
    BindDouble(agg, 4, a.value);
    BindOptional(agg, 5, a.ci_low);
    BindOptional(agg, 6, a.ci_high);
    agg.exec();
    agg.reset();
  }
}

}  // namespace

Result<int64_t> RunStore::SaveRun(const RunRecord& run, const ScoreColumns& scores,
                                  const std::vector<AggregateValue>& aggregates, const std::vector<SlotColumn>& slots) {
  SQLite::Database& db = impl_->db;
  try {
    ValidateRun(run, scores, aggregates, slots);
    CheckSavedRun(db, run, scores, slots);
    SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
    const int64_t dataset_id = impl_->UpsertDataset(run);
    const int64_t system_id = impl_->UpsertSystem(run.system);
    const int64_t run_id = InsertRunRow(db, run, dataset_id, system_id, DigestSlots(slots));
    InsertPlugins(db, run_id, run.plugins);
    InsertScores(db, run_id, scores);
    InsertSlots(db, run_id, slots);
    InsertAggregates(db, run_id, aggregates);
    tx.commit();
    return run_id;
  } catch (const StoreError& e) {
    return StoreFail(e.what());
  } catch (const SQLite::Exception& e) {
    return impl_->DbError("cannot save run", e);
  }
}

// Every read of a run goes through the read-back layer (readback.h), which checks it before returning it.
Result<std::vector<RunSummary>> RunStore::ListRuns() { return store_internal::ReadRunList(impl_->Reader()); }
Result<bool> RunStore::HasRun(int64_t id) { return store_internal::ReadRunExists(impl_->Reader(), id); }
Result<RunRecord> RunStore::GetRun(int64_t id) { return store_internal::ReadRun(impl_->Reader(), id); }
Result<std::vector<AggregateValue>> RunStore::GetAggregates(int64_t id) {
  return store_internal::ReadAggregates(impl_->Reader(), id);
}
Result<ScoreColumns> RunStore::GetScores(int64_t id) { return store_internal::ReadScores(impl_->Reader(), id); }
Result<std::vector<SlotColumn>> RunStore::GetSlots(int64_t id) {
  return store_internal::ReadSlots(impl_->Reader(), id);
}

Status RunStore::DeleteRun(int64_t id) {
  SQLite::Database& db = impl_->db;
  try {
    SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement find(db, "SELECT dataset_id, system_id FROM runs WHERE id = ?");
    find.bind(1, id);
    if (!find.executeStep()) return StoreFail(fmt::format("run {} not found", id));
    const int64_t dataset_id = find.getColumn(0).getInt64();
    const int64_t system_id = find.getColumn(1).getInt64();
    find.reset();
    // Plugins, scores and aggregates go by ON DELETE CASCADE.
    SQLite::Statement del(db, "DELETE FROM runs WHERE id = ?");
    del.bind(1, id);
    del.exec();
    // A dataset or system no run refers to any more is part of this run only; its documents cascade.
    SQLite::Statement ds(
        db, "DELETE FROM datasets WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM runs WHERE dataset_id = ?1)");
    ds.bind(1, dataset_id);
    ds.exec();
    SQLite::Statement sys(
        db, "DELETE FROM systems WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM runs WHERE system_id = ?1)");
    sys.bind(1, system_id);
    sys.exec();
    tx.commit();
    return Status::Ok();
  } catch (const SQLite::Exception& e) {
    return impl_->DbError("cannot delete run", e);
  }
}

}  // namespace kplab
