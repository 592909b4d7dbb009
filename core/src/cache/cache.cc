#include "kplab/cache.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <future>
#include <limits>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>
#include <fmt/format.h>

#include "kplab/file_gate.h"
#include "store/store_internal.h"

namespace fs = std::filesystem;

namespace kplab {
namespace {

constexpr int kCacheEfSearch = 200;
// Up to this many phrases are looked up one query each without counting the model's rows first.
constexpr std::size_t kPointQueryMax = 256;

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool IsMemory(const std::string& p) { return p.empty() || p == ":memory:"; }

int Threads(int threads) {
  if (threads > 0) return threads;
  return static_cast<int>(std::max(1u, std::min(16u, std::thread::hardware_concurrency())));
}

// A prepared statement on the raw handle: the hot loops bind string_views and read columns in place,
// without the std::string copies SQLiteCpp's interface makes. Errors throw SQLite::Exception.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK) throw SQLite::Exception(db);
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(st_); }

  // As TEXT (never NULL: an empty view may have no data pointer, which SQLite would bind as NULL).
  void Text(int i, std::string_view s) {
    Check(sqlite3_bind_text64(st_, i, s.empty() ? "" : s.data(), s.size(), SQLITE_STATIC, SQLITE_UTF8));
  }
  void Int(int i, std::int64_t v) { Check(sqlite3_bind_int64(st_, i, v)); }
  void Blob(int i, const void* p, int n) { Check(sqlite3_bind_blob(st_, i, p, n, SQLITE_STATIC)); }
  void Null(int i) { Check(sqlite3_bind_null(st_, i)); }
  // True for a row, false when done.
  bool Step() {
    const int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw SQLite::Exception(db_, rc);
  }
  void Reset() { sqlite3_reset(st_); }
  std::int64_t IntAt(int c) const { return sqlite3_column_int64(st_, c); }
  bool NullAt(int c) const { return sqlite3_column_type(st_, c) == SQLITE_NULL; }
  std::string_view TextAt(int c) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st_, c));
    return {p == nullptr ? "" : p, static_cast<std::size_t>(sqlite3_column_bytes(st_, c))};
  }
  const void* BlobAt(int c) const { return sqlite3_column_blob(st_, c); }
  int BytesAt(int c) const { return sqlite3_column_bytes(st_, c); }

 private:
  void Check(int rc) {
    if (rc != SQLITE_OK) throw SQLite::Exception(db_, rc);
  }
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
};

// A phrase's sort key: its first 24 bytes as three big-endian integers (zero-padded), its length and
// position. Most comparisons of two keys touch no phrase text (most keyphrases are shorter than 24
// bytes; a text read is a cache miss, as phrases are not in memory in key order).
constexpr std::size_t kKeyBytes = 24;
struct Key {
  std::uint64_t k0 = 0, k1 = 0, k2 = 0;
  std::uint32_t len = 0, i = 0;
};

std::uint64_t Word(std::string_view s, std::size_t at) {
  std::uint64_t w = 0;
  for (std::size_t b = 0; b < 8; ++b) w = (w << 8) | (at + b < s.size() ? static_cast<unsigned char>(s[at + b]) : 0u);
  return w;
}

Key MakeKey(std::string_view s, std::size_t i) {
  return Key{Word(s, 0), Word(s, 8), Word(s, 16),
             static_cast<std::uint32_t>(std::min<std::size_t>(s.size(), UINT32_MAX)), static_cast<std::uint32_t>(i)};
}

// Sign of a's phrase against b's in byte order (SQLite's BINARY collation: memcmp, then the shorter
// first — std::string_view's order). Equal 24-byte prefixes of phrases no longer than 24 bytes differ
// only in length (the shorter is a prefix of the other); otherwise the texts are compared (past the
// 24 bytes the keys showed equal when both are that long).
int Compare(const Key& a, std::string_view as, const Key& b, std::string_view bs) {
  if (a.k0 != b.k0) return a.k0 < b.k0 ? -1 : 1;
  if (a.k1 != b.k1) return a.k1 < b.k1 ? -1 : 1;
  if (a.k2 != b.k2) return a.k2 < b.k2 ? -1 : 1;
  if (a.len <= kKeyBytes && b.len <= kKeyBytes) return a.len == b.len ? 0 : (a.len < b.len ? -1 : 1);
  if (a.len >= kKeyBytes && b.len >= kKeyBytes) return as.substr(kKeyBytes).compare(bs.substr(kKeyBytes));
  return as.compare(bs);
}

