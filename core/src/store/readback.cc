// The read-back layer (readback.h; docs/store.md, "Reading a store back").
#include "store/readback.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "kplab/safe_text.h"
#include "kplab/utf8.h"
#include "store/store_internal.h"

namespace kplab::store_internal {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A refusal: unwinds to the reader's boundary, where it becomes a store error with exactly this message.
class Unsound : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

Error StoreFail(std::string message) { return Error::Store(std::move(message)); }

// `where` is "PATH: run ID", the start of every message.
[[noreturn]] void Refuse(const std::string& where, const std::string& what) { throw Unsound(where + ": " + what); }

// A stored string as a message shows it: a tampered file may hold anything, so at most its first 60 bytes
// (cut back to a character boundary, at most 3 bytes back), escaped as every text for a terminal is
// (TerminalText: controls, invalid bytes and the characters that reorder lines as escapes).
std::string Shown(std::string_view s) {
  constexpr std::size_t kMaxShown = 60;
  std::size_t n = std::min(s.size(), kMaxShown);
  for (int back = 0; back < 3 && n > 0 && n < s.size() && IsUtf8Continuation(static_cast<unsigned char>(s[n]));
       ++back) {
    --n;
  }
  std::string out = TerminalText(s.substr(0, n));
  if (n < s.size()) out += "...";
  return out;
}

const char* TypeName(int type) {
  switch (type) {
    case SQLITE_INTEGER:
      return "an integer";
    case SQLITE_FLOAT:
      return "a real number";
    case SQLITE_TEXT:
      return "text";
    case SQLITE_BLOB:
      return "a blob";
    default:
      return "NULL";
  }
}

// One result row, read column by column with the type the schema promises; anything else (NULL where
// a value is expected, text in an integer column, ...) is refused naming the column. These accessors
// are the only code in this file that reads a column (tests/layout/store_access.py checks it).
class Row {
 public:
  Row(SQLite::Statement& st, std::string where) : st_(st), where_(std::move(where)) {}
  const std::string& where() const { return where_; }
  void Rename(std::string where) { where_ = std::move(where); }
  [[noreturn]] void Fail(const std::string& what) const { Refuse(where_, what); }

  bool IsNull(int i) const { return Type(i) == SQLITE_NULL; }
  int64_t Int(int i, std::string_view column) const {
    Expect(i, column, SQLITE_INTEGER, "an integer");
    return st_.getColumn(i).getInt64();
  }
  std::optional<int64_t> IntOrNull(int i, std::string_view column) const {
    if (IsNull(i)) return std::nullopt;
    Expect(i, column, SQLITE_INTEGER, "an integer or NULL");
    return st_.getColumn(i).getInt64();
  }
  // REAL, or an INTEGER SQLite chose to keep as one.
  std::optional<double> RealOrNull(int i, std::string_view column) const {
    const int t = Type(i);
    if (t == SQLITE_NULL) return std::nullopt;
    if (t != SQLITE_FLOAT && t != SQLITE_INTEGER) {
      Fail(fmt::format("{} is {} (expected a number or NULL)", column, TypeName(t)));
    }
    return st_.getColumn(i).getDouble();
  }
  double Real(int i, std::string_view column) const {
    const int t = Type(i);
    if (t != SQLITE_FLOAT && t != SQLITE_INTEGER)
      Fail(fmt::format("{} is {} (expected a number)", column, TypeName(t)));
    return st_.getColumn(i).getDouble();
  }
  std::string Text(int i, std::string_view column) const {
    Expect(i, column, SQLITE_TEXT, "text");
    const SQLite::Column c = st_.getColumn(i);
    const char* p = c.getText();
    return std::string(p, static_cast<std::size_t>(c.getBytes()));
  }
  // Column i as stored, whatever its type, into a digest (the slots' digest covers the rows as they are).
  void Digest(int i, SlotsDigest& digest) const { digest.Column(st_.getColumn(i)); }
  // The bytes of a BLOB column, valid until the statement steps.
  std::string_view Blob(int i, std::string_view column) const {
    Expect(i, column, SQLITE_BLOB, "a blob");
    const SQLite::Column c = st_.getColumn(i);
    const void* p = c.getBlob();
    return {static_cast<const char*>(p), static_cast<std::size_t>(c.getBytes())};
  }

