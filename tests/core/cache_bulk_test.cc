// Bulk writes and reads of the phrase cache (schema version 4: one WITHOUT ROWID B-tree keyed by
// (model_id, phrase)): vectors read back bit for bit whatever the path (cold insert, ordered scan,
// point queries) and the thread count, the migration from the version-3 layout keeps every vector,
// repeated and odd phrases, and a process killed in the middle of an add.
//
// The model is made here: words w0..w999, 8 dimensions, word i's component j is Value(i, j), one
// decimal in [-10, 10], no two words alike and none zero; a phrase "wA wB" (A < B) is the mean of two.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <SQLiteCpp/SQLiteCpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kplab/cache.h"
#include "kplab/registry.h"
#include "kplab/store.h"
#include "temp_dir.h"

namespace kplab {
namespace {

constexpr int kWords = 1000;
constexpr int kDims = 8;

std::string Value(int i, int j) {
  const long v = (7919L * i + 104729L * j + 31L * i * i) % 201 - 100;
  return (v < 0 ? "-" : "") + std::to_string(std::labs(v) / 10) + "." + std::to_string(std::labs(v) % 10);
}

class CacheBulkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string words = tmp_.File("words.txt");
    {
      std::ofstream f(words);
      for (int i = 0; i < kWords; ++i) {
        f << "w" << i;
        for (int j = 0; j < kDims; ++j) f << " " << Value(i, j);
        f << "\n";
      }
    }
    auto m = ImportWordVecText(tmp_.File("models"), "w8", words, WordVecConfig{});
    ASSERT_TRUE(m.ok()) << m.error().message;
    auto e = LoadEmbedder(*m);
    ASSERT_TRUE(e.ok()) << e.error().message;
    model_ = *e;
    db_ = tmp_.File("c.db");
  }

  // n distinct phrases "wA wB" with A < B, in a shuffled order (so the input is not sorted).
  static std::vector<std::string> Phrases(std::size_t n, unsigned seed = 7) {
    std::vector<std::string> out;
    for (int a = 0; a < kWords && out.size() < n; ++a) {
      for (int b = a + 1; b < kWords && out.size() < n; ++b) {
        out.push_back("w" + std::to_string(a) + " w" + std::to_string(b));
      }
    }
    std::shuffle(out.begin(), out.end(), std::mt19937(seed));
    return out;
  }

  static std::vector<std::string_view> Views(const std::vector<std::string>& p) {
    return std::vector<std::string_view>(p.begin(), p.end());
  }

  // What the model gives for each phrase, one phrase per call on this thread.
  void Expected(const std::vector<std::string_view>& p, std::vector<float>* out, std::vector<std::uint8_t>* has) {
    out->assign(p.size() * kDims, 0.0f);
    has->assign(p.size(), 0);
    for (std::size_t i = 0; i < p.size(); ++i) {
      ASSERT_TRUE(model_->Embed({p[i]}, out->data() + i * kDims, has->data() + i).ok());
    }
  }

  CacheStats Get(PhraseCache& c, const std::vector<std::string_view>& p, std::vector<float>* out,
                 std::vector<std::uint8_t>* has, int threads = 0) {
    out->assign(p.size() * kDims, -1.0f);
    has->assign(p.size(), 7);
    auto s = c.Get(*model_, "w8", p, out->data(), has->data(), threads);
    EXPECT_TRUE(s.ok()) << s.error().message;
    return s.ok() ? *s : CacheStats{};
  }

  static bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  }

  test::TempDir tmp_;
  std::string db_;
  std::shared_ptr<const Embedder> model_;
};