// Keys of the phrases in byte order, equal phrases by position. Sorted in `threads` slices, then
// merged.
std::vector<Key> SortedKeys(const std::vector<std::string_view>& p, int threads) {
  std::vector<Key> e(p.size());
  auto less = [&p](const Key& a, const Key& b) {
    const int c = Compare(a, p[a.i], b, p[b.i]);
    return c < 0 || (c == 0 && a.i < b.i);
  };
  const std::size_t parts = p.size() < 65536 ? 1 : static_cast<std::size_t>(threads);
  std::vector<std::size_t> cut(parts + 1);
  for (std::size_t t = 0; t <= parts; ++t) cut[t] = p.size() * t / parts;
  auto sort_part = [&](std::size_t t) {
    for (std::size_t i = cut[t]; i < cut[t + 1]; ++i) e[i] = MakeKey(p[i], i);
    std::sort(e.begin() + cut[t], e.begin() + cut[t + 1], less);
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < parts; ++t) pool.emplace_back(sort_part, t);
  sort_part(0);
  for (auto& th : pool) th.join();
  for (std::size_t t = 1; t < parts; ++t) {
    std::inplace_merge(e.begin(), e.begin() + cut[t], e.begin() + cut[t + 1], less);
  }
  return e;
}

// Runs f(lo, hi) over [0, n) cut into `threads` contiguous slices, the last on this thread.
template <typename F>
void Parallel(std::size_t n, int threads, F f) {
  const std::size_t nt = n < 256 ? 1 : static_cast<std::size_t>(threads);
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t + 1 < nt; ++t) pool.emplace_back(f, n * t / nt, n * (t + 1) / nt);
  f(n * (nt - 1) / nt, n);
  for (auto& th : pool) th.join();
}

// Checks a stored vector (column c of st): its size and values, and whether it is a vector (not
// NULL, not all zeros); copies it into dst unless dst is null.
void ReadVec(const Stmt& st, int c, int dims, float* dst, std::uint8_t* has, std::string_view phrase) {
  if (st.NullAt(c)) {
    if (dst != nullptr) std::fill(dst, dst + dims, 0.0f);
    *has = 0;
    return;
  }
  if (st.BytesAt(c) != dims * 4) {
    throw std::runtime_error(
        fmt::format("the cached vector of '{}' has {} bytes (expected {}); "
                    "corrupt cache",
                    phrase, st.BytesAt(c), dims * 4));
  }
  const auto* bytes = static_cast<const unsigned char*>(st.BlobAt(c));
  // On the float32 bit patterns: non-finite = all exponent bits set; a sum of squares in double is
  // > 0 exactly when some value is not ±0 (the smallest float's square is a normal double).
  std::uint32_t any_nonfinite = 0, any_nonzero = 0;
  for (int j = 0; j < dims; ++j) {
    std::uint32_t w;
    std::memcpy(&w, bytes + 4 * j, 4);
    any_nonfinite |= static_cast<std::uint32_t>((w & 0x7F800000u) == 0x7F800000u);
    any_nonzero |= w & 0x7FFFFFFFu;
  }
  if (any_nonfinite) {
    throw std::runtime_error(fmt::format("the cached vector of '{}' is not finite; corrupt cache", phrase));
  }
  if (dst != nullptr) std::memcpy(dst, bytes, static_cast<std::size_t>(dims) * 4);
  *has = any_nonzero != 0;
}

// The phrases of one Get or Add in key order, and where their results go. Every phase walks the phrases
// in key order: the look-up merges them with the table's own order, and the inserts append to (or fill
// in) the B-tree instead of landing on random pages.
struct Wanted {
  Wanted(const std::vector<std::string_view>& p, int dims, float* o, std::uint8_t* h, int t)
      : phrases(p),
        keys(SortedKeys(p, t)),
        order(p.size()),
        d(dims),
        row(static_cast<std::size_t>(dims)),
        out(o),
        has(h),
        found(p.size(), 0),
        threads(t) {
    for (std::size_t j = 0; j < order.size(); ++j) order[j] = keys[j].i;
  }

