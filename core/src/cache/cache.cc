#include "kplab/cache.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <thread>
#include <unordered_map>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>

#include "store/store_internal.h"

namespace fs = std::filesystem;

namespace kplab {
namespace {

constexpr std::size_t kBatch = 4096;
constexpr int kCacheEfSearch = 200;

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool IsMemory(const std::string& p) { return p.empty() || p == ":memory:"; }

}  // namespace

struct PhraseCache::Impl {
  std::string path;
  SQLite::Database db;
  std::string db_id;  // random id of this database file (meta 'db_id'), part of index file names
  Impl(const std::string& p, int flags) : path(p), db(p, flags) {}

  Error DbError(const std::exception& e) const {
    return Error{fmt::format("{}: phrase cache: {}", path, e.what())};
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
    SQLite::Statement ins(db, "INSERT INTO embed_models(fingerprint, name, backend, dims) VALUES(?,?,?,?)");
    ins.bind(1, m.fingerprint());
    ins.bind(2, name);
    ins.bind(3, std::string(m.backend()));
    ins.bind(4, m.dims());
    ins.exec();
    return db.getLastInsertRowid();
  }

  std::int64_t FindModel(const std::string& fp) {
    SQLite::Statement get(db, "SELECT id FROM embed_models WHERE fingerprint = ?");
    get.bind(1, fp);
    return get.executeStep() ? get.getColumn(0).getInt64() : -1;
  }