 private:
  int Type(int i) const { return st_.getColumn(i).getType(); }
  void Expect(int i, std::string_view column, int type, const char* expected) const {
    if (Type(i) != type) Fail(fmt::format("{} is {} (expected {})", column, TypeName(Type(i)), expected));
  }
  SQLite::Statement& st_;
  std::string where_;
};

std::vector<double> DecodeF64Le(std::string_view bytes) {
  std::vector<double> values(bytes.size() / sizeof(double));
  if (values.empty()) return values;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(double));
  } else {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    for (std::size_t i = 0; i < values.size(); ++i) {
      uint64_t bits = 0;
      for (int b = 0; b < 8; ++b) bits |= static_cast<uint64_t>(p[i * 8 + b]) << (8 * b);
      values[i] = std::bit_cast<double>(bits);
    }
  }
  return values;
}

// `n` values from a blob column holding them: n is checked against `expected` (or, for a count of
// units, against the blob) before anything is sized from it.
// `what` names the column for messages ("scores of 'x'", plural: they hold; "slot 1 ...": it holds).
std::vector<double> Values(const Row& row, int n_col, int blob_col, const std::string& what, bool plural,
                           std::optional<int64_t> expected, const char* of_what) {
  const int64_t n = row.Int(n_col, what + ": n");
  const std::string_view bytes = row.Blob(blob_col, what + ": values_f64le");
  if (expected && n != *expected) {
    row.Fail(fmt::format("{} hold{} {} value{}, {} {} document{}", what, plural ? "" : "s", n, n == 1 ? "" : "s",
                         of_what, *expected, *expected == 1 ? "" : "s"));
  }
  if (n < 0 || n > std::numeric_limits<int64_t>::max() / 8 || static_cast<int64_t>(bytes.size()) != n * 8) {
    row.Fail(fmt::format("{} {} {} bytes for {} values (expected 8 bytes a value)", what, plural ? "are" : "is",
                         bytes.size(), n));
  }
  return DecodeF64Le(bytes);
}