  std::size_t size() const { return order.size(); }
  // Phrase i's row of out (null when nothing is copied out).
  float* At(std::size_t i) const { return out == nullptr ? nullptr : out + i * row; }
  // Whether the j-th and k-th phrases in key order are the same phrase.
  bool Same(std::size_t j, std::size_t k) const {
    return Compare(keys[j], phrases[order[j]], keys[k], phrases[order[k]]) == 0;
  }
  // Phrase i gets phrase src's result (its vector and whether it has one).
  void CopyFrom(std::size_t i, std::size_t src) const {
    if (out != nullptr) std::memcpy(At(i), At(src), row * sizeof(float));
    has[i] = has[src];
  }

  const std::vector<std::string_view>& phrases;
  const std::vector<Key> keys;       // sorted: keys[j] is the j-th phrase in key order
  std::vector<std::uint32_t> order;  // order[j]: the position in `phrases` of the j-th in key order
  const int d;
  const std::size_t row;
  float* const out;                 // a row of d floats per phrase, or null
  std::uint8_t* const has;          // per phrase: it has a vector
  std::vector<std::uint8_t> found;  // per phrase: it was in the cache (written by the look-up)
  const int threads;
};

// The look-up of the wanted phrases order[j..end) by an ordered scan of the model's rows from the first
// of them (on conn, a connection of this thread), merged with the sorted list.
void MergeRange(sqlite3* conn, std::int64_t model_id, Wanted& w, std::size_t j, std::size_t end) {
  Stmt scan(conn, "SELECT phrase, vec FROM phrase_vectors WHERE model_id = ? AND phrase >= ? ORDER BY phrase");
  scan.Int(1, model_id);
  scan.Text(2, w.phrases[w.order[j]]);
  while (j < end && scan.Step()) {
    // The wanted phrases are in key order but their texts are not in memory order: fetch the
    // view and then the text a few rows ahead (a warm scan matches about one per row).
    if (j + 32 < end) __builtin_prefetch(&w.phrases[w.order[j + 32]]);
    if (j + 16 < end) __builtin_prefetch(w.phrases[w.order[j + 16]].data());
    const std::string_view text = scan.TextAt(0);
    const Key k = MakeKey(text, 0);
    int c = -1;
    while (j < end && (c = Compare(w.keys[j], w.phrases[w.order[j]], k, text)) < 0) ++j;
    if (j == end || c != 0) continue;
    const std::size_t first = w.order[j];
    ReadVec(scan, 1, w.d, w.At(first), w.has + first, text);
    w.found[first] = 1;
    for (++j; j < end && Compare(w.keys[j], w.phrases[w.order[j]], k, text) == 0; ++j) {  // asked for again
      w.CopyFrom(w.order[j], first);
      w.found[w.order[j]] = 1;
    }
  }
}

// The look-up by one query per distinct phrase (a few phrases, or a small share of the model's rows).
void LookUpByPoints(sqlite3* h, std::int64_t model_id, Wanted& w) {
  Stmt get(h, "SELECT vec FROM phrase_vectors WHERE model_id = ? AND phrase = ?");
  get.Int(1, model_id);
  for (std::size_t j = 0; j < w.size(); ++j) {
    const std::size_t i = w.order[j];
    if (j > 0 && w.Same(j - 1, j)) {
      if (w.found[w.order[j - 1]]) {
        w.CopyFrom(i, w.order[j - 1]);
        w.found[i] = 1;
      }
      continue;
    }
    get.Text(2, w.phrases[i]);
    if (get.Step()) {
      ReadVec(get, 0, w.d, w.At(i), w.has + i, w.phrases[i]);
      w.found[i] = 1;
    }
    get.Reset();
  }
}

// What the look-up did not find: the distinct phrases to embed, in key order (each one's first
// position), and the repeats of those (position, position embedded).
struct Misses {
  std::vector<std::uint32_t> embed;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> repeats;
};

// Counts the phrases found into *hits.
Misses ListMisses(const Wanted& w, std::size_t* hits) {
  Misses m;
  for (std::size_t j = 0; j < w.size(); ++j) {
    const std::uint32_t i = w.order[j];
    if (w.found[i]) {
      ++*hits;
    } else if (j > 0 && !m.embed.empty() && w.Same(j - 1, j)) {
      m.repeats.emplace_back(i, m.embed.back());
    } else {
      m.embed.push_back(i);
    }
  }
  return m;
}

// The vectors of one chunk of misses, or the first error, with its kind.
struct Chunk {
  std::vector<float> vecs;
  std::vector<std::uint8_t> hv;
  std::optional<Error> error;
  double seconds = 0;
};