TEST_F(CacheBulkTest, ColdThenWarmReadBackBitForBitOnEveryPath) {
  // More than two transactions' worth, so the insert spans transactions.
  const std::size_t n = 2 * PhraseCache::kRowsPerTransaction + 1234;
  const auto text = Phrases(n);
  const auto p = Views(text);
  std::vector<float> want, got;
  std::vector<std::uint8_t> want_has, got_has;
  Expected(p, &want, &want_has);
  {
    auto c = PhraseCache::Open(db_);
    ASSERT_TRUE(c.ok()) << c.error().message;
    CacheStats s = Get(*c, p, &got, &got_has, 3);
    EXPECT_EQ(s.requested, n);
    EXPECT_EQ(s.hits, 0u);
    EXPECT_EQ(s.embedded, n);
    EXPECT_EQ(s.no_vector, 0u);
    EXPECT_TRUE(SameBits(got, want));
    EXPECT_EQ(got_has, want_has);
  }
  {
    // The stored rows: one per phrase, labels 1..n (one per row, in key order), next_label n + 1.
    SQLite::Database db(db_, SQLite::OPEN_READONLY);
    EXPECT_EQ(db.execAndGet("SELECT count(*) FROM phrase_vectors").getInt64(), static_cast<std::int64_t>(n));
    EXPECT_EQ(db.execAndGet("SELECT count(DISTINCT label) FROM phrase_vectors").getInt64(),
              static_cast<std::int64_t>(n));
    EXPECT_EQ(db.execAndGet("SELECT min(label) || ' ' || max(label) FROM phrase_vectors").getString(),
              "1 " + std::to_string(n));
    EXPECT_EQ(db.execAndGet("SELECT next_label FROM embed_models").getInt64(), static_cast<std::int64_t>(n + 1));
    // Labels follow key order: the smallest phrase got label 1.
    EXPECT_EQ(db.execAndGet("SELECT phrase FROM phrase_vectors WHERE label = 1").getString(), "w0 w1");
    // One B-tree: no index beside the table (a WITHOUT ROWID table's key is the table itself).
    EXPECT_EQ(db.execAndGet("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                            "tbl_name = 'phrase_vectors'")
                  .getInt(),
              0);
    EXPECT_THAT(db.execAndGet("SELECT sql FROM sqlite_master WHERE name = 'phrase_vectors'").getString(),
                ::testing::HasSubstr("WITHOUT ROWID"));
  }
  auto c = PhraseCache::Open(db_);
  ASSERT_TRUE(c.ok());
  // Warm, everything wanted: the ordered scan.
  CacheStats s = Get(*c, p, &got, &got_has, 2);
  EXPECT_EQ(s.hits, n);
  EXPECT_EQ(s.embedded, 0u);
  EXPECT_TRUE(SameBits(got, want));
  EXPECT_EQ(got_has, want_has);
  // A few hundred wanted among many cached (point queries after counting) and a handful (point
  // queries without counting), with a phrase not cached in each.
  for (std::size_t k : {std::size_t{3000}, std::size_t{40}}) {
    std::vector<std::string> sub(text.begin(), text.begin() + k);
    sub.push_back("w998 w999 w" + std::to_string(k));
    auto sp = Views(sub);
    std::vector<float> w;
    std::vector<std::uint8_t> wh;
    Expected(sp, &w, &wh);
    CacheStats t = Get(*c, sp, &got, &got_has);
    EXPECT_EQ(t.hits, k);
    EXPECT_EQ(t.embedded, 1u);
    EXPECT_TRUE(SameBits(got, w)) << k;
    EXPECT_EQ(got_has, wh);
  }
  // The new phrases got the next labels.
  SQLite::Database db(db_, SQLite::OPEN_READONLY);
  EXPECT_EQ(db.execAndGet("SELECT label FROM phrase_vectors WHERE phrase = 'w998 w999 w3000'").getInt64(),
            static_cast<std::int64_t>(n + 1));
  EXPECT_EQ(db.execAndGet("SELECT label FROM phrase_vectors WHERE phrase = 'w998 w999 w40'").getInt64(),
            static_cast<std::int64_t>(n + 2));
}

TEST_F(CacheBulkTest, StoredRowsDoNotDependOnTheThreadCount) {
  const auto text = Phrases(5000, 11);
  const auto p = Views(text);
  std::vector<std::string> dumps;
  for (int threads : {1, 2, 5}) {
    const std::string path = tmp_.File("t" + std::to_string(threads) + ".db");
    {
      auto c = PhraseCache::Open(path);
      ASSERT_TRUE(c.ok());
      std::vector<float> v;
      std::vector<std::uint8_t> h;
      Get(*c, p, &v, &h, threads);
    }
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    dumps.push_back(db.execAndGet("SELECT group_concat(phrase || ':' || label || ':' || hex(vec), ';') FROM "
                                  "(SELECT * FROM phrase_vectors ORDER BY phrase)")
                        .getString());
  }
  EXPECT_GT(dumps[0].size(), 5000u * 70);
  EXPECT_EQ(dumps[1], dumps[0]);
  EXPECT_EQ(dumps[2], dumps[0]);
}

TEST_F(CacheBulkTest, RepeatedPhrasesAreStoredOnceAndFillEveryPosition) {
  auto c = PhraseCache::Open(db_);
  ASSERT_TRUE(c.ok());
  std::vector<float> v;
  std::vector<std::uint8_t> h;
  // w1 is word 1's row of the file, as float; "zzz" has no word.
  CacheStats s = Get(*c, {"w1", "zzz", "w1", "w2 w3", "w1", "zzz"}, &v, &h);
  EXPECT_EQ(s.requested, 6u);
  EXPECT_EQ(s.hits, 0u);
  EXPECT_EQ(s.embedded, 6u);
  EXPECT_EQ(s.no_vector, 2u);
  std::vector<float> w1;
  for (int j = 0; j < kDims; ++j) w1.push_back(std::strtof(Value(1, j).c_str(), nullptr));
  for (int pos : {0, 2, 4}) {
    EXPECT_EQ(std::vector<float>(v.begin() + pos * kDims, v.begin() + (pos + 1) * kDims), w1) << pos;
  }
  EXPECT_THAT(h, ::testing::ElementsAre(1, 0, 1, 1, 1, 0));
  EXPECT_EQ(*c->Count(model_->fingerprint()), 3u);
  // Again, half cached: the repeats of a cached phrase are hits, of a new one embedded once.
  s = Get(*c, {"w2 w3", "w5", "w2 w3", "w5"}, &v, &h);
  EXPECT_EQ(s.hits, 2u);
  EXPECT_EQ(s.embedded, 2u);
  EXPECT_EQ(*c->Count(model_->fingerprint()), 4u);
  EXPECT_EQ(std::vector<float>(v.begin(), v.begin() + kDims),
            std::vector<float>(v.begin() + 2 * kDims, v.begin() + 3 * kDims));
  EXPECT_EQ(std::vector<float>(v.begin() + kDims, v.begin() + 2 * kDims),
            std::vector<float>(v.begin() + 3 * kDims, v.begin() + 4 * kDims));
}

// A warm look-up of a long list is merged on several threads, each over a key range with its own read
// connection: repeats of a phrase must not be split between two ranges, and a corrupt row in any
// range is the error of the call.
TEST_F(CacheBulkTest, ParallelMergeKeepsRepeatsTogetherAndReportsCorruptRows) {
  const auto text = Phrases(40000, 17);
  std::vector<std::string> twice;
  for (const auto& t : text) {
    twice.push_back(t);
    twice.push_back(t);
  }
  const auto p = Views(twice);
  std::vector<float> want, v;
  std::vector<std::uint8_t> want_has, h;
  Expected(p, &want, &want_has);
  {
    auto c = PhraseCache::Open(db_);
    ASSERT_TRUE(c.ok());
    CacheStats s = Get(*c, p, &v, &h, 2);
    EXPECT_EQ(s.embedded, p.size());
    EXPECT_EQ(*c->Count(model_->fingerprint()), text.size());
  }
  for (int threads : {2, 3, 7}) {
    auto c = PhraseCache::Open(db_);
    ASSERT_TRUE(c.ok());
    CacheStats s = Get(*c, p, &v, &h, threads);
    EXPECT_EQ(s.hits, p.size()) << threads;
    EXPECT_TRUE(SameBits(v, want)) << threads;
    EXPECT_EQ(h, want_has);
  }
  {
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    // The largest key of all ("w99..." sorts after "w989..."), so it falls in the last range.
    const std::string last = db.execAndGet("SELECT max(phrase) FROM phrase_vectors").getString();
    db.exec("UPDATE phrase_vectors SET vec = x'00' WHERE phrase = '" + last + "'");
    auto c = PhraseCache::Open(db_);
    ASSERT_TRUE(c.ok());
    std::vector<float> o(p.size() * kDims);
    std::vector<std::uint8_t> hh(p.size());
    auto s = c->Get(*model_, "w8", p, o.data(), hh.data(), 2);
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.error().message,
                ::testing::HasSubstr("c.db: phrase cache: the cached vector of '" + last + "' has 1 bytes (expected 32)"));
  }
}