bool SameValue(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

// The run row, checked. Every reader starts here.
struct RunRow {
  int64_t id = 0;
  RunRecord rec;  // every field but doc_ids and plugins
  int64_t dataset_id = 0;
  int64_t n_docs = 0;  // datasets.n_docs, checked against the stored documents by the caller
  bool ci = false;     // params_json has "_ci": scored with `kplab eval --ci`
  // runs.slots_digest: every run of a version-6 file has one; none before (nothing to compare with).
  std::optional<std::string> slots_digest;
  // The number of values a per-document column of the run holds: n_docs, or the shard's documents.
  int64_t Expected() const { return rec.shard ? rec.shard->end - rec.shard->begin : n_docs; }
  const char* OfWhat() const { return rec.shard ? "the shard has" : "the run has"; }
};

RunFacts Facts(const RunRow& r) { return RunFacts{r.rec.status == "ok", r.rec.shard.has_value(), r.ci, r.n_docs}; }

std::string RunSelect(int schema_version, const std::string& where) {
  return "SELECT r.id, r.status, r.error, r.created_at, r.elapsed_seconds, " +
         std::string(schema_version >= 3 ? "r.seed" : "NULL") + ", " +
         (schema_version >= 5 ? "r.shard_index, r.shard_count, r.doc_begin, r.doc_end" : "NULL, NULL, NULL, NULL") +
         ", r.dataset_id, d.id, d.n_docs, r.system_id, s.id, d.name, d.path, d.format, d.content_hash, s.name, "
         "r.predictions_path, r.predictions_hash, r.profile, r.params_json, r.embedder_fingerprint, r.kplab_version, "
         "CASE WHEN typeof(r.params_json) = 'text' AND r.params_json <> '' AND json_valid(r.params_json) "
         "THEN json_type(r.params_json) = 'object' ELSE r.params_json IS '' END, "
         "CASE WHEN typeof(r.params_json) = 'text' AND json_valid(r.params_json) "
         "THEN json_type(r.params_json, '$._ci') IS NOT NULL ELSE 0 END, " +
         (schema_version >= 6 ? "r.slots_digest" : "NULL") +
         " FROM runs r LEFT JOIN datasets d ON d.id = r.dataset_id LEFT JOIN systems s ON s.id = r.system_id " + where;
}

RunRow ReadRunRow(Row& row, const std::string& path, int schema_version) {
  RunRow r;
  r.id = row.Int(0, "runs.id");
  row.Rename(fmt::format("{}: run {}", path, r.id));
  RunRecord& rec = r.rec;
  rec.id = r.id;
  rec.status = row.Text(1, "runs.status");
  if (rec.status != "ok" && rec.status != "failed") {
    row.Fail(fmt::format("runs.status is '{}' (expected 'ok' or 'failed')", Shown(rec.status)));
  }
  rec.error = row.Text(2, "runs.error");
  if (rec.status == "failed" && rec.error.empty()) row.Fail("a failed run without an error message (runs.error is '')");
  rec.created_at = row.Text(3, "runs.created_at");
  if (!IsIsoUtc(rec.created_at)) {
    row.Fail(
        fmt::format("runs.created_at '{}' is not ISO 8601 UTC (expected YYYY-MM-DDTHH:MM:SSZ)", Shown(rec.created_at)));
  }
  rec.elapsed_seconds = row.Real(4, "runs.elapsed_seconds");
  if (!std::isfinite(rec.elapsed_seconds))
    row.Fail(fmt::format("runs.elapsed_seconds is {} (expected a finite number)", rec.elapsed_seconds));
  rec.seed = row.IntOrNull(5, "runs.seed");
  const int64_t dataset_ref = row.Int(10, "runs.dataset_id");
  if (row.IsNull(11)) row.Fail(fmt::format("its dataset (datasets.id {}) is missing", dataset_ref));
  r.dataset_id = row.Int(11, "datasets.id");
  r.n_docs = row.Int(12, "datasets.n_docs");
  if (r.n_docs < 0) row.Fail(fmt::format("datasets.n_docs is {} (expected a count of documents)", r.n_docs));
  const int64_t system_ref = row.Int(13, "runs.system_id");
  if (row.IsNull(14)) row.Fail(fmt::format("its system (systems.id {}) is missing", system_ref));
  rec.dataset_name = row.Text(15, "datasets.name");
  rec.dataset_path = row.Text(16, "datasets.path");
  rec.dataset_format = row.Text(17, "datasets.format");
  rec.dataset_hash = row.Text(18, "datasets.content_hash");
  rec.system = row.Text(19, "systems.name");
  rec.predictions_path = row.Text(20, "runs.predictions_path");
  rec.predictions_hash = row.Text(21, "runs.predictions_hash");
  rec.profile = row.Text(22, "runs.profile");
  rec.params_json = row.Text(23, "runs.params_json");
  rec.embedder_fingerprint = row.Text(24, "runs.embedder_fingerprint");
  rec.kplab_version = row.Text(25, "runs.kplab_version");
  if (row.Int(26, "params_json's check") == 0) row.Fail("runs.params_json is not a JSON object");
  r.ci = row.Int(27, "params_json's _ci") != 0;
  if (schema_version >= 6) {
    r.slots_digest = row.Text(28, "runs.slots_digest");
    if (r.slots_digest->size() != kSlotsDigestHexLength ||
        r.slots_digest->find_first_not_of("0123456789abcdef") != std::string::npos) {
      row.Fail(fmt::format("runs.slots_digest is '{}' (expected {} hexadecimal digits, a SHA-256 digest)",
                           Shown(*r.slots_digest), kSlotsDigestHexLength));
    }
  }
  // A whole run (all four NULL) or a shard whose range is the one its I/N gives over the documents.
  const auto i = row.IntOrNull(6, "runs.shard_index"), c = row.IntOrNull(7, "runs.shard_count"),
             b = row.IntOrNull(8, "runs.doc_begin"), e = row.IntOrNull(9, "runs.doc_end");
  const int set = i.has_value() + c.has_value() + b.has_value() + e.has_value();
  if (set != 0 && set != 4) {
    row.Fail(
        "runs.shard_index, shard_count, doc_begin and doc_end are partly NULL (expected all four for a shard, "
        "none for a whole run)");
  }
  if (set == 4) {
    if (*c < 1 || *i < 0 || *i >= *c) row.Fail(fmt::format("shard {}/{} (expected 0 <= I < N)", *i, *c));
    if (*c > r.n_docs) {
      row.Fail(fmt::format("shard {}/{} of {} documents (expected at most one shard per document)", *i, *c, r.n_docs));
    }
    const ShardInfo want = ShardRange(r.n_docs, *i, *c);
    if (*b != want.begin || *e != want.end) {
      row.Fail(fmt::format("shard {}/{} records documents [{}, {}), but shard {} of {} over {} documents is [{}, {})",
                           *i, *c, *b, *e, *i, *c, r.n_docs, want.begin, want.end));
    }
    rec.shard = want;
  }
  return r;
}

// The dataset's documents against its n_docs: that many, numbered 0 to n - 1 (without reading them).
void CheckDocumentCount(const ReadContext& c, const std::string& where, const RunRow& r) {
  SQLite::Statement docs(c.db,
                         "SELECT count(*), min(idx) = 0 AND max(idx) = count(*) - 1 AND "
                         "sum(typeof(idx) <> 'integer') = 0 FROM documents WHERE dataset_id = ?");
  docs.bind(1, r.dataset_id);
  docs.executeStep();
  Row d(docs, where);
  const int64_t count = d.Int(0, "count(documents)");
  if (count != r.n_docs) {
    d.Fail(
        fmt::format("its dataset records {} documents (datasets.n_docs) but stores {} document ids", r.n_docs, count));
  }
  if (count > 0 && d.Int(1, "documents.idx") == 0) {
    d.Fail(fmt::format("its document ids are not numbered 0 to {} (documents.idx)", count - 1));
  }
}

// The run's row and the count of its dataset's documents, without reading them.
RunRow ReadShape(const ReadContext& c, int64_t id) {
  SQLite::Statement st(c.db, RunSelect(c.schema_version, "WHERE r.id = ?"));
  st.bind(1, id);
  if (!st.executeStep()) throw Unsound(fmt::format("run {} not found", id));
  Row row(st, fmt::format("{}: run {}", c.path, id));
  RunRow r = ReadRunRow(row, c.path, c.schema_version);
  CheckDocumentCount(c, row.where(), r);
  return r;
}

// The run's plugins in their order, numbered 0 to k - 1.
std::vector<PluginRecord> ReadPlugins(const ReadContext& c, const std::string& where, int64_t id) {
  SQLite::Statement st(c.db, "SELECT idx, name, version, sha256, file FROM run_plugins WHERE run_id = ? ORDER BY idx");
  st.bind(1, id);
  std::vector<PluginRecord> out;
  while (st.executeStep()) {
    Row row(st, where);
    const int64_t idx = row.Int(0, "run_plugins.idx");
    if (idx != static_cast<int64_t>(out.size())) {
      row.Fail(fmt::format("its plugins are not numbered from 0 (run_plugins.idx {} at position {})", idx, out.size()));
    }
    out.push_back(PluginRecord{row.Text(1, "run_plugins.name"), row.Text(2, "run_plugins.version"),
                               row.Text(3, "run_plugins.sha256"), row.Text(4, "run_plugins.file")});
  }
  return out;
}

// The run's score columns as stored (a shard's over its own documents), numbered, named once, each of
// as many values as the run (or shard) has documents.
ScoreColumns ReadStoredScores(const ReadContext& c, const RunRow& r) {
  SQLite::Statement st(c.db, "SELECT idx, metric, n, values_f64le FROM scores WHERE run_id = ? ORDER BY idx");
  st.bind(1, r.id);
  ScoreColumns out;
  std::set<std::string> seen;
  const std::string where = fmt::format("{}: run {}", c.path, r.id);
  while (st.executeStep()) {
    Row row(st, where);
    if (r.rec.status == "failed") row.Fail("a failed run stores score columns (a failed run has none)");
    const int64_t idx = row.Int(0, "scores.idx");
    if (idx != static_cast<int64_t>(out.metrics.size())) {
      row.Fail(fmt::format("its score columns are not numbered from 0 (scores.idx {} at position {})", idx,
                           out.metrics.size()));
    }
    std::string metric = row.Text(1, "scores.metric");
    if (metric.empty()) row.Fail("a score column has an empty name (scores.metric)");
    if (!seen.insert(metric).second) row.Fail(fmt::format("score column '{}' is stored twice", Shown(metric)));
    out.columns.push_back(
        Values(row, 2, 3, fmt::format("scores of '{}'", Shown(metric)), true, r.Expected(), r.OfWhat()));
    out.metrics.push_back(std::move(metric));
  }
  return out;
}

// Units of a --ci run (docs/store.md, run_slots): '#:units' holds, per unit, its document index, key and
// subset index; every other '#SUBSET' group of the plugin has one value per unit.
void CheckUnits(const std::string& where, const std::string& plugin, const std::vector<const SlotColumn*>& group,
                int64_t n_docs) {
  static constexpr const char* kNames[] = {"doc", "key", "subset"};
  if (group.size() != 3) {
    Refuse(where, fmt::format("the units of plugin '{}' have {} index columns (expected doc, key and subset)", plugin,
                              group.size()));
  }
  for (std::size_t k = 0; k < 3; ++k) {
    if (group[k]->name != kNames[k] || !group[k]->hidden || group[k]->values.size() != group[0]->values.size()) {
      Refuse(
          where,
          fmt::format("the units of plugin '{}': slot {} is '{}' of {} values (expected the hidden '{}' of {})", plugin,
                      k + 1, Shown(group[k]->name), group[k]->values.size(), kNames[k], group[0]->values.size()));
    }
  }
  for (std::size_t u = 0; u < group[0]->values.size(); ++u) {
    const double doc = group[0]->values[u], key = group[1]->values[u], sub = group[2]->values[u];
    if (!(doc >= 0 && doc < static_cast<double>(n_docs) && doc == std::floor(doc))) {
      Refuse(where, fmt::format("unit {} of plugin '{}' belongs to document {} (expected an index from 0 to {})", u + 1,
                                plugin, doc, n_docs - 1));
    }
    if (!std::isfinite(key))
      Refuse(where, fmt::format("unit {} of plugin '{}' has key {} (expected a number)", u + 1, plugin, key));
    if (!(sub >= 0 && sub < 1024 && sub == std::floor(sub))) {
      Refuse(where, fmt::format("unit {} of plugin '{}' has subset {} (expected a subset index)", u + 1, plugin, sub));
    }
  }
}

// The slots of a run as a whole, and against its score columns (as stored: a shard's over its own
// documents). Shared by the read-back and SaveRun, so that what is saved reads back.
void CheckSlotsOfRun(const std::string& where, const RunFacts& f, const std::vector<PluginRecord>& plugins,
                     const ScoreColumns& scores, const std::vector<SlotColumn>& slots) {
  if (slots.empty()) {
    if (f.ok && (f.shard || f.ci) && !plugins.empty()) {
      Refuse(where, fmt::format("stores no slots ({} keeps every slot of every plugin)",
                                f.shard ? "a shard" : "a run scored with --ci"));
    }
    return;
  }
  // Per plugin: its document groups (subsets) number their slots 1 to k with the same names, and its
  // units are one group of indices plus groups of one value per unit.
  std::map<std::pair<int64_t, std::string>, std::vector<const SlotColumn*>> groups;
  for (const SlotColumn& col : slots) groups[{col.plugin, col.subset}].push_back(&col);
  for (std::size_t p = 0; p < plugins.size(); ++p) {
    const std::string& name = plugins[p].name;
    const std::vector<const SlotColumn*>* first = nullptr;
    std::string first_subset;
    const std::vector<const SlotColumn*>* units = nullptr;
    std::vector<std::pair<std::string, const std::vector<const SlotColumn*>*>> unit_groups;
    for (const auto& [key, group] : groups) {
      if (key.first != static_cast<int64_t>(p)) continue;
      if (key.second == "#:units") {
        units = &group;
        continue;
      }
      if (key.second.starts_with("#")) {
        unit_groups.emplace_back(key.second, &group);
        continue;
      }
      for (std::size_t k = 0; k < group.size(); ++k) {
        if (group[k]->slot != static_cast<int64_t>(k + 1)) {
          Refuse(where, fmt::format("the slots of plugin '{}' (subset '{}') are not numbered from 1 (slot {} at "
                                    "position {}: a slot is missing)",
                                    Shown(name), Shown(key.second), group[k]->slot, k + 1));
        }
      }
      if (first == nullptr) {
        first = &group;
        first_subset = key.second;
        continue;
      }
      bool same = group.size() == first->size();
      for (std::size_t k = 0; same && k < group.size(); ++k) {
        same = group[k]->name == (*first)[k]->name && group[k]->hidden == (*first)[k]->hidden;
      }
      if (!same) {
        Refuse(where, fmt::format("plugin '{}' stores {} slots in subset '{}' and {} in subset '{}', or other ones "
                                  "(every subset has the plugin's declared slots)",
                                  Shown(name), first->size(), Shown(first_subset), group.size(), Shown(key.second)));
      }
    }
    if (first == nullptr && f.ok && (f.shard || f.ci)) {
      Refuse(where, fmt::format("plugin '{}' stores no slots ({} keeps every slot of every plugin)", Shown(name),
                                f.shard ? "a shard" : "a run scored with --ci"));
    }
    if (!unit_groups.empty() && units == nullptr) {
      Refuse(where, fmt::format("plugin '{}' stores unit values without their index (subset '#:units')", Shown(name)));
    }
    if (units == nullptr) continue;
    CheckUnits(where, name, *units, f.n_docs);
    const std::size_t n_units = (*units)[0]->values.size();
    for (const auto& [subset, group] : unit_groups) {
      for (const SlotColumn* col : *group) {
        if (col->values.size() != n_units || col->slot < 1 ||
            (first != nullptr && col->slot > static_cast<int64_t>(first->size()))) {
          Refuse(where, fmt::format("slot {} of the units of plugin '{}' (subset '{}') has {} values (expected one of "
                                    "the plugin's slots, one value for each of the {} units)",
                                    col->slot, Shown(name), Shown(subset), col->values.size(), n_units));
        }
      }
    }
  }
  // The public slots are the score columns: the same values under "SUBSET.NAME" ("NAME" without subsets);
  // a public slot without a defined value has no column.
  std::map<std::string, const SlotColumn*> public_slots;
  for (const SlotColumn& col : slots) {
    if (col.hidden || col.subset.starts_with("#")) continue;
    public_slots[col.subset.empty() ? col.name : col.subset + "." + col.name] = &col;
  }
  std::set<std::string> columns;
  for (std::size_t k = 0; k < scores.metrics.size(); ++k) {
    const std::string& metric = scores.metrics[k];
    columns.insert(metric);
    const auto it = public_slots.find(metric);
    if (it == public_slots.end()) {
      Refuse(where, fmt::format("score column '{}' is no slot the run stores (its slots were changed or deleted)",
                                Shown(metric)));
    }
    const std::vector<double>& a = scores.columns[k];
    const std::vector<double>& b = it->second->values;
    for (std::size_t d = 0; d < a.size(); ++d) {
      if (!SameValue(a[d], b[d])) {
        Refuse(where, fmt::format("score column '{}' and its slot differ at document {} of the {} ({} and {})",
                                  Shown(metric), d + 1, f.shard ? "shard" : "run", a[d], b[d]));
      }
    }
  }
  for (const auto& [metric, col] : public_slots) {
    if (columns.count(metric)) continue;
    for (double v : col->values) {
      if (!std::isnan(v)) {
        Refuse(where, fmt::format("slot '{}' of plugin '{}' has values but no score column '{}'", Shown(col->name),
                                  Shown(plugins[static_cast<std::size_t>(col->plugin)].name), Shown(metric)));
      }
    }
  }
}

// The slots, read and checked on their own and against the score columns (stored, not padded).
std::vector<SlotColumn> ReadStoredSlots(const ReadContext& c, const RunRow& r, const std::vector<PluginRecord>& plugins,
                                        const ScoreColumns& scores) {
  std::vector<SlotColumn> out;
  if (c.schema_version < 5) return out;
  const std::string where = fmt::format("{}: run {}", c.path, r.id);
  SQLite::Statement st(c.db, kSlotRowsSql);
  st.bind(1, r.id);
  const Row row(st, where);
  SlotsDigest digest;
  while (st.executeStep()) {
    for (int i = 0; i < kSlotRowColumns; ++i) row.Digest(i, digest);
    if (r.rec.status == "failed") row.Fail("a failed run stores slots (a failed run has none)");
    SlotColumn col;
    col.plugin = row.Int(0, "run_slots.plugin_idx");
    col.subset = row.Text(1, "run_slots.subset");
    col.slot = row.Int(2, "run_slots.slot");
    col.name = row.Text(3, "run_slots.name");
    const int64_t hidden = row.Int(4, "run_slots.hidden");
    if (col.plugin < 0 || col.plugin >= static_cast<int64_t>(plugins.size())) {
      row.Fail(fmt::format("slot '{}' (subset '{}') belongs to plugin {}, and the run has {} plugins", Shown(col.name),
                           Shown(col.subset), col.plugin, plugins.size()));
    }
    const std::string& plugin = plugins[static_cast<std::size_t>(col.plugin)].name;
    const std::string what = fmt::format("slot {} '{}' of plugin '{}' (subset '{}')", col.slot, Shown(col.name),
                                         Shown(plugin), Shown(col.subset));
    if (col.name.empty()) row.Fail(fmt::format("{} has an empty name", what));
    if (hidden != 0 && hidden != 1) row.Fail(fmt::format("{}: run_slots.hidden is {} (expected 0 or 1)", what, hidden));
    col.hidden = hidden == 1;
    const bool unit = col.subset.starts_with("#");
    col.values = Values(row, 5, 6, what, false, unit ? std::nullopt : std::optional<int64_t>(r.Expected()), r.OfWhat());
    out.push_back(std::move(col));
  }
  CheckSlotsOfRun(where, Facts(r), plugins, scores, out);
  // Last, so that what the checks above see is named by them; the digest sees the rest.
  if (r.slots_digest && digest.FinishHex() != *r.slots_digest) {
    Refuse(where,
           "its slots are not the ones stored with it (run_slots differs from runs.slots_digest: a slot row was "
           "changed, added or deleted)");
  }
  return out;
}

template <class F>
auto Guarded(const ReadContext& c, const char* what_failed, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Unsound& e) {
    return StoreFail(e.what());
  } catch (const SQLite::Exception& e) {
    return StoreFail(fmt::format("{}: {} ({})", c.path, what_failed, e.what()));
  }
}

}  // namespace