// Embeds misses[b, b + kRowsPerTransaction) on w.threads threads, a contiguous slice each. An embedder's
// error keeps the embedder's kind: a Python embedder that raises is a script error (the user's code
// failed, not the input), a transformer out of memory a limit, a model's bad files input. A vector with a
// value that is not finite is an input error here, the model's data being wrong (the static models check
// their files when loading them, naming the line; a Python embedder checks what its callable returned
// and calls it a script error); a zero vector is no vector.
Chunk EmbedChunk(const Embedder& model, const std::string& model_name, const Wanted& w,
                 const std::vector<std::uint32_t>& misses, std::size_t b) {
  auto te = std::chrono::steady_clock::now();
  const std::size_t m = std::min(misses.size(), b + PhraseCache::kRowsPerTransaction) - b;
  const std::size_t row = w.row;
  Chunk c;
  c.vecs.assign(m * row, 0.0f);
  c.hv.assign(m, 0);
  std::vector<Status> status(static_cast<std::size_t>(w.threads), Status::Ok());
  std::vector<std::string> bad(static_cast<std::size_t>(w.threads));
  std::atomic<int> slot{0};
  Parallel(m, w.threads, [&](std::size_t lo, std::size_t hi) {
    const int s = slot++;
    std::vector<std::string_view> part;
    part.reserve(hi - lo);
    for (std::size_t k = lo; k < hi; ++k) part.push_back(w.phrases[misses[b + k]]);
    status[s] = model.Embed(part, c.vecs.data() + lo * row, c.hv.data() + lo);
    if (!status[s].ok()) return;
    for (std::size_t k = lo; k < hi; ++k) {
      double n2 = 0;
      for (int j = 0; j < w.d && c.hv[k]; ++j) {
        const float x = c.vecs[k * row + j];
        if (!std::isfinite(x)) {
          if (bad[s].empty()) bad[s] = std::string(part[k - lo]);
          c.hv[k] = 0;
          break;
        }
        n2 += static_cast<double>(x) * x;
      }
      // One rule for every backend: a zero vector is no vector (cosine 0, not in the index).
      if (c.hv[k] && n2 == 0) c.hv[k] = 0;
    }
  });
  for (const Status& st : status) {
    if (!st.ok() && !c.error) c.error = st.error();
  }
  for (const std::string& p : bad) {
    if (!p.empty() && !c.error) {
      c.error = Error::Input(fmt::format("model {}: the vector of '{}' is not finite", model_name, p));
    }
  }
  c.seconds = Since(te);
  return c;
}

}  // namespace

struct PhraseCache::Impl {
  std::string path;
  SQLite::Database db;  // file-gate: opened by store_internal::OpenSqlite, which calls GateFile
  std::string db_id;  // random id of this database file (meta 'db_id'), part of index file names
  // file-gate: takes a connection store_internal::OpenSqlite opened, after GateFile
  Impl(std::string p, SQLite::Database d) : path(std::move(p)), db(std::move(d)) {}

  Error DbError(const std::exception& e) const {
    return Error::Store(fmt::format("{}: phrase cache: {}", path, e.what()));
  }

  // The model's row id, created on first use. A fingerprint seen with other dimensions means a
  // corrupt table: refuse rather than mix vectors.
  std::int64_t ModelId(const Embedder& m, const std::string& name) {
    SQLite::Statement get(db, "SELECT id, dims FROM embed_models WHERE fingerprint = ?");
    get.bind(1, m.fingerprint());
    if (get.executeStep()) {
      if (get.getColumn(1).getInt() != m.dims()) {
        throw std::runtime_error(fmt::format("model {} is recorded with {} dimensions, the model has {}",
                                             m.fingerprint().substr(0, 12), get.getColumn(1).getInt(),
                                             m.dims()));
      }
      return get.getColumn(0).getInt64();
    }
    SQLite::Statement ins(db,
                          "INSERT INTO embed_models(fingerprint, name, backend, dims) VALUES(?,?,?,?) "
                          "ON CONFLICT(fingerprint) DO NOTHING");
    ins.bind(1, m.fingerprint());
    ins.bind(2, name);
    ins.bind(3, std::string(m.backend()));
    ins.bind(4, m.dims());
    ins.exec();
    // Another process may have inserted it between the two statements.
    return FindModel(m.fingerprint());
  }

  std::int64_t FindModel(const std::string& fp) {
    SQLite::Statement get(db, "SELECT id FROM embed_models WHERE fingerprint = ?");
    get.bind(1, fp);
    return get.executeStep() ? get.getColumn(0).getInt64() : -1;
  }