TEST_F(CacheBulkTest, OddBytesInPhrasesAreKeptExactly) {
  // A NUL inside, invalid UTF-8, the empty string, and prefixes of each other: distinct keys, each
  // read back with its own bytes (SQLite compares TEXT with memcmp and length, as the merge does).
  const std::vector<std::string> odd = {std::string("w1\0w2", 5), "w1", std::string("w1\0", 3), "w1\xff",
                                        "", "\xc3\x28 w4", "w1 ", std::string(1, '\0')};
  auto p = Views(odd);
  std::vector<float> want, v;
  std::vector<std::uint8_t> want_has, h;
  Expected(p, &want, &want_has);
  {
    auto c = PhraseCache::Open(db_);
    ASSERT_TRUE(c.ok());
    CacheStats s = Get(*c, p, &v, &h);
    EXPECT_EQ(s.embedded, odd.size());
    EXPECT_TRUE(SameBits(v, want));
  }
  auto c = PhraseCache::Open(db_);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c->Count(model_->fingerprint()), odd.size());
  // Both look-up paths: everything (scan is only used above 256 phrases, so pad with real ones) and
  // the few alone (point queries).
  auto many = Phrases(600);
  many.insert(many.end(), odd.begin(), odd.end());
  auto mp = Views(many);
  std::vector<float> mw;
  std::vector<std::uint8_t> mh;
  Expected(mp, &mw, &mh);
  CacheStats s = Get(*c, mp, &v, &h);
  EXPECT_EQ(s.hits, odd.size());
  EXPECT_TRUE(SameBits(v, mw));
  s = Get(*c, p, &v, &h);
  EXPECT_EQ(s.hits, odd.size());
  EXPECT_TRUE(SameBits(v, want));
  SQLite::Database db(db_, SQLite::OPEN_READONLY);
  EXPECT_EQ(db.execAndGet("SELECT count(*) FROM phrase_vectors WHERE typeof(phrase) = 'text' AND "
                          "length(CAST(phrase AS BLOB)) = 5 AND hex(phrase) = '7731007732'")
                .getInt(),
            1);
}