Status CheckRunSlots(const std::string& where, const RunFacts& facts, const std::vector<PluginRecord>& plugins,
                     const ScoreColumns& scores, const std::vector<SlotColumn>& slots) {
  try {
    CheckSlotsOfRun(where, facts, plugins, scores, slots);
    return Status::Ok();
  } catch (const Unsound& e) {
    return StoreFail(e.what());
  }
}

Result<std::vector<RunSummary>> ReadRunList(const ReadContext& c) {
  return Guarded(c, "cannot list runs", [&]() -> Result<std::vector<RunSummary>> {
    SQLite::Transaction tx(c.db);
    // Each dataset's documents, counted once: n_docs must be the number stored, numbered 0 to n - 1.
    std::map<int64_t, std::pair<int64_t, bool>> docs;  // dataset id -> (count, numbered 0..count-1)
    SQLite::Statement count(c.db,
                            "SELECT dataset_id, count(*), min(idx) = 0 AND max(idx) = count(*) - 1 AND "
                            "sum(typeof(idx) <> 'integer') = 0 FROM documents GROUP BY dataset_id");
    while (count.executeStep()) {
      Row row(count, c.path);
      docs[row.Int(0, "documents.dataset_id")] = {row.Int(1, "count(documents)"), row.Int(2, "documents.idx") != 0};
    }
    SQLite::Statement st(c.db, RunSelect(c.schema_version, "ORDER BY r.created_at DESC, r.id DESC"));
    std::vector<RunSummary> out;
    while (st.executeStep()) {
      Row row(st, c.path);
      RunRow r = ReadRunRow(row, c.path, c.schema_version);
      const auto [n, numbered] = docs.count(r.dataset_id) ? docs[r.dataset_id] : std::pair<int64_t, bool>{0, true};
      if (n != r.n_docs) {
        row.Fail(
            fmt::format("its dataset records {} documents (datasets.n_docs) but stores {} document ids", r.n_docs, n));
      }
      if (!numbered) row.Fail(fmt::format("its document ids are not numbered 0 to {} (documents.idx)", n - 1));
      out.push_back(RunSummary{r.id, r.rec.created_at, r.rec.status, r.rec.dataset_name, r.rec.system, r.rec.profile,
                               r.n_docs, r.rec.seed, r.rec.shard});
    }
    return out;
  });
}