  std::int64_t LabelsGiven(std::int64_t model_id) {
    Stmt c(db.getHandle(), "SELECT next_label - 1 FROM embed_models WHERE id = ?");
    c.Int(1, model_id);
    if (!c.Step()) throw std::runtime_error("the model's row disappeared from embed_models");
    return c.IntAt(0);
  }

  std::int64_t CountRows(std::int64_t model_id) {
    Stmt c(db.getHandle(), "SELECT count(*) FROM phrase_vectors WHERE model_id = ?");
    c.Int(1, model_id);
    c.Step();
    return c.IntAt(0);
  }

  // Every vector of the model: the count and largest label, and (label, vector) of the rows with
  // label > after, in label order.
  void ScanVectors(std::int64_t model_id, int dims, std::int64_t after, std::int64_t* count,
                   std::int64_t* max_label, std::vector<std::int64_t>* labels, std::vector<float>* vecs) {
    Stmt rows(db.getHandle(), "SELECT label, vec FROM phrase_vectors WHERE model_id = ? AND vec IS NOT NULL");
    rows.Int(1, model_id);
    *count = 0;
    *max_label = 0;
    std::vector<std::pair<std::int64_t, std::size_t>> found;  // (label, row in buf)
    std::vector<float> buf;
    std::uint8_t has = 0;
    while (rows.Step()) {
      const std::int64_t label = rows.IntAt(0);
      ++*count;
      *max_label = std::max(*max_label, label);
      if (label <= after) continue;
      buf.resize(buf.size() + dims);
      ReadVec(rows, 1, dims, buf.data() + buf.size() - dims, &has, "(index)");
      if (!has) {  // a zero vector stored by an older kplab: never in the index
        buf.resize(buf.size() - dims);
        continue;
      }
      found.emplace_back(label, found.size());
    }
    std::sort(found.begin(), found.end());
    labels->clear();
    vecs->resize(found.size() * dims);
    for (std::size_t k = 0; k < found.size(); ++k) {
      labels->push_back(found[k].first);
      std::memcpy(vecs->data() + k * dims, buf.data() + found[k].second * dims, sizeof(float) * dims);
    }
  }

  // The look-up when most of the model's rows are wanted: an ordered scan from the first wanted phrase,
  // merged with the sorted list, beats a B-tree descent per phrase. A large list is cut into key ranges
  // (never inside a run of equal phrases), each merged on its own thread with its own read connection
  // (a file database only: ":memory:" is private to this connection). Throws what a range threw.
  void LookUpByScan(std::int64_t model_id, Wanted& w, int threads) {
    const std::size_t n = w.size();
    const std::size_t parts = IsMemory(path) || n < 65536 ? 1 : static_cast<std::size_t>(threads);
    std::vector<std::size_t> cut(parts + 1, n);
    cut[0] = 0;
    for (std::size_t t = 1; t < parts; ++t) {
      cut[t] = std::max(cut[t - 1], n * t / parts);
      while (cut[t] > 0 && cut[t] < n && w.Same(cut[t] - 1, cut[t])) ++cut[t];
    }
    std::vector<std::exception_ptr> failed(parts);
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < parts; ++t) {
      if (cut[t] == cut[t + 1]) continue;
      pool.emplace_back([&, t, grants = CurrentFileGrants()] {
        FileScope scope(grants);
        try {
          auto opened = store_internal::OpenSqlite(path, SQLite::OPEN_READONLY);
          if (!opened) throw std::runtime_error(opened.error().message);
          SQLite::Database conn = std::move(*opened);  // file-gate: OpenSqlite gated it
          conn.setBusyTimeout(30000);
          conn.exec("PRAGMA mmap_size = 4294967296");
          MergeRange(conn.getHandle(), model_id, w, cut[t], cut[t + 1]);
        } catch (...) {
          failed[t] = std::current_exception();
        }
      });
    }
    try {
      if (cut[0] < cut[1]) MergeRange(db.getHandle(), model_id, w, cut[0], cut[1]);
    } catch (...) {
      failed[0] = std::current_exception();
    }
    for (auto& th : pool) th.join();
    for (const auto& f : failed) {
      if (f) std::rethrow_exception(f);
    }
  }

  // Stores a chunk of embedded misses (misses[b, b + c.hv.size())) in one transaction. Throws.
  void StoreChunk(std::int64_t model_id, const Wanted& w, const std::vector<std::uint32_t>& misses, std::size_t b,
                  const Chunk& c) {
    sqlite3* h = db.getHandle();
    SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
    // Labels are read under the write lock: another process's rows get other labels.
    Stmt next(h, "SELECT next_label FROM embed_models WHERE id = ?");
    next.Int(1, model_id);
    if (!next.Step()) throw std::runtime_error("the model's row disappeared from embed_models");
    std::int64_t label = next.IntAt(0);
    // A phrase another process stored since the look-up keeps its row (same model, same vector).
    Stmt ins(h,
             "INSERT INTO phrase_vectors(model_id, phrase, label, vec) VALUES(?,?,?,?) "
             "ON CONFLICT(model_id, phrase) DO NOTHING");
    ins.Int(1, model_id);
    for (std::size_t k = 0; k < c.hv.size(); ++k) {
      ins.Text(2, w.phrases[misses[b + k]]);
      ins.Int(3, label++);
      if (c.hv[k]) {
        ins.Blob(4, c.vecs.data() + k * w.row, w.d * 4);
      } else {
        ins.Null(4);  // the model has no vector for it
      }
      ins.Step();
      ins.Reset();
    }
    Stmt set(h, "UPDATE embed_models SET next_label = ? WHERE id = ?");
    set.Int(1, label);
    set.Int(2, model_id);
    set.Step();
    tx.commit();
  }
};

