// RunStore: every evaluation is a run stored in one SQLite file (WAL mode). A run is written in one
// transaction: a failure leaves no rows. The schema carries a version; Open() migrates older files.
// Per-document scores are stored one row per (run, metric) holding a column of float64 values in
// document order (see docs/store.md): 20,000 documents x 150 metrics would otherwise be 3M rows and
// dominate the run time.
// Threads: not thread-safe: use one RunStore per thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kplab/index_iterator.h"
#include "kplab/result.h"

namespace kplab {

struct PluginRecord {
  std::string name;
  std::string version;
  std::string sha256;  // of the plugin file's bytes
  std::string file;
};

// A partial run (`kplab eval --shard I/N`): shard `index` (0-based) of `count` contiguous document
// ranges of the dataset, documents [begin, end) in dataset order (begin = n * index / count, end =
// n * (index + 1) / count for n documents). `kplab runs merge` rebuilds the whole run from every shard.
struct ShardInfo {
  int64_t index = 0, count = 1;
  int64_t begin = 0, end = 0;
};

// Shard `index` of `count` over n documents, its range computed without overflow for any
// 0 <= index < count and n >= 0 (the products n * index need more than 64 bits).
ShardInfo ShardRange(int64_t n, int64_t index, int64_t count);

// One per-document slot of a plugin as a shard stores it (hidden ones too), for `kplab runs merge`:
// the values of documents [shard.begin, shard.end) in dataset order, NaN = none.
struct SlotColumn {
  int64_t plugin = 0;  // index into RunRecord::plugins
  std::string subset;  // "all", "present", "absent", or "" for a plugin without subsets
  int64_t slot = 0;    // 1-based, in the order columns(c, params) declared it
  std::string name;    // as declared (relative to the subset)
  bool hidden = false;
  std::vector<double> values;
};

struct NumberedDocIds;  // DocIds::Numbered's strings, made when first read (store.cc)
const std::string& NumberedDocId(const NumberedDocIds& ids, std::size_t i);

// The ids of a run's documents, in dataset order: either strings of its own (a run read back from a
// store, or made by hand), a view of the documents of the corpus it was evaluated on, which the view
// keeps alive (`kplab eval`: a million ids are not copied, design note 68), or the numbers 1 to n
// (Numbered). Read like a vector of strings; the first change to a view or to numbers (push_back,
// reserve) makes it a copy of its own.
class DocIds {
 public:
  using value_type = std::string;
  using iterator = IndexIterator<DocIds, const std::string&>;
  using const_iterator = iterator;

  DocIds() = default;
  DocIds(std::initializer_list<std::string> ids) : own_(ids) {}
  DocIds(std::vector<std::string> ids) : own_(std::move(ids)) {}  // NOLINT: implicit, as a vector's copy

  // The ids in member `id` of each of items, which owner keeps alive for as long as the view lives.
  template <typename T>
  static DocIds Of(std::shared_ptr<const void> owner, std::span<const T> items, const std::string T::*id) {
    DocIds out;
    out.owner_ = std::move(owner);
    out.n_ = items.size();
    out.stride_ = sizeof(T);
    out.first_ = items.empty() ? nullptr : reinterpret_cast<const char*>(&(items.front().*id));
    return out;
  }

  // The ids "1", "2", ..., "n" of documents named by their line (the Meng-2017 and other line datasets'
  // importers, a streamed `kplab eval`: design note 76). No string is made until an id is first read;
  // then all n are, once, whichever thread reads first. size() reads none.
  static DocIds Numbered(std::size_t n);

  std::size_t size() const { return owner_ ? n_ : own_.size(); }
  bool empty() const { return size() == 0; }
  const std::string& operator[](std::size_t i) const {
    if (!owner_) return own_[i];
    return numbered_ ? NumberedDocId(*numbered_, i) : *reinterpret_cast<const std::string*>(first_ + i * stride_);
  }
  const std::string& front() const { return (*this)[0]; }
  const std::string& back() const { return (*this)[size() - 1]; }
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, size()}; }
  void push_back(std::string id) {
    Own();
    own_.push_back(std::move(id));
  }
  void reserve(std::size_t n) {
    Own();
    own_.reserve(n);
  }
  // Whether the run keeps no corpus alive for its ids (false: a view of its corpus's documents).
  bool owned() const { return owner_ == nullptr || numbered_ != nullptr; }
  std::vector<std::string> ToVector() const { return std::vector<std::string>(begin(), end()); }
  friend bool operator==(const DocIds& a, const DocIds& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  void Own() {
    if (!owner_) return;
    own_ = ToVector();
    owner_.reset();
    numbered_ = nullptr;
  }
  std::vector<std::string> own_;
  // Set: a view of n_ strings, stride_ bytes apart from first_, or the numbers numbered_ holds.
  std::shared_ptr<const void> owner_;
  const NumberedDocIds* numbered_ = nullptr;  // owner_'s object
  const char* first_ = nullptr;
  std::size_t n_ = 0, stride_ = 0;
};