// A version-3 file as kplab wrote it: phrase_vectors with rowids (the index labels) and a UNIQUE
// (model_id, phrase) index; embed_models without next_label. Made from a new file by replacing the
// version-4 table with the version-2 DDL, as docs/store.md asks of migration tests.
TEST_F(CacheBulkTest, MigrationFromVersionThreeKeepsEveryVectorBitForBit) {
  ASSERT_TRUE(RunStore::Open(db_).ok());
  const auto text = Phrases(3000, 3);
  std::vector<std::string> all = text;
  all.push_back("zzz unknown");  // no vector: NULL
  const auto p = Views(all);
  std::vector<float> want;
  std::vector<std::uint8_t> want_has;
  Expected(p, &want, &want_has);
  {
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    db.exec(R"sql(
      DROP TABLE run_slots;
      ALTER TABLE runs DROP COLUMN shard_index;
      ALTER TABLE runs DROP COLUMN shard_count;
      ALTER TABLE runs DROP COLUMN doc_begin;
      ALTER TABLE runs DROP COLUMN doc_end;
      ALTER TABLE runs DROP COLUMN slots_digest;
      DROP TABLE phrase_vectors;
      ALTER TABLE embed_models DROP COLUMN next_label;
      CREATE TABLE phrase_vectors(
        id       INTEGER PRIMARY KEY,
        model_id INTEGER NOT NULL REFERENCES embed_models(id),
        phrase   TEXT NOT NULL,
        vec      BLOB,
        UNIQUE(model_id, phrase));
      UPDATE meta SET value = '3' WHERE key = 'schema_version';)sql");
    SQLite::Statement m(db, "INSERT INTO embed_models(fingerprint, name, backend, dims) VALUES(?, 'w8', 'wordvec', ?)");
    m.bind(1, model_->fingerprint());
    m.bind(2, kDims);
    m.exec();
    // Another model's rows, which must stay its own.
    db.exec("INSERT INTO embed_models(fingerprint, name, backend, dims) VALUES('" + std::string(64, 'a') +
            "', 'other', 'wordvec', 2)");
    db.exec("INSERT INTO phrase_vectors(id, model_id, phrase, vec) VALUES(2, 2, 'w1', x'0000803f00000040')");
    SQLite::Transaction tx(db);
    SQLite::Statement ins(db, "INSERT INTO phrase_vectors(id, model_id, phrase, vec) VALUES(?, 1, ?, ?)");
    for (std::size_t i = 0; i < p.size(); ++i) {
      ins.bind(1, static_cast<std::int64_t>(10 + 3 * i));  // rowids with gaps, in insertion order
      ins.bind(2, all[i]);
      if (want_has[i]) {
        ins.bind(3, want.data() + i * kDims, kDims * 4);
      } else {
        ins.bind(3);
      }
      ins.exec();
      ins.reset();
    }
    tx.commit();
  }
  {
    auto store = RunStore::Open(db_);
    ASSERT_TRUE(store.ok()) << store.error().message;
    EXPECT_EQ(store->schema_version(), RunStore::CurrentSchemaVersion());
  }
  SQLite::Database db(db_, SQLite::OPEN_READONLY);
  EXPECT_EQ(db.execAndGet("SELECT count(*) FROM phrase_vectors").getInt64(), static_cast<std::int64_t>(p.size() + 1));
  // Old rowids became labels, so an index file built from them stays valid.
  SQLite::Statement lab(db, "SELECT label, hex(vec) FROM phrase_vectors WHERE model_id = 1 AND phrase = ?");
  lab.bind(1, all[5]);
  ASSERT_TRUE(lab.executeStep());
  EXPECT_EQ(lab.getColumn(0).getInt64(), 10 + 3 * 5);
  EXPECT_EQ(db.execAndGet("SELECT next_label FROM embed_models WHERE id = 1").getInt64(),
            static_cast<std::int64_t>(10 + 3 * (p.size() - 1) + 1));
  EXPECT_EQ(db.execAndGet("SELECT next_label FROM embed_models WHERE id = 2").getInt64(), 3);
  EXPECT_EQ(db.execAndGet("SELECT hex(vec) FROM phrase_vectors WHERE model_id = 2").getString(), "0000803F00000040");
  auto c = PhraseCache::Open(db_);
  ASSERT_TRUE(c.ok());
  std::vector<float> v;
  std::vector<std::uint8_t> h;
  CacheStats s = Get(*c, p, &v, &h);
  EXPECT_EQ(s.hits, p.size());
  EXPECT_EQ(s.embedded, 0u);
  EXPECT_EQ(s.no_vector, 1u);
  EXPECT_TRUE(SameBits(v, want));
  EXPECT_EQ(h, want_has);
}