PhraseCache::PhraseCache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PhraseCache::PhraseCache(PhraseCache&&) noexcept = default;
PhraseCache& PhraseCache::operator=(PhraseCache&&) noexcept = default;
PhraseCache::~PhraseCache() = default;

const std::string& PhraseCache::db_path() const { return impl_->path; }

Result<PhraseCache> PhraseCache::Open(const std::string& db_path) {
  if (!IsMemory(db_path)) {
    if (Status st = GateFile(db_path, FileAccess::kWrite); !st.ok()) return st.error();
  }
  std::unique_ptr<Impl> impl;
  try {
    auto db = store_internal::OpenSqlite(db_path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    if (!db) return db.error();
    impl = std::make_unique<Impl>(db_path, std::move(*db));
  } catch (const SQLite::Exception& e) {
    return Error::Store(fmt::format("{}: cannot open database ({})", db_path, e.what()));
  }
  auto v = store_internal::PrepareDatabase(impl->db, db_path);
  if (!v.ok()) return v.error();
  try {
    // Reads of a million cached vectors: memory-map the file instead of copying 64 KiB pages through
    // pread, and keep enough pages that index lookups do not re-read them.
    impl->db.exec("PRAGMA mmap_size = 4294967296");
    impl->db.exec("PRAGMA cache_size = -65536");
    // Index files live beside the database and outlive it when it is deleted; a new database must not
    // pick up an old index whose labels meant other phrases. Each database gets a random id, and
    // index file names carry it.
    impl->db.exec("INSERT OR IGNORE INTO meta(key, value) VALUES('db_id', lower(hex(randomblob(8))))");
    impl->db_id = impl->db.execAndGet("SELECT value FROM meta WHERE key = 'db_id'").getString();
  } catch (const std::exception& e) {
    return impl->DbError(e);
  }
  return PhraseCache(std::move(impl));
}

std::string PhraseCache::IndexPath(const std::string& fingerprint) const {
  if (IsMemory(impl_->path)) return "";
  return impl_->path + ".hnsw/" + fingerprint + "-" + impl_->db_id + ".hnsw";
}

Result<std::size_t> PhraseCache::Count(const std::string& fingerprint) {
  try {
    std::int64_t id = impl_->FindModel(fingerprint);
    if (id < 0) return std::size_t{0};
    return static_cast<std::size_t>(impl_->CountRows(id));
  } catch (const std::exception& e) {
    return impl_->DbError(e);
  }
}

Result<CacheStats> PhraseCache::Get(const Embedder& model, const std::string& model_name,
                                    const std::vector<std::string_view>& phrases, float* out,
                                    std::uint8_t* has, int threads) {
  return Fetch(model, model_name, phrases, out, has, threads);
}

Result<CacheStats> PhraseCache::Add(const Embedder& model, const std::string& model_name,
                                    const std::vector<std::string_view>& phrases, int threads) {
  std::vector<std::uint8_t> has(phrases.size(), 0);
  return Fetch(model, model_name, phrases, nullptr, has.data(), threads);
}

// The phases of a Get or Add, on the phrases of the call in key order (Wanted): look them up (an ordered
// scan or a query each), list the misses, embed the misses a chunk at a time and store each chunk in a
// transaction, then fill in the repeats. A look-up or a store throws, and Fetch reports it as a store
// error of the cache's file; an embedder's error is passed on with its own kind (EmbedChunk).
Result<CacheStats> PhraseCache::Fetch(const Embedder& model, const std::string& model_name,
                                      const std::vector<std::string_view>& phrases, float* out,
                                      std::uint8_t* has, int threads) {
  CacheStats stats;
  const std::size_t n = phrases.size();
  stats.requested = n;
  threads = Threads(threads);
  if (n >= std::numeric_limits<std::uint32_t>::max()) {
    return Error::Limit(fmt::format("phrase cache: {} phrases in one call (expected fewer than {})", n,
                                    std::numeric_limits<std::uint32_t>::max()));
  }
  auto t0 = std::chrono::steady_clock::now();
  Wanted w(phrases, model.dims(), out, has, threads);
  std::int64_t model_id = 0;
  try {
    model_id = impl_->ModelId(model, model_name);
    // How many rows the model may have: labels are given one per row inserted (a row another
    // process stored first consumes one too), so next_label - 1 bounds the count from above without
    // counting a million rows. It only chooses between the two look-ups; both find every row.
    std::int64_t labels = -1;  // unknown
    if (n > kPointQueryMax) labels = impl_->LabelsGiven(model_id);
    if (n > kPointQueryMax && labels <= 4 * static_cast<std::int64_t>(n) + 1024) {
      impl_->LookUpByScan(model_id, w, threads);
    } else if (n > 0) {
      LookUpByPoints(impl_->db.getHandle(), model_id, w);
    }
  } catch (const std::exception& e) {
    return impl_->DbError(e);
  }
  const Misses misses = ListMisses(w, &stats.hits);
  stats.lookup_seconds = Since(t0);

  // Embed the misses on every core, slice by slice (an embedder's vector for a phrase does not depend
  // on the other phrases of the call, so the slicing changes no bit), and store them in transactions
  // of kRowsPerTransaction rows: a killed process keeps whole transactions and nothing else. The
  // next chunk is embedded while this one is stored.
  auto embed_chunk = [&](std::size_t b) { return EmbedChunk(model, model_name, w, misses.embed, b); };
  // Declared after everything embed_chunk refers to: an early return waits for it here.
  std::future<Chunk> ahead;
  if (!misses.embed.empty()) ahead = std::async(std::launch::async, embed_chunk, std::size_t{0});
  for (std::size_t b = 0; b < misses.embed.size(); b += kRowsPerTransaction) {
    const std::size_t m = std::min(misses.embed.size(), b + kRowsPerTransaction) - b;
    Chunk c = ahead.get();
    if (c.error) return *c.error;
    if (b + m < misses.embed.size()) ahead = std::async(std::launch::async, embed_chunk, b + m);
    stats.embed_seconds += c.seconds;
    auto ts = std::chrono::steady_clock::now();
    try {
      impl_->StoreChunk(model_id, w, misses.embed, b, c);
    } catch (const std::exception& e) {
      return impl_->DbError(e);
    }
    stats.store_seconds += Since(ts);
    for (std::size_t k = 0; k < m; ++k) {
      const std::size_t i = misses.embed[b + k];
      if (out != nullptr) std::memcpy(w.At(i), c.vecs.data() + k * w.row, w.row * sizeof(float));
      has[i] = c.hv[k];
    }
  }
  for (const auto& [i, src] : misses.repeats) w.CopyFrom(i, src);
  stats.embedded = misses.embed.size() + misses.repeats.size();
  for (std::size_t i = 0; i < n; ++i) stats.no_vector += has[i] == 0;
  return stats;
}

Result<std::shared_ptr<AnnIndex>> PhraseCache::Index(const Embedder& model, IndexStats* stats_out, int threads) {
  IndexStats stats;
  auto t0 = std::chrono::steady_clock::now();
  const int d = model.dims();
  const std::string& fp = model.fingerprint();
  const std::string path = IndexPath(fp);
  try {
    const std::int64_t model_id = impl_->FindModel(fp);
    std::shared_ptr<AnnIndex> index;
    std::optional<AnnIndex> loaded;
    if (!path.empty() && fs::exists(path)) {
      auto l = AnnIndex::Load(path, d, fp);
      if (l.ok()) {
        loaded = std::move(*l);
      } else {
        stats.rebuild_reason = l.error().message;
      }
    } else {
      stats.rebuild_reason = path.empty() ? "in-memory database" : "no index file yet";
    }
    // One scan of the model's rows gives the count and largest label of its vectors, and the rows
    // the loaded index lacks (a label above its largest).
    std::int64_t count = 0, max_label = 0;
    std::vector<std::int64_t> labels;
    std::vector<float> vecs;
    const std::int64_t no_label = std::numeric_limits<std::int64_t>::min();
    if (model_id >= 0) {
      impl_->ScanVectors(model_id, d, loaded ? loaded->max_label() : no_label, &count, &max_label, &labels,
                         &vecs);
    }
    if (loaded) {
      if (loaded->size() > 0 &&
          (loaded->max_label() > max_label || static_cast<std::int64_t>(loaded->size()) > count)) {
        stats.rebuild_reason = fmt::format("{}: index has {} phrases up to label {}, the cache {} up to {}",
                                           path, loaded->size(), loaded->max_label(), count, max_label);
      } else if (static_cast<std::int64_t>(loaded->size() + labels.size()) != count) {
        stats.rebuild_reason = fmt::format("{}: index does not match the cache table", path);
      } else {
        index = std::make_shared<AnnIndex>(std::move(*loaded));
      }
      if (!index && model_id >= 0) {  // rebuilt: every row is needed
        impl_->ScanVectors(model_id, d, no_label, &count, &max_label, &labels, &vecs);
      }
    }
    if (!index) {
      stats.rebuilt = true;
      index = std::make_shared<AnnIndex>(AnnIndex::Create(d, fp));
    }
    const std::size_t before = index->size();
    if (!labels.empty()) {
      Status st = index->AddBatch(labels, vecs.data(), Threads(threads));
      if (!st.ok()) return st.error();
    }
    stats.added = index->size() - before;
    if (!path.empty() && (stats.rebuilt || stats.added > 0)) {
      std::error_code ec;
      fs::create_directories(fs::path(path).parent_path(), ec);
      Status st = index->Save(path);
      if (!st.ok()) return st.error();
    }
    // Phrase vectors are far from the random-vector worst case the class default is tuned for: on the
    // 109k distinct phrases of KP20k gold + catSeqTG-2RF1, ef 200 gives recall@10 0.996 at ~3.7k
    // queries/s against 0.998 at ~1k with 800 (bench/README.md).
    index->set_ef_search(kCacheEfSearch);
    stats.size = index->size();
    stats.seconds = Since(t0);
    if (stats_out != nullptr) *stats_out = stats;
    return index;
  } catch (const std::exception& e) {
    return impl_->DbError(e);
  }
}

Result<std::vector<std::pair<std::int64_t, std::string>>> PhraseCache::AllPhrases(
    const std::string& fingerprint) {
  std::vector<std::pair<std::int64_t, std::string>> out;
  try {
    std::int64_t id = impl_->FindModel(fingerprint);
    if (id < 0) return out;
    Stmt scan(impl_->db.getHandle(),
              "SELECT label, phrase FROM phrase_vectors WHERE model_id = ? AND vec IS NOT NULL");
    scan.Int(1, id);
    while (scan.Step()) out.emplace_back(scan.IntAt(0), std::string(scan.TextAt(1)));
  } catch (const std::exception& e) {
    return impl_->DbError(e);
  }
  return out;
}

Result<std::vector<std::string>> PhraseCache::Phrases(const std::string& fingerprint,
                                                      const std::vector<std::int64_t>& labels) {
  std::vector<std::string> out(labels.size());
  try {
    std::int64_t id = impl_->FindModel(fingerprint);
    if (id < 0 || labels.empty()) return out;
    // Labels have no index of their own (the table's one key is (model, phrase)): one scan of the
    // model's rows serves any number of them.
    std::unordered_multimap<std::int64_t, std::size_t> want;
    for (std::size_t i = 0; i < labels.size(); ++i) want.emplace(labels[i], i);
    Stmt scan(impl_->db.getHandle(), "SELECT label, phrase FROM phrase_vectors WHERE model_id = ?");
    scan.Int(1, id);
    std::size_t left = want.size();
    while (left > 0 && scan.Step()) {
      auto [lo, hi] = want.equal_range(scan.IntAt(0));
      for (auto it = lo; it != hi; ++it, --left) out[it->second] = std::string(scan.TextAt(1));
    }
  } catch (const std::exception& e) {
    return impl_->DbError(e);
  }
  return out;
}

}  // namespace kplab