struct RunRecord {
  int64_t id = 0;  // assigned by SaveRun
  std::string status = "ok";  // "ok" or "failed"
  std::string error;          // for failed runs: "plugins/x.lua:12: message\ntraceback"
  // Dataset
  std::string dataset_name, dataset_path, dataset_format, dataset_hash;
  DocIds doc_ids;  // dataset document order
  // System and its predictions
  std::string system, predictions_path, predictions_hash;
  std::optional<int64_t> seed;  // the system's training seed, when known (runs table groups by it)
  // Evaluation
  std::string profile;
  std::string params_json;  // JSON object of metric params / options used
  std::vector<PluginRecord> plugins;
  std::string embedder_fingerprint;  // "" when no embedding model was used
  std::string kplab_version;
  std::string created_at;  // ISO 8601 UTC, filled by SaveRun if empty
  double elapsed_seconds = 0;
  // Set for a partial run: its score columns hold documents [begin, end) only (GetScores pads them to
  // every document with NaN), and SaveRun stores its plugins' slots beside them.
  std::optional<ShardInfo> shard;
};

struct AggregateValue {
  std::string metric;
  double value = 0;
  std::optional<double> ci_low, ci_high;
};

// Per-document scores: columns[i] has one value per document (NaN = not defined for that document).
struct ScoreColumns {
  std::vector<std::string> metrics;
  std::vector<std::vector<double>> columns;
};

struct RunSummary {
  int64_t id;
  std::string created_at, status, dataset_name, system, profile;
  int64_t n_docs;
  std::optional<int64_t> seed;
  std::optional<ShardInfo> shard;
};

class RunStore {
 public:
  enum class Mode {
    kReadWrite,  // create the file if missing, enable WAL, migrate the schema
    // Reading commands: kReadWrite when the file and its directory can be written (so behaviour is
    // as before), else kReadOnly on an existing file (a chmod 444 file, a read-only directory or
    // filesystem).
    kRead,
    // Never writes: the file must exist and be a kplab database of a version this kplab reads (older
    // versions are read without migrating). On a read-only directory where SQLite cannot create the
    // WAL index (-shm), the file is opened as immutable, unless a non-empty -wal file holds commits
    // that an immutable open would not see (then an error).
    kReadOnly,
  };
  // Opens or creates the database at path (":memory:" allowed), enables WAL and migrates the schema.
  // Concurrent first opens of one new file all succeed (set-up retried while another opener holds
  // the lock, within the busy timeout).
  static Result<RunStore> Open(const std::string& path, Mode mode = Mode::kReadWrite);
  // Bounds of what SaveRun stores (docs/store.md): more columns or aggregates, or a longer metric name
  // (bytes), is an error naming the bound; a longer error text of a failed run is cut to this many
  // bytes with a note of its full length.
  static constexpr std::size_t kMaxColumns = 10000;
  static constexpr std::size_t kMaxMetricName = 1024;
  static constexpr std::size_t kMaxErrorText = 65536;
  static constexpr std::size_t kMaxSlots = 100000;  // slot columns of a partial run

  // Default path: $KPLAB_DB if set, else "kplab.db".
  static std::string DefaultPath();
  static int CurrentSchemaVersion();

  RunStore(RunStore&&) noexcept;
  RunStore& operator=(RunStore&&) noexcept;
  ~RunStore();

  int schema_version() const;

  // Writes run, its per-document scores and aggregates in one transaction; returns the new run id.
  // A partial run (run.shard set) has score columns of shard.end - shard.begin values and may bring
  // `slots` (each of as many values); a whole run may bring slots of one value per document (`kplab eval
  // --ci`, for `kplab runs compare`'s resampling).
  Result<int64_t> SaveRun(const RunRecord& run, const ScoreColumns& scores,
                          const std::vector<AggregateValue>& aggregates,
                          const std::vector<SlotColumn>& slots = {});

  // Reading (docs/store.md, "Reading a store back"): everything these return was checked against its run
  // first (types, counts, shard ranges, slots, JSON); a tampered or inconsistent run is a store error
  // naming the file, the run and what is wrong, never returned.
  Result<std::vector<RunSummary>> ListRuns();
  // Whether run `id` exists (without reading it).
  Result<bool> HasRun(int64_t id);
  Result<RunRecord> GetRun(int64_t id);
  Result<std::vector<AggregateValue>> GetAggregates(int64_t id);
  Result<ScoreColumns> GetScores(int64_t id);
  // The slots a partial run, or a whole run scored with `kplab eval --ci`, stored, by plugin, subset and
  // slot; empty for other runs.
  Result<std::vector<SlotColumn>> GetSlots(int64_t id);
  // The path the store was opened with.
  const std::string& path() const;
  Status DeleteRun(int64_t id);

 private:
  struct Impl;
  explicit RunStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kplab
