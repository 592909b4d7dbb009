// Partitioned pair mining (homog::MinePairs with a Partition; docs/homogeneity.md, "Partitioned
// mining"): the partitions are pairwise disjoint and their union is the single-process result, pair for
// pair and bit for bit. Owners are worked out by hand on small cases (token ranks written out below);
// the union is checked against MinePairs on random sets and on all of KP20k's gold.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kplab/corpus.h"
#include "kplab/homog.h"
#include "kplab/homog_corpus.h"
#include "kplab/io.h"
#include "kplab/profile.h"

namespace kplab::homog {
namespace {

using Sets = std::vector<std::vector<std::uint32_t>>;

std::vector<DocPair> Mine(const Sets& sets, double theta, std::uint32_t p, std::uint32_t n, MineStats* st = nullptr) {
  auto r = MinePairs(sets, theta, st, Partition{p, n});
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? *r : std::vector<DocPair>{};
}

// Mines all n partitions; checks they are pairwise disjoint and that their union, sorted by (a, b),
// equals MinePairs' list exactly (same pairs, shared, uni and jaccard bits), and that the candidates
// verified add up to the single process's.
void ExpectUnionIsWhole(const Sets& sets, double theta, std::uint32_t n, const std::string& what) {
  MineStats whole_st;
  auto whole = MinePairs(sets, theta, &whole_st);
  ASSERT_TRUE(whole.ok());
  std::vector<DocPair> all;
  std::set<std::pair<std::uint32_t, std::uint32_t>> seen;
  std::size_t candidates = 0;
  for (std::uint32_t p = 0; p < n; ++p) {
    MineStats st;
    const auto part = Mine(sets, theta, p, n, &st);
    EXPECT_EQ(st.sets, whole_st.sets) << what;
    EXPECT_EQ(st.pairs, part.size()) << what;
    EXPECT_TRUE(std::is_sorted(part.begin(), part.end(), [](const DocPair& x, const DocPair& y) {
      return x.a != y.a ? x.a < y.a : x.b < y.b;
    })) << what;
    candidates += st.candidates;
    for (const DocPair& d : part) {
      ASSERT_TRUE(seen.emplace(d.a, d.b).second)
          << what << ": pair (" << d.a << ", " << d.b << ") produced by two partitions of " << n;
      all.push_back(d);
    }
  }
  std::sort(all.begin(), all.end(),
            [](const DocPair& x, const DocPair& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
  ASSERT_EQ(all, *whole) << what << ", " << n << " partitions";
  EXPECT_EQ(candidates, whole_st.candidates) << what << ", " << n << " partitions";
}

// d0 = {0,1,2,3}, d1 = {0,1,2,4}: shared {0,1,2}, union 5, J = 3/5. Document frequencies: ids 0, 1, 2
// twice, 3 and 4 once, so the global order (df, then id) is 3, 4, 0, 1, 2 with ranks 0..4: the shared
// tokens have ranks 2, 3, 4, and the rarest shared one is id 0 (rank 2).
//  - 3 partitions: the shared ranks 2, 3, 4 belong to partitions 2, 0, 1 — every partition owns one
//    shared token, and only partition 2 (owner of rank 2) may produce the pair. At theta 0.5 both
//    prefixes are 4 - 2 + 1 = 3 tokens: d0 ranks {0,2,3}, d1 ranks {1,2,3}; d1 probes after d0 (same
//    size, higher index). Partition 0 reaches d0 through rank 3 and rejects the pair (its rarest
//    shared rank is 2); partition 1 owns ranks 1 and 4, neither in both prefixes: nothing.
//  - 2 partitions: rank 2 belongs to partition 0.
TEST(HomogPartition, PairWhoseSharedTokensSpanSeveralPartitions) {
  const Sets sets = {{0, 1, 2, 3}, {0, 1, 2, 4}};
  const DocPair expected{0, 1, 3, 5, 3.0 / 5.0};
  MineStats st;
  EXPECT_TRUE(Mine(sets, 0.5, 0, 3, &st).empty());
  EXPECT_EQ(st.candidates, 0u);  // reached through rank 3, rejected before verification
  EXPECT_TRUE(Mine(sets, 0.5, 1, 3).empty());
  EXPECT_EQ(Mine(sets, 0.5, 2, 3, &st), std::vector<DocPair>{expected});
  EXPECT_EQ(st.candidates, 1u);
  EXPECT_EQ(Mine(sets, 0.5, 0, 2), std::vector<DocPair>{expected});
  EXPECT_TRUE(Mine(sets, 0.5, 1, 2).empty());
  EXPECT_EQ(Mine(sets, 0.5, 0, 1), std::vector<DocPair>{expected});
  // More partitions than tokens: rank 2 is partition 2's of 7; the others hold nothing.
  for (std::uint32_t p = 0; p < 7; ++p) {
    EXPECT_EQ(Mine(sets, 0.5, p, 7), p == 2 ? std::vector<DocPair>{expected} : std::vector<DocPair>{}) << p;
  }
}

// Ties in the token order: every token has df 2, so ranks follow the ids (5 -> 0, 7 -> 1, 9 -> 2),
// whatever order the sets list them in. (d0, d1) share {5, 9}: rarest rank 0; (d2, d3) share {7}:
// rank 1. With 2 or 3 partitions the first pair is partition 0's and the second partition 1's. The
// same sets with ids far above the number of occurrences (the miner's sparse-id path) must give the
// same owners: the order is by id there too.
TEST(HomogPartition, TiesInTokenOrderAreBrokenById) {
  for (std::uint32_t scale : {1u, 400000009u}) {
    const std::uint32_t a = 5 * scale, b = 7 * scale, c = 9 * scale;
    const Sets sets = {{c, a}, {a, c}, {b}, {b}};
    const DocPair p01{0, 1, 2, 2, 1.0}, p23{2, 3, 1, 1, 1.0};
    for (std::uint32_t n : {2u, 3u}) {
      EXPECT_EQ(Mine(sets, 0.5, 0, n), std::vector<DocPair>{p01}) << scale << " " << n;
      EXPECT_EQ(Mine(sets, 0.5, 1, n), std::vector<DocPair>{p23}) << scale << " " << n;
      if (n == 3) {
        EXPECT_TRUE(Mine(sets, 0.5, 2, n).empty()) << scale;
      }
    }
  }
}

TEST(HomogPartition, EmptySets) {
  // No sets at all, only empty sets, and empty sets among others: empty sets are in no pair and
  // count in no partition's `sets`.
  for (std::uint32_t n : {1u, 2u, 7u}) {
    for (std::uint32_t p = 0; p < n; ++p) {
      MineStats st;
      EXPECT_TRUE(Mine({}, 0.5, p, n, &st).empty());
      EXPECT_EQ(st.sets, 0u);
      EXPECT_TRUE(Mine({{}, {}, {}}, 0.5, p, n, &st).empty());
      EXPECT_EQ(st.sets, 0u);
    }
  }
  // {}, {1}, {}, {1}, {}: one pair (1, 3), J = 1; its only token has rank 0: partition 0's.
  const Sets sets = {{}, {1}, {}, {1}, {}};
  MineStats st;
  EXPECT_EQ(Mine(sets, 1.0, 0, 2, &st), (std::vector<DocPair>{{1, 3, 1, 1, 1.0}}));
  EXPECT_EQ(st.sets, 2u);
  EXPECT_TRUE(Mine(sets, 1.0, 1, 2).empty());
  ExpectUnionIsWhole(sets, 1.0, 3, "empty sets among others");
}

// Strings are numbered by byte order ("apple" < "banana" < "cherry"), whatever order they first appear
// in, so two workers that list the same documents' strings differently agree on ids, hence on ranks and
// on every pair's partition.
TEST(HomogPartition, InternSetsNumbersStringsByByteOrder) {
  const std::vector<std::vector<std::string>> a = {{"cherry", "apple"}, {"banana", "apple"}, {}};
  const std::vector<std::vector<std::string>> b = {{"apple", "cherry"}, {"apple", "banana", "banana"}, {}};
  EXPECT_EQ(InternSets(a), (Sets{{2, 0}, {1, 0}, {}}));
  EXPECT_EQ(InternSets(b), (Sets{{0, 2}, {0, 1, 1}, {}}));
  for (std::uint32_t p = 0; p < 3; ++p) EXPECT_EQ(Mine(InternSets(a), 0.3, p, 3), Mine(InternSets(b), 0.3, p, 3));
  EXPECT_TRUE(InternSets(std::vector<std::vector<std::string>>{}).empty());
}

TEST(HomogPartition, BadPartitionsAreErrors) {
  const Sets sets = {{1, 2}, {1, 2}};
  for (auto [p, n] : {std::pair{0u, 0u}, {3u, 3u}, {7u, 2u}, {4294967295u, 4294967295u}}) {
    auto r = MinePairs(sets, 0.5, nullptr, Partition{p, n});
    ASSERT_FALSE(r.ok()) << p << " of " << n;
    EXPECT_EQ(r.error().message, "pair mining: partition " + std::to_string(p) + " of " + std::to_string(n) +
                                     " is out of range (expected 0 <= index < count)");
    EXPECT_EQ(r.error().kind, ErrorKind::kUsage);
  }
  // theta is checked as without partitions.
  auto r = MinePairs(sets, 0.0, nullptr, Partition{0, 2});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "pair mining: theta must be in (0, 1] (got 0)");
  // The largest count is allowed.
  EXPECT_TRUE(MinePairs(sets, 0.5, nullptr, Partition{4294967294u, 4294967295u}).ok());
}

// Random sets over small vocabularies (many ties in df and in J), dense and sparse ids, 14 thetas.
TEST(HomogPartition, UnionEqualsWholeRandomized) {
  std::mt19937 rng(20261126);
  for (int round = 0; round < 120; ++round) {
    const int n = 1 + static_cast<int>(rng() % 50);
    const int vocab = 2 + static_cast<int>(rng() % 20);
    const int max_size = 1 + static_cast<int>(rng() % 8);
    Sets sets(n);
    for (auto& s : sets) {
      const int k = static_cast<int>(rng() % (max_size + 1));
      for (int i = 0; i < k; ++i) s.push_back(static_cast<std::uint32_t>(rng() % vocab));
    }
    Sets sparse = sets;
    for (auto& s : sparse) {
      for (auto& t : s) t = t * 40000003u + 7u;
    }
    for (double theta : {0.1, 0.2, 0.25, 0.3, 1.0 / 3.0, 0.4, 0.5, 0.6, 2.0 / 3.0, 0.7, 0.75, 0.8, 0.9, 1.0}) {
      for (std::uint32_t parts : {2u, 3u, 5u}) {
        const std::string what = "round " + std::to_string(round) + " theta " + std::to_string(theta);
        ExpectUnionIsWhole(sets, theta, parts, what);
        ExpectUnionIsWhole(sparse, theta, parts, what + " sparse ids");
      }
    }
  }
}

// The claim on real data: KP20k's 20,000 gold sets at theta 0.5, as normalized strings (the study's
// default) and as stem keys, for 1, 2, 3 and 7 partitions. As normalized strings the single process
// finds 549 pairs (docs/homogeneity.md; tests/data/homog/peer_pairs.py gives the same with exact
// fractions).
TEST(HomogPartition, Kp20kUnionEqualsWhole) {
  const std::string dir = std::string(KPLAB_SHARED_DATA) + "/kpg_testsets_meng2017/kp20k";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no ../shared/data";
  auto ds = ImportDataset(dir);
  ASSERT_TRUE(ds.ok()) << ds.error().message;
  auto corpus = BuildCorpus(*ds, nullptr, *FindProfile("kplab"));
  ASSERT_TRUE(corpus.ok()) << corpus.error().message;
  for (bool stem : {false, true}) {
    const Sets sets = GoldSets(*corpus, stem);
    ASSERT_EQ(sets.size(), 20000u);
    auto whole = MinePairs(sets, 0.5);
    ASSERT_TRUE(whole.ok());
    if (!stem) {
      EXPECT_EQ(whole->size(), 549u);
    }
    for (std::uint32_t n : {1u, 2u, 3u, 7u}) {
      ExpectUnionIsWhole(sets, 0.5, n, stem ? "KP20k stem keys" : "KP20k normalized strings");
      // Every partition of 2+ holds some of the pairs: ownership is spread, not all in one place.
      if (n > 1 && !stem) {
        for (std::uint32_t p = 0; p < n; ++p) EXPECT_FALSE(Mine(sets, 0.5, p, n).empty()) << p << " of " << n;
      }
    }
  }
}

}  // namespace
}  // namespace kplab::homog