  // Copies a stored vector into dst after checking its size and values.
  void ReadVec(const SQLite::Column& col, int dims, float* dst, std::uint8_t* has,
               std::string_view phrase) {
    if (col.isNull()) {
      std::fill(dst, dst + dims, 0.0f);
      *has = 0;
      return;
    }
    if (col.getBytes() != dims * 4) {
      throw std::runtime_error(fmt::format("the cached vector of '{}' has {} bytes (expected {}); "
                                           "corrupt cache",
                                           phrase, col.getBytes(), dims * 4));
    }
    std::memcpy(dst, col.getBlob(), static_cast<std::size_t>(dims) * 4);
    double n2 = 0;
    for (int j = 0; j < dims; ++j) {
      if (!std::isfinite(dst[j])) {
        throw std::runtime_error(fmt::format("the cached vector of '{}' is not finite; corrupt cache",
                                             phrase));
      }
      n2 += static_cast<double>(dst[j]) * dst[j];
    }
    *has = n2 > 0;
  }
};

PhraseCache::PhraseCache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PhraseCache::PhraseCache(PhraseCache&&) noexcept = default;
PhraseCache& PhraseCache::operator=(PhraseCache&&) noexcept = default;
PhraseCache::~PhraseCache() = default;

const std::string& PhraseCache::db_path() const { return impl_->path; }

Result<PhraseCache> PhraseCache::Open(const std::string& db_path) {
  std::unique_ptr<Impl> impl;
  try {
    impl = std::make_unique<Impl>(db_path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  } catch (const SQLite::Exception& e) {
    return Error{fmt::format("{}: cannot open database ({})", db_path, e.what())};
  }
  auto v = store_internal::PrepareDatabase(impl->db, db_path);
  if (!v.ok()) return v.error();
  try {
    // Reads of 100k cached vectors: memory-map the file instead of copying 64 KiB pages through
    // pread, and keep enough pages that index lookups do not re-read them.
    impl->db.exec("PRAGMA mmap_size = 1073741824");
    impl->db.exec("PRAGMA cache_size = -65536");
    // Index files live beside the database and outlive it when it is deleted; a new database must not
    // pick up an old index whose labels (rowids) meant other phrases. Each database gets a random id,
    // and index file names carry it.
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
    SQLite::Statement c(impl_->db, "SELECT count(*) FROM phrase_vectors WHERE model_id = ?");
    c.bind(1, id);
    c.executeStep();
    return static_cast<std::size_t>(c.getColumn(0).getInt64());
  } catch (const std::exception& e) {
    return impl_->DbError(e);
  }
}

Result<CacheStats> PhraseCache::Get(const Embedder& model, const std::string& model_name,
                                    const std::vector<std::string_view>& phrases, float* out,
                                    std::uint8_t* has, int threads) {
  CacheStats stats;
  stats.requested = phrases.size();
  const int d = model.dims();
  SQLite::Database& db = impl_->db;
  std::vector<std::size_t> misses;
  std::int64_t model_id = 0;
  auto t0 = std::chrono::steady_clock::now();
  try {
    model_id = impl_->ModelId(model, model_name);
    SQLite::Statement count(db, "SELECT count(*) FROM phrase_vectors WHERE model_id = ?");
    count.bind(1, model_id);
    count.executeStep();
    const std::size_t cached = static_cast<std::size_t>(count.getColumn(0).getInt64());
    std::vector<std::uint8_t> found(phrases.size(), 0);
    if (cached > 0 && cached <= 4 * phrases.size() + 1024) {
      // Most of the table is wanted: one scan beats a point query per phrase.
      std::unordered_map<std::string_view, std::size_t> want;
      want.reserve(phrases.size());
      for (std::size_t i = 0; i < phrases.size(); ++i) want.emplace(phrases[i], i);
      // In rowid order (the '+' keeps SQLite off the (model_id, phrase) index, whose order would
      // make every row a random page access).
      SQLite::Statement scan(db, "SELECT phrase, vec FROM phrase_vectors WHERE +model_id = ?");
      scan.bind(1, model_id);
      while (scan.executeStep()) {
        SQLite::Column ph = scan.getColumn(0);
        std::string_view text(static_cast<const char*>(ph.getBlob()), static_cast<std::size_t>(ph.getBytes()));
        auto it = want.find(text);
        if (it == want.end()) continue;
        std::size_t i = it->second;
        impl_->ReadVec(scan.getColumn(1), d, out + i * d, has + i, text);
        found[i] = 1;
      }
    } else if (cached > 0) {
      SQLite::Statement get(db, "SELECT vec FROM phrase_vectors WHERE model_id = ? AND phrase = ?");
      get.bind(1, model_id);
      for (std::size_t i = 0; i < phrases.size(); ++i) {
        get.bind(2, std::string(phrases[i]));  // as TEXT (a pointer + size would bind a BLOB)
        if (get.executeStep()) {
          impl_->ReadVec(get.getColumn(0), d, out + i * d, has + i, phrases[i]);
          found[i] = 1;
        }
        get.reset();
      }
    }
    for (std::size_t i = 0; i < phrases.size(); ++i) {
      if (found[i]) {
        ++stats.hits;
      } else {
        misses.push_back(i);
      }
    }
  } catch (const std::exception& e) {
    return impl_->DbError(e);
  }
  stats.lookup_seconds = Since(t0);

  // Embed the misses batch by batch; each batch is stored in one transaction, so an interrupted run
  // keeps what it finished.
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::min(8u, std::thread::hardware_concurrency())));
  for (std::size_t b = 0; b < misses.size(); b += kBatch) {
    const std::size_t e = std::min(misses.size(), b + kBatch);
    auto te = std::chrono::steady_clock::now();
    std::vector<std::string_view> batch;
    for (std::size_t k = b; k < e; ++k) batch.push_back(phrases[misses[k]]);
    std::vector<float> vecs(batch.size() * d);
    std::vector<std::uint8_t> hv(batch.size());
    const int nt = batch.size() < 256 ? 1 : threads;
    std::vector<Status> status(nt);
    std::vector<std::thread> pool;
    for (int t = 0; t < nt; ++t) {
      const std::size_t lo = batch.size() * t / nt, hi = batch.size() * (t + 1) / nt;
      auto work = [&, t, lo, hi] {
        std::vector<std::string_view> part(batch.begin() + lo, batch.begin() + hi);
        status[t] = model.Embed(part, vecs.data() + lo * d, hv.data() + lo);
      };
      if (t + 1 == nt) {
        work();
      } else {
        pool.emplace_back(work);
      }
    }
    for (auto& th : pool) th.join();
    for (const Status& st : status) {
      if (!st.ok()) return Error{st.message()};
    }
    for (std::size_t k = 0; k < batch.size(); ++k) {
      double n2 = 0;
      for (int j = 0; j < d && hv[k]; ++j) {
        const float x = vecs[k * d + j];
        if (!std::isfinite(x)) {
          return Error{fmt::format("model {}: the vector of '{}' is not finite", model_name, batch[k])};
        }
        n2 += static_cast<double>(x) * x;
      }
      // One rule for every backend: a zero vector is no vector (cosine 0, not in the index).
      if (hv[k] && n2 == 0) hv[k] = 0;
    }
    stats.embed_seconds += Since(te);
    auto ts = std::chrono::steady_clock::now();
    try {
      SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
      SQLite::Statement ins(db, "INSERT OR IGNORE INTO phrase_vectors(model_id, phrase, vec) VALUES(?,?,?)");
      ins.bind(1, model_id);
      for (std::size_t k = 0; k < batch.size(); ++k) {
        ins.bind(2, std::string(batch[k]));
        if (hv[k]) {
          ins.bind(3, vecs.data() + k * d, d * 4);
        } else {
          ins.bind(3);  // NULL: the model has no vector for it
        }
        ins.exec();
        ins.reset();
      }
      tx.commit();
    } catch (const std::exception& e) {
      return impl_->DbError(e);
    }
    stats.store_seconds += Since(ts);
    for (std::size_t k = 0; k < batch.size(); ++k) {
      const std::size_t i = misses[b + k];
      std::memcpy(out + i * d, vecs.data() + k * d, static_cast<std::size_t>(d) * 4);
      has[i] = hv[k];
    }
    stats.embedded += batch.size();
  }
  for (std::size_t i = 0; i < phrases.size(); ++i) stats.no_vector += has[i] == 0;
  return stats;
}