// A `cache add` killed at any point leaves whole transactions: every row present is complete and
// right, the file is intact, and the next add stores the rest.
TEST_F(CacheBulkTest, KilledAddLeavesWholeTransactionsOnly) {
  const std::size_t n = 6 * PhraseCache::kRowsPerTransaction;
  const auto text = Phrases(n, 5);
  const auto p = Views(text);
  ASSERT_TRUE(PhraseCache::Open(db_).ok());  // the schema exists before the child starts
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto c = PhraseCache::Open(db_);
    std::vector<float> v(n * kDims);
    std::vector<std::uint8_t> h(n);
    const bool ok = c.ok() && c->Get(*model_, "w8", p, v.data(), h.data(), 2).ok();
    _exit(ok ? 0 : 1);
  }
  // Kill it as soon as its first transaction is visible (the later ones are still to come).
  {
    SQLite::Database db(db_, SQLite::OPEN_READONLY);
    // The child's first connection recovers the WAL index under an exclusive lock (the parent's closed
    // the file): wait for it as kplab's own connections do, not fail with "database is locked".
    db.setBusyTimeout(30000);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (db.execAndGet("SELECT count(*) FROM phrase_vectors").getInt64() == 0 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child finished before it was killed";
  std::int64_t stored = 0;
  {
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    EXPECT_EQ(db.execAndGet("PRAGMA integrity_check").getString(), "ok");
    stored = db.execAndGet("SELECT count(*) FROM phrase_vectors").getInt64();
    EXPECT_GT(stored, 0);
    EXPECT_LT(stored, static_cast<std::int64_t>(n));
    EXPECT_EQ(stored % static_cast<std::int64_t>(PhraseCache::kRowsPerTransaction), 0) << stored;
    EXPECT_EQ(db.execAndGet("SELECT next_label FROM embed_models").getInt64(), stored + 1);
    // Every stored row is the model's vector of its phrase.
    SQLite::Statement rows(db, "SELECT phrase, vec FROM phrase_vectors");
    std::size_t checked = 0;
    float w[kDims];
    std::uint8_t wh = 0;
    while (rows.executeStep()) {
      const std::string ph = rows.getColumn(0).getString();
      ASSERT_TRUE(model_->Embed({ph}, w, &wh).ok());
      ASSERT_EQ(rows.getColumn(1).getBytes(), kDims * 4) << ph;
      ASSERT_EQ(std::memcmp(rows.getColumn(1).getBlob(), w, sizeof w), 0) << ph;
      ++checked;
    }
    EXPECT_EQ(checked, static_cast<std::size_t>(stored));
  }
  auto c = PhraseCache::Open(db_);
  ASSERT_TRUE(c.ok());
  std::vector<float> v;
  std::vector<std::uint8_t> h;
  CacheStats s = Get(*c, p, &v, &h);
  EXPECT_EQ(s.hits, static_cast<std::size_t>(stored));
  EXPECT_EQ(s.embedded, n - static_cast<std::size_t>(stored));
  EXPECT_EQ(*c->Count(model_->fingerprint()), n);
}

// Two writers filling the same model at once (overlapping phrase sets, one connection each): every
// phrase stored once with its vector, labels distinct (each writer reads next_label under its write
// lock), next_label past all of them.
TEST_F(CacheBulkTest, ConcurrentWritersShareNoLabel) {
  const auto text = Phrases(3 * PhraseCache::kRowsPerTransaction, 13);
  const std::size_t third = text.size() / 3;
  std::vector<std::string> a(text.begin(), text.begin() + 2 * third), b(text.begin() + third, text.end());
  ASSERT_TRUE(PhraseCache::Open(db_).ok());
  auto fill = [&](const std::vector<std::string>* p, bool* ok) {
    auto c = PhraseCache::Open(db_);
    std::vector<float> v(p->size() * kDims);
    std::vector<std::uint8_t> h(p->size());
    auto views = Views(*p);
    *ok = c.ok() && c->Get(*model_, "w8", views, v.data(), h.data(), 1).ok();
  };
  bool ok_a = false, ok_b = false;
  std::thread ta(fill, &a, &ok_a), tb(fill, &b, &ok_b);
  ta.join();
  tb.join();
  EXPECT_TRUE(ok_a);
  EXPECT_TRUE(ok_b);
  SQLite::Database db(db_, SQLite::OPEN_READONLY);
  const auto n = static_cast<std::int64_t>(text.size());
  EXPECT_EQ(db.execAndGet("SELECT count(*) FROM phrase_vectors").getInt64(), n);
  EXPECT_EQ(db.execAndGet("SELECT count(DISTINCT label) FROM phrase_vectors").getInt64(), n);
  EXPECT_GT(db.execAndGet("SELECT next_label FROM embed_models").getInt64(),
            db.execAndGet("SELECT max(label) FROM phrase_vectors").getInt64());
  auto c = PhraseCache::Open(db_);
  ASSERT_TRUE(c.ok());
  const auto p = Views(text);
  std::vector<float> want, v;
  std::vector<std::uint8_t> want_has, h;
  Expected(p, &want, &want_has);
  CacheStats s = Get(*c, p, &v, &h);
  EXPECT_EQ(s.hits, text.size());
  EXPECT_TRUE(SameBits(v, want));
}

// The index over a bulk-filled cache, built on several threads: its graph depends on thread timing,
// so it is checked by what it answers — each phrase's own vector finds a phrase with cosine 1 — and
// by recall against exact search, and its labels map back to phrases.
TEST_F(CacheBulkTest, ParallelIndexFindsThePhrasesItWasBuiltFrom) {
  const auto text = Phrases(20000, 9);
  const auto p = Views(text);
  auto c = PhraseCache::Open(db_);
  ASSERT_TRUE(c.ok());
  std::vector<float> v;
  std::vector<std::uint8_t> h;
  Get(*c, p, &v, &h);
  IndexStats st;
  auto index = c->Index(*model_, &st, 3);
  ASSERT_TRUE(index.ok()) << index.error().message;
  EXPECT_TRUE(st.rebuilt);
  EXPECT_EQ((*index)->size(), p.size());
  auto all = c->AllPhrases(model_->fingerprint());
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), p.size());
  std::vector<std::int64_t> labels;
  std::vector<float> unit;
  std::unordered_map<std::int64_t, std::size_t> row_of;  // label -> position in p
  std::unordered_map<std::string, std::size_t> pos;
  for (std::size_t i = 0; i < p.size(); ++i) pos[text[i]] = i;
  for (const auto& [label, phrase] : *all) {
    labels.push_back(label);
    const std::size_t i = pos.at(phrase);
    row_of[label] = i;
    double n2 = 0;
    for (int j = 0; j < kDims; ++j) n2 += static_cast<double>(v[i * kDims + j]) * v[i * kDims + j];
    for (int j = 0; j < kDims; ++j) unit.push_back(static_cast<float>(v[i * kDims + j] / std::sqrt(n2)));
  }
  std::size_t hit = 0, total = 0, self = 0;
  for (std::size_t q = 0; q < 200; ++q) {
    const float* query = v.data() + q * 97 * kDims;
    auto got = (*index)->Search(query, 10);
    auto exact = BruteForceSearch(unit.data(), labels.data(), labels.size(), kDims, query, 10);
    ASSERT_FALSE(got.empty());
    // The phrase itself first (cosine 1) for almost every query: HNSW is approximate, and a graph built
    // on several threads depends on their timing, so one query in a hundred may miss it (CI saw 2 of 200).
    self += std::abs(got[0].second - 1.0) <= 1e-5;
    // Recall by cosine (a tie at the 10th place may be broken either way).
    ASSERT_EQ(exact.size(), 10u);
    for (const auto& x : got) hit += x.second >= exact.back().second - 1e-6f;
    total += exact.size();
  }
  EXPECT_GE(static_cast<double>(hit) / total, 0.95);
  EXPECT_GE(self, 190u) << "queries whose nearest phrase was themselves";
  // Labels back to text, in the order asked, unknown ones empty.
  auto texts = c->Phrases(model_->fingerprint(), {labels[7], 999999999, labels[3]});
  ASSERT_TRUE(texts.ok());
  EXPECT_EQ((*texts)[0], text[row_of[labels[7]]]);
  EXPECT_EQ((*texts)[1], "");
  EXPECT_EQ((*texts)[2], text[row_of[labels[3]]]);
}

}  // namespace
}  // namespace kplab