Result<bool> ReadRunExists(const ReadContext& c, int64_t id) {
  return Guarded(c, "cannot read runs", [&]() -> Result<bool> {
    SQLite::Statement st(c.db, "SELECT 1 FROM runs WHERE id = ?");
    st.bind(1, id);
    return st.executeStep();
  });
}

Result<RunRecord> ReadRun(const ReadContext& c, int64_t id) {
  return Guarded(c, "cannot read run", [&]() -> Result<RunRecord> {
    // One read transaction, so that a concurrent DeleteRun cannot leave us half a run.
    SQLite::Transaction tx(c.db);
    SQLite::Statement st(c.db, RunSelect(c.schema_version, "WHERE r.id = ?"));
    st.bind(1, id);
    if (!st.executeStep()) return StoreFail(fmt::format("run {} not found", id));
    Row row(st, fmt::format("{}: run {}", c.path, id));
    RunRow r = ReadRunRow(row, c.path, c.schema_version);
    CheckDocumentCount(c, row.where(), r);
    SQLite::Statement docs(c.db, "SELECT idx, doc_id FROM documents WHERE dataset_id = ? ORDER BY idx");
    docs.bind(1, r.dataset_id);
    while (docs.executeStep()) {
      Row d(docs, row.where());
      const int64_t idx = d.Int(0, "documents.idx");
      if (idx != static_cast<int64_t>(r.rec.doc_ids.size())) {
        d.Fail(fmt::format("its document ids are not numbered from 0 (documents.idx {} at position {})", idx,
                           r.rec.doc_ids.size()));
      }
      r.rec.doc_ids.push_back(d.Text(1, "documents.doc_id"));
    }
    if (static_cast<int64_t>(r.rec.doc_ids.size()) != r.n_docs) {
      row.Fail(fmt::format("its dataset records {} documents (datasets.n_docs) but stores {} document ids", r.n_docs,
                           r.rec.doc_ids.size()));
    }
    r.rec.plugins = ReadPlugins(c, row.where(), id);
    return std::move(r.rec);
  });
}