Result<std::shared_ptr<AnnIndex>> PhraseCache::Index(const Embedder& model, IndexStats* stats_out) {
  IndexStats stats;
  auto t0 = std::chrono::steady_clock::now();
  const int d = model.dims();
  const std::string& fp = model.fingerprint();
  const std::string path = IndexPath(fp);
  try {
    std::int64_t model_id = impl_->FindModel(fp);
    std::int64_t count = 0, max_id = 0;
    if (model_id >= 0) {
      SQLite::Statement c(impl_->db,
                          "SELECT count(*), coalesce(max(id), 0) FROM phrase_vectors "
                          "WHERE model_id = ? AND vec IS NOT NULL");
      c.bind(1, model_id);
      c.executeStep();
      count = c.getColumn(0).getInt64();
      max_id = c.getColumn(1).getInt64();
    }
    std::shared_ptr<AnnIndex> index;
    std::int64_t after = 0;  // rows with a larger id are added
    if (!path.empty() && fs::exists(path)) {
      auto loaded = AnnIndex::Load(path, d, fp);
      if (!loaded.ok()) {
        stats.rebuild_reason = loaded.error().message;
      } else if (loaded->max_label() > max_id || static_cast<std::int64_t>(loaded->size()) > count) {
        stats.rebuild_reason = fmt::format("{}: index has {} phrases up to id {}, the cache {} up to {}",
                                           path, loaded->size(), loaded->max_label(), count, max_id);
      } else {
        SQLite::Statement c(impl_->db,
                            "SELECT count(*) FROM phrase_vectors WHERE model_id = ? AND vec IS NOT NULL "
                            "AND id > ?");
        c.bind(1, model_id);
        c.bind(2, loaded->max_label());
        c.executeStep();
        if (static_cast<std::int64_t>(loaded->size()) + c.getColumn(0).getInt64() == count) {
          after = loaded->max_label();
          index = std::make_shared<AnnIndex>(std::move(*loaded));
        } else {
          stats.rebuild_reason = fmt::format("{}: index does not match the cache table", path);
        }
      }
    } else {
      stats.rebuild_reason = path.empty() ? "in-memory database" : "no index file yet";
    }
    if (!index) {
      stats.rebuilt = true;
      index = std::make_shared<AnnIndex>(AnnIndex::Create(d, fp));
    }
    const std::size_t before = index->size();
    if (model_id >= 0 && count > static_cast<std::int64_t>(before)) {
      SQLite::Statement rows(impl_->db,
                             "SELECT id, vec FROM phrase_vectors WHERE model_id = ? AND vec IS NOT NULL "
                             "AND id > ? ORDER BY id");
      rows.bind(1, model_id);
      rows.bind(2, after);
      std::vector<std::int64_t> labels;
      std::vector<float> vecs;
      std::uint8_t has = 0;
      while (rows.executeStep()) {
        labels.push_back(rows.getColumn(0).getInt64());
        vecs.resize(labels.size() * d);
        impl_->ReadVec(rows.getColumn(1), d, vecs.data() + (labels.size() - 1) * d, &has, "(index)");
        if (!has) {  // a zero vector stored by an older kplab: never in the index
          labels.pop_back();
          vecs.resize(labels.size() * d);
        }
      }
      Status st = index->AddBatch(labels, vecs.data());
      if (!st.ok()) return Error{st.message()};
    }
    stats.added = index->size() - before;
    if (!path.empty() && (stats.rebuilt || stats.added > 0)) {
      std::error_code ec;
      fs::create_directories(fs::path(path).parent_path(), ec);
      Status st = index->Save(path);
      if (!st.ok()) return Error{st.message()};
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
    SQLite::Statement scan(impl_->db,
                           "SELECT id, phrase FROM phrase_vectors WHERE model_id = ? AND vec IS NOT NULL");
    scan.bind(1, id);
    while (scan.executeStep()) out.emplace_back(scan.getColumn(0).getInt64(), scan.getColumn(1).getString());
  } catch (const std::exception& e) {
    return impl_->DbError(e);
  }
  return out;
}

Result<std::vector<std::string>> PhraseCache::Phrases(const std::vector<std::int64_t>& ids) {
  std::vector<std::string> out;
  try {
    SQLite::Statement get(impl_->db, "SELECT phrase FROM phrase_vectors WHERE id = ?");
    for (std::int64_t id : ids) {
      get.bind(1, id);
      out.push_back(get.executeStep() ? get.getColumn(0).getString() : std::string());
      get.reset();
    }
  } catch (const std::exception& e) {
    return impl_->DbError(e);
  }
  return out;
}

}  // namespace kplab