Result<std::vector<AggregateValue>> ReadAggregates(const ReadContext& c, int64_t id) {
  return Guarded(c, "cannot read aggregates", [&]() -> Result<std::vector<AggregateValue>> {
    SQLite::Transaction tx(c.db);
    const RunRow r = ReadShape(c, id);
    SQLite::Statement st(c.db,
                         "SELECT idx, metric, value, ci_low, ci_high FROM aggregates WHERE run_id = ? ORDER BY idx");
    st.bind(1, id);
    std::vector<AggregateValue> out;
    std::set<std::string> seen;
    while (st.executeStep()) {
      Row row(st, fmt::format("{}: run {}", c.path, id));
      if (r.rec.status == "failed") row.Fail("a failed run stores aggregates (a failed run has none)");
      const int64_t idx = row.Int(0, "aggregates.idx");
      if (idx != static_cast<int64_t>(out.size())) {
        row.Fail(
            fmt::format("its aggregates are not numbered from 0 (aggregates.idx {} at position {})", idx, out.size()));
      }
      AggregateValue a;
      a.metric = row.Text(1, "aggregates.metric");
      if (a.metric.empty()) row.Fail("an aggregate has an empty name (aggregates.metric)");
      if (!seen.insert(a.metric).second) row.Fail(fmt::format("aggregate '{}' is stored twice", Shown(a.metric)));
      const std::string what = fmt::format("aggregate '{}'", Shown(a.metric));
      a.value = row.RealOrNull(2, what + ": value").value_or(kNaN);
      a.ci_low = row.RealOrNull(3, what + ": ci_low");
      a.ci_high = row.RealOrNull(4, what + ": ci_high");
      out.push_back(std::move(a));
    }
    return out;
  });
}

Result<ScoreColumns> ReadScores(const ReadContext& c, int64_t id) {
  return Guarded(c, "cannot read scores", [&]() -> Result<ScoreColumns> {
    SQLite::Transaction tx(c.db);
    const RunRow r = ReadShape(c, id);
    ScoreColumns scores = ReadStoredScores(c, r);
    const std::vector<PluginRecord> plugins = ReadPlugins(c, fmt::format("{}: run {}", c.path, id), id);
    (void)ReadStoredSlots(c, r, plugins, scores);
    if (r.rec.shard) {
      // A partial run stores its own documents' values: padded with NaN to every document, so that readers
      // index columns by document as for any run.
      for (auto& col : scores.columns) {
        std::vector<double> full(static_cast<std::size_t>(r.n_docs), kNaN);
        std::copy(col.begin(), col.end(), full.begin() + r.rec.shard->begin);
        col = std::move(full);
      }
    }
    return scores;
  });
}

Result<std::vector<SlotColumn>> ReadSlots(const ReadContext& c, int64_t id) {
  return Guarded(c, "cannot read slots", [&]() -> Result<std::vector<SlotColumn>> {
    SQLite::Transaction tx(c.db);
    const RunRow r = ReadShape(c, id);
    const ScoreColumns scores = ReadStoredScores(c, r);
    const std::vector<PluginRecord> plugins = ReadPlugins(c, fmt::format("{}: run {}", c.path, id), id);
    return ReadStoredSlots(c, r, plugins, scores);
  });
}

}  // namespace kplab::store_internal
