// The corpus builder's token table (core/src/eval/token_table.h) and the documents it reads as views
// into the files' bytes (LineDocuments::View). The table is attacked with hostile keys (every token
// with the same hash, prefixes of each other, NUL bytes, an empty token, a token of 100,000 bytes);
// the stems that come out of it are checked against nltk 3.8's own (tests/data/porter, written by
// scripts/gen_porter_golden.py); the line reader's views against hand-written documents and against
// the general importers.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "../../core/src/eval/byte_set.h"
#include "../../core/src/eval/piece_store.h"
#include "../../core/src/eval/ref_lanes.h"
#include "../../core/src/eval/slot_table.h"
#include "../../core/src/eval/token_table.h"
#include "../../core/src/io/io_internal.h"
#include "kplab/corpus.h"
#include "kplab/io.h"
#include "kplab/text.h"
#include "porter_golden.h"
#include "temp_dir.h"

namespace kplab {
namespace {

using eval_internal::SameBytes;
using eval_internal::TokenTable;

// SameBytes against libc's memcmp for every length up to 40, with a difference at each position.
// A phrase's block (PhraseArena::PhraseBlock, Phrase::set_block): its token ids, its stem ids and its
// surface, read back through the one pointer the phrase keeps, for blocks of every shape (no ids, no
// surface, neither) and across many 256 KiB chunks (a block never straddles two).
TEST(PhraseBlocks, IdsThenSurfaceReadBackWhereverTheBlockFalls) {
  PhraseArena arena;
  std::vector<Phrase> phrases(200000);
  std::vector<std::string> surfaces(phrases.size());
  for (std::size_t i = 0; i < phrases.size(); ++i) {
    const std::size_t n = i % 4;                     // 0 to 3 tokens
    surfaces[i] = std::string(i % 7, 'a' + i % 26);  // 0 to 6 bytes, "" every seventh
    const std::span<TokenId> ids = arena.PhraseBlock(2 * n, surfaces[i]);
    for (std::size_t k = 0; k < 2 * n; ++k) ids[k] = static_cast<TokenId>(i * 10 + k);
    phrases[i].set_block(ids, surfaces[i].size());
  }
  for (std::size_t i = 0; i < phrases.size(); ++i) {
    const Phrase& p = phrases[i];
    const std::size_t n = i % 4;
    ASSERT_EQ(p.surface(), surfaces[i]) << i;
    ASSERT_EQ(p.tokens().size(), n) << i;
    for (std::size_t k = 0; k < n; ++k) {
      ASSERT_EQ(p.tokens()[k], i * 10 + k) << i;     // token k
      ASSERT_EQ(p.stems()[k], i * 10 + n + k) << i;  // its stem, n ids later
    }
  }
  // Twenty-four bytes a phrase: a million documents hold some four million.
  static_assert(sizeof(Phrase) == 24);
}

TEST(TokenTable, SameBytesIsMemcmp) {
  for (std::size_t n = 0; n <= 40; ++n) {
    std::string a(n, 'x'), b(n, 'x');
    for (std::size_t k = 0; k < n; ++k) a[k] = b[k] = static_cast<char>('a' + k % 26);
    EXPECT_TRUE(SameBytes(a.data(), b.data(), n)) << n;
    for (std::size_t k = 0; k < n; ++k) {
      std::string c = b;
      c[k] = '\0';  // a NUL is a byte like any other
      EXPECT_EQ(SameBytes(a.data(), c.data(), n), std::memcmp(a.data(), c.data(), n) == 0) << n << " " << k;
      EXPECT_FALSE(SameBytes(a.data(), c.data(), n)) << n << " " << k;
    }
  }
}

// Every token hashed alike (the worst a hash can do): each distinct byte string still gets its own
// entry, found again by its bytes, across the table's growth from 1,024 slots.
TEST(TokenTable, EveryTokenWithTheSameHash) {
  std::vector<std::string> tokens = {"",
                                     "a",
                                     "aa",
                                     "aaa",
                                     "ab",
                                     "ba",
                                     std::string("a\0b", 3),
                                     std::string("a\0c", 3),
                                     std::string(1, '\0'),
                                     std::string(2, '\0')};
  for (int i = 0; i < 3000; ++i) tokens.push_back("t" + std::to_string(i));
  tokens.push_back(std::string(100000, 'z'));  // longer than any buffer the builder keeps
  tokens.push_back(std::string(100000, 'z') + "y");
  TokenTable table([](std::string_view) -> std::uint64_t { return 0x4242424242424242ull; });
  auto get = [&](const std::string& t, TokenId id_if_new) {
    return table
        .Get(t, 0x4242424242424242ull,
             [&](TokenTable::Entry& e) {
               e.bytes = t.data();
               e.token = id_if_new;
             })
        .token;
  };
  for (std::size_t i = 0; i < tokens.size(); ++i) ASSERT_EQ(get(tokens[i], static_cast<TokenId>(i)), i) << i;
  EXPECT_EQ(table.size(), tokens.size());
  // Met again, in reverse order, from copies of the bytes: the first id, no new entry.
  for (std::size_t i = tokens.size(); i-- > 0;) {
    const std::string copy = tokens[i];
    ASSERT_EQ(get(copy, kNoToken), i) << i;
  }
  EXPECT_EQ(table.size(), tokens.size());
}

// The empty token given no address (an empty view's null data) still holds its entry.
TEST(TokenTable, EmptyTokenWithoutAnAddress) {
  TokenTable table([](std::string_view) -> std::uint64_t { return 7; });
  int made = 0;
  for (int k = 0; k < 3; ++k) {
    const auto& e = table.Get(std::string_view(), 7, [&](TokenTable::Entry& fresh) {
      fresh.bytes = nullptr;
      fresh.token = 5;
      ++made;
    });
    EXPECT_EQ(e.token, 5u);
  }
  EXPECT_EQ(made, 1);
  EXPECT_EQ(table.size(), 1u);
}

// The builder's piece records (core/src/eval/piece_store.h): every length from 0 to 120 bytes, across
// the inline limit, with NUL and high bytes, 20,000 records over several 256 KiB chunks. Each reads
// back its bytes and head; Same is true for an equal copy (never the record's own bytes) and false for
// every one-byte change and for one byte more or less; a long piece is kept by address.
TEST(PieceStore, RecordsReadBackAcrossTheInlineLimitAndChunks) {
  using eval_internal::PieceStore;
  std::vector<std::string> pieces;
  for (int i = 0; i < 20000; ++i) {
    std::string p(static_cast<std::size_t>(i % 121), '\0');
    for (std::size_t k = 0; k < p.size(); ++k) p[k] = static_cast<char>((i * 31 + k * 7) % 256);  // NULs, high bytes
    pieces.push_back(p);
  }
  PieceStore store;
  std::vector<std::uint32_t> index;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    PieceStore::Head head;
    head.phrase = i % 5 == 0 ? PieceStore::kDropped : static_cast<std::uint32_t>(i);
    head.stem = i % 2;
    head.dedup = static_cast<TokenId>(3 * i);
    head.flags = static_cast<std::uint8_t>(i % 8);
    index.push_back(store.Add(pieces[i], head));
  }
  EXPECT_GT(index.back(), std::uint32_t{2} << 15) << "three chunks of 2^15 units";
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    SCOPED_TRACE(i);
    const std::string& p = pieces[i];
    ASSERT_EQ(store.View(index[i]), p);
    const PieceStore::Head h = store.HeadOf(index[i]);
    EXPECT_EQ(h.size, p.size());
    EXPECT_EQ(h.phrase, i % 5 == 0 ? PieceStore::kDropped : i);
    EXPECT_EQ(h.stem, i % 2);
    EXPECT_EQ(h.dedup, 3 * i);
    EXPECT_EQ(h.flags, i % 8);
    EXPECT_EQ(h.external, p.size() > PieceStore::kInline ? 1 : 0);
    // A long piece is kept by address: the view is the caller's bytes; a short one is the record's.
    EXPECT_EQ(store.View(index[i]).data() == p.data(), p.size() > PieceStore::kInline && !p.empty());
    const std::string copy = p;
    ASSERT_TRUE(store.Same(index[i], copy));
    EXPECT_FALSE(store.Same(index[i], copy + "x"));
    if (!p.empty()) {
      EXPECT_FALSE(store.Same(index[i], std::string_view(copy).substr(0, p.size() - 1)));
    }
    if (i % 97 == 0) {  // every position of some of them
      for (std::size_t k = 0; k < p.size(); ++k) {
        std::string changed = p;
        changed[k] = static_cast<char>(changed[k] ^ 1);
        ASSERT_FALSE(store.Same(index[i], changed)) << k;
      }
    }
  }
}

// A cleared store (a thread's next range, design note 71) keeps its chunks and reads as a new one: the
// same pieces get a fresh store's indices, from the first chunk's memory again, and read back their own
// bytes and heads, never the records written before the clear, across more chunks than before.
TEST(PieceStore, ClearedStoreReusesItsChunksAndReadsAsNew) {
  using eval_internal::PieceStore;
  auto piece = [](int i, int salt) {
    std::string p(static_cast<std::size_t>((i * 13 + salt) % 70), 'a');
    for (std::size_t k = 0; k < p.size(); ++k) p[k] = static_cast<char>('a' + (i + salt + k) % 26);
    return p;
  };
  PieceStore store;
  for (int i = 0; i < 15000; ++i) store.Add(piece(i, 1), PieceStore::Head{});
  const std::byte* first_chunk = store.RecordAddress(0);
  store.Clear();
  PieceStore fresh;
  std::vector<std::string> pieces;
  for (int i = 0; i < 40000; ++i) pieces.push_back(piece(i, 5));  // more chunks than before the clear
  std::vector<std::uint32_t> index;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    PieceStore::Head head;
    head.phrase = static_cast<std::uint32_t>(i);
    head.flags = static_cast<std::uint8_t>(i % 8);
    index.push_back(store.Add(pieces[i], head));
    ASSERT_EQ(index.back(), fresh.Add(pieces[i], head)) << i;
  }
  EXPECT_EQ(store.RecordAddress(index[0]), first_chunk) << "the first chunk is reused";
  EXPECT_GT(index.back(), std::uint32_t{3} << 15) << "four chunks and more";
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(store.View(index[i]), pieces[i]);
    ASSERT_TRUE(store.Same(index[i], pieces[i]));
    EXPECT_EQ(store.HeadOf(index[i]).phrase, i);
    EXPECT_EQ(store.HeadOf(index[i]).flags, i % 8);
  }
}

// A cleared slot table (design note 71) keeps its size and finds none of the keys it held, at a size
// that is calloc'ed and at one that is mapped (2 MiB and up); filled again, it finds the new ones.
TEST(SlotTable, ClearedTableIsEmptyAtItsSize) {
  using eval_internal::SlotTable;
  for (std::size_t keys : {std::size_t{500}, std::size_t{400000}}) {
    SCOPED_TRACE(keys);
    SlotTable table;
    auto hash = [](std::size_t k, std::uint64_t salt) {
      return eval_internal::HashBytes(std::to_string(k * 7919 + salt));
    };
    auto fill = [&](std::uint64_t salt) {
      for (std::size_t k = 0; k < keys; ++k) {
        bool found = false;
        const std::size_t pos = table.Probe(
            hash(k, salt), [&](std::uint32_t i) { return i == k; }, &found);
        ASSERT_FALSE(found);
        table.Fill(pos, hash(k, salt), static_cast<std::uint32_t>(k));
      }
    };
    auto finds = [&](std::uint64_t salt) {
      std::size_t n = 0;
      for (std::size_t k = 0; k < keys; ++k) {
        bool found = false;
        table.Probe(
            hash(k, salt), [&](std::uint32_t i) { return i == k; }, &found);
        n += found;
      }
      return n;
    };
    fill(1);
    ASSERT_EQ(finds(1), keys);
    const std::size_t size = table.size();
    EXPECT_GE(size * sizeof(std::uint64_t), keys > 1000 ? std::size_t{2} << 20 : 0) << "mapped";
    table.Clear();
    EXPECT_EQ(table.size(), size);
    EXPECT_EQ(finds(1), 0u);
    for (std::size_t pos = 0; pos < size; ++pos) ASSERT_EQ(table.At(pos), 0u) << pos;
    fill(2);
    EXPECT_EQ(table.size(), size) << "the same keys' count does not grow it again";
    EXPECT_EQ(finds(2), keys);
    EXPECT_EQ(finds(1), 0u);
  }
}

// The rprec kernel's byte sets (eval/byte_set.h): the AVX2 path, where the processor has it, and the one
// ByteSet takes give the scalar loop's set for every length from 0 to 40 (under four bytes, four to
// seven as two overlapping words, the 8-byte steps and the overlapping last one), for bytes of all 256
// values (high bytes and NUL wrap modulo 64 like the rest), and for a string not aligned to 8 bytes.
TEST(ByteSet, EveryPathIsTheScalarLoops) {
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<unsigned char>(state >> 56);
  };
  std::string buffer(64, '\0');
  for (int round = 0; round < 200; ++round) {
    for (char& c : buffer) c = static_cast<char>(next());
    for (std::size_t len = 0; len <= 40; ++len) {
      const std::string_view s(buffer.data() + 1 + round % 7, len);
      const std::uint64_t expected = eval_internal::ByteSetScalar(s);
      ASSERT_EQ(eval_internal::ByteSet(s), expected) << len;
#if defined(__x86_64__)
      if (__builtin_cpu_supports("avx2")) {
        ASSERT_EQ(eval_internal::ByteSetAvx2(s), expected) << len;
      }
#endif
    }
  }
  // By hand: 'a' (0x61) is bit 33, ' ' bit 32, '!' (0x21) bit 33 again, 0xFF bit 63, NUL bit 0.
  EXPECT_EQ(eval_internal::ByteSet("a a a a a a a a a"), (std::uint64_t{1} << 33) | (std::uint64_t{1} << 32));
  EXPECT_EQ(eval_internal::ByteSet(std::string_view("!\xFF\0aaaaaaa", 10)),
            (std::uint64_t{1} << 33) | (std::uint64_t{1} << 63) | 1);
  EXPECT_EQ(eval_internal::ByteSet(""), 0u);
}

// The kernels' reference filters (eval/ref_lanes.h): the AVX2 rows (where the processor has them) and
// the SSE2 rows, each kind (both rows, one alone) and the dispatching Within, give the scalar loop's
// rows for every count of references from 0 to 64 (each step of eight or four and every tail), with
// counts at the signed/unsigned edges (0, 2^31 - 1, 2^31, 2^32 - 1, so that a signed compare left in
// the lanes fails) and sets drawn from a few bits (so that most pairs hold or are held, both ways);
// EqualBits the scalar loop's keys. The entries past n hold garbage that must be masked.
TEST(RefLanes, WithinIsTheScalarLoop) {
  std::uint64_t state = 0x2545F4914F6CDD1Dull;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 11;
  };
  const std::uint32_t counts[] = {0, 1, 2, 3, 0x7FFFFFFFu, 0x80000000u, 0x80000001u, 0xFFFFFFFEu, 0xFFFFFFFFu};
  auto count = [&] { return counts[next() % std::size(counts)]; };
  auto set = [&] { return (std::uint64_t{1} << (next() % 3)) * (next() % 8) | (next() % 4 == 0 ? 1ull << 63 : 0); };
  std::int32_t lanes[64 + 8];
  std::uint64_t sets[64 + 8];
  std::uint32_t keys[64 + 8];
  for (int round = 0; round < 300; ++round) {
    for (std::size_t j = 0; j < std::size(lanes); ++j) {
      lanes[j] = eval_internal::CountLane(count());
      sets[j] = set();
      keys[j] = static_cast<std::uint32_t>(next() % 4);
    }
    for (std::size_t n = 0; n <= 64; ++n) {
      const std::uint32_t c = count();
      const std::uint64_t x = set();
      const eval_internal::WithinRows want = eval_internal::WithinRowsScalar(lanes, sets, n, c, x);
      const eval_internal::WithinRows both = eval_internal::Within(lanes, sets, n, c, x);
      ASSERT_EQ(both.longer, want.longer) << n;
      ASSERT_EQ(both.shorter, want.shorter) << n;
      ASSERT_EQ(eval_internal::Within<false>(lanes, sets, n, c, x).longer, want.longer) << n;
#if defined(__SSE2__)
      ASSERT_EQ((eval_internal::WithinRowsSse2<true, true>(lanes, sets, n, c, x).shorter), want.shorter) << n;
      ASSERT_EQ((eval_internal::WithinRowsSse2<false, true>(lanes, sets, n, c, x).shorter), want.shorter) << n;
      ASSERT_EQ((eval_internal::WithinRowsSse2<true, false>(lanes, sets, n, c, x).longer), want.longer) << n;
#endif
#if defined(__x86_64__)
      if (__builtin_cpu_supports("avx2")) {
        const eval_internal::WithinRows avx2 = eval_internal::WithinRowsAvx2<true, true>(lanes, sets, n, c, x);
        ASSERT_EQ(avx2.longer, want.longer) << n;
        ASSERT_EQ(avx2.shorter, want.shorter) << n;
        ASSERT_EQ((eval_internal::WithinRowsAvx2<false, true>(lanes, sets, n, c, x).shorter), want.shorter) << n;
        ASSERT_EQ((eval_internal::WithinRowsAvx2<true, false>(lanes, sets, n, c, x).longer), want.longer) << n;
      }
#endif
      const std::uint32_t key = static_cast<std::uint32_t>(next() % 4);
      ASSERT_EQ(eval_internal::EqualBits(keys, n, key), eval_internal::EqualBitsScalar(keys, n, key)) << n;
    }
  }
  // By hand: counts 1, 2, 3, 0xFFFFFFFF with sets {0}, {0,1}, {0,1,2}, {1}; the item 2 stems {0,1}.
  // Longer and holding {0,1}: reference 2 (3 > 2, {0,1,2}); reference 3 is longer but lacks bit 0.
  // Shorter and held by {0,1}: reference 0 (1 < 2, {0}); reference 1 is as long, not shorter.
  const std::int32_t hand_lanes[8] = {eval_internal::CountLane(1), eval_internal::CountLane(2),
                                      eval_internal::CountLane(3), eval_internal::CountLane(0xFFFFFFFFu)};
  const std::uint64_t hand_sets[8] = {0b1, 0b11, 0b111, 0b10};
  const eval_internal::WithinRows hand = eval_internal::Within(hand_lanes, hand_sets, 4, 2, 0b11);
  EXPECT_EQ(hand.longer, 0b0100u);
  EXPECT_EQ(hand.shorter, 0b0001u);
  EXPECT_EQ(eval_internal::Within(hand_lanes, hand_sets, 0, 2, 0b11).longer, 0u);
}

// The substring rows' size filter (WithinSizes) with keys of 4 GiB or more, whose lanes are clamped to
// one value: the sizes need no strings behind them, so every reference longer or shorter than the item
// by its true size, with its set held or holding, must be in the row (a clamped size must never drop a
// candidate: the search decides), and below the clamp the rows are exactly the true ones.
TEST(RefLanes, ClampedSizesDropNoCandidate) {
  constexpr std::size_t kG4 = std::size_t{1} << 32;
  const std::size_t sizes[] = {0, 1, 7, kG4 - 2, kG4 - 1, kG4, kG4 + 5, kG4 + 6, std::size_t{1} << 40};
  std::uint64_t state = 99;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 11;
  };
  std::int32_t lanes[16 + 8];
  std::uint64_t sets[16 + 8];
  std::size_t true_sizes[16];
  for (int round = 0; round < 400; ++round) {
    const std::size_t n = next() % 17;
    for (std::size_t j = 0; j < 16; ++j) {
      true_sizes[j] = sizes[next() % std::size(sizes)];
      lanes[j] = eval_internal::SizeLane(true_sizes[j]);
      sets[j] = next() % 4;
    }
    const std::size_t size = sizes[next() % std::size(sizes)];
    const std::uint64_t set = next() % 4;
    std::uint64_t longer = 0, shorter = 0;  // by the true sizes
    for (std::size_t j = 0; j < n; ++j) {
      longer |= static_cast<std::uint64_t>(true_sizes[j] > size && (set & ~sets[j]) == 0) << j;
      shorter |= static_cast<std::uint64_t>(true_sizes[j] < size && (sets[j] & ~set) == 0) << j;
    }
    const eval_internal::WithinRows rows = eval_internal::WithinSizes(lanes, sets, n, size, set);
    ASSERT_EQ(rows.longer & longer, longer) << round;
    ASSERT_EQ(rows.shorter & shorter, shorter) << round;
    ASSERT_EQ(rows.longer & ~eval_internal::LowBits(n), 0u);
    bool all_below = size < eval_internal::kSizeClamp;
    for (std::size_t j = 0; j < n; ++j) all_below = all_below && true_sizes[j] < eval_internal::kSizeClamp;
    if (all_below) {
      ASSERT_EQ(rows.longer, longer) << round;
      ASSERT_EQ(rows.shorter, shorter) << round;
    }
  }
  // By hand: an item of 4 GiB + 5 bytes against references of 4 GiB + 6 and 4 GiB (both clamped to
  // the item's lane) and 7 bytes: the first is longer, the second and third shorter; none is dropped.
  const std::int32_t hand_lanes[8] = {eval_internal::SizeLane(kG4 + 6), eval_internal::SizeLane(kG4),
                                      eval_internal::SizeLane(7)};
  const std::uint64_t hand_sets[8] = {0b1, 0b1, 0b1};
  const eval_internal::WithinRows hand = eval_internal::WithinSizes(hand_lanes, hand_sets, 3, kG4 + 5, 0b1);
  EXPECT_EQ(hand.longer & 0b001u, 0b001u);
  EXPECT_EQ(hand.shorter & 0b110u, 0b110u);
}

// Reserve (the corpus builder sizes its tables for a range before its first document): a reserved
// slot table, token table or lexicon holds that many entries without growing, calloc'ed and mapped;
// past them it grows as before and finds every entry; a table that holds entries, or a lexicon that
// holds strings, is left as it is (the entries stay found, the ids stay); a smaller reservation than
// the table's size changes nothing.
TEST(SlotTable, ReservedTablesHoldThatManyWithoutGrowing) {
  using eval_internal::SlotTable;
  EXPECT_EQ(SlotTable::SlotsFor(0), 1024u);
  EXPECT_EQ(SlotTable::SlotsFor(716), 1024u);  // 716 / 1024 < 70%
  EXPECT_EQ(SlotTable::SlotsFor(717), 2048u);  // 717 / 1024 > 70%
  EXPECT_EQ(SlotTable::SlotsFor(91750), 131072u);
  for (std::size_t keys : {std::size_t{5000}, std::size_t{400000}}) {
    SCOPED_TRACE(keys);
    SlotTable table;
    table.Reserve(keys);
    const std::size_t size = table.size();
    EXPECT_EQ(size, SlotTable::SlotsFor(keys));
    auto hash = [](std::size_t k) { return eval_internal::HashBytes("k" + std::to_string(k)); };
    auto add = [&](std::size_t k) {
      bool found = false;
      const std::size_t pos = table.Probe(
          hash(k), [&](std::uint32_t i) { return i == k; }, &found);
      ASSERT_FALSE(found);
      table.Fill(pos, hash(k), static_cast<std::uint32_t>(k));
    };
    for (std::size_t k = 0; k < keys; ++k) add(k);
    EXPECT_EQ(table.size(), size) << "no growth up to the reservation";
    table.Reserve(keys * 4);  // holds entries: left as it is
    EXPECT_EQ(table.size(), size);
    for (std::size_t k = keys; k < 3 * keys; ++k) add(k);
    EXPECT_GT(table.size(), size) << "past it, it grows as before";
    for (std::size_t k = 0; k < 3 * keys; ++k) {
      bool found = false;
      table.Probe(
          hash(k), [&](std::uint32_t i) { return i == k; }, &found);
      ASSERT_TRUE(found) << k;
    }
  }
  SlotTable big(SlotTable::SlotsFor(100000));
  big.Reserve(10);  // smaller than it is: nothing
  EXPECT_EQ(big.size(), SlotTable::SlotsFor(100000));

  TokenTable tokens;
  tokens.Reserve(30000);
  std::vector<std::string> names;
  for (int i = 0; i < 30000; ++i) names.push_back("t" + std::to_string(i));
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& t = names[i];
    ASSERT_EQ(tokens
                  .Get(t, eval_internal::HashBytes(t),
                       [&](TokenTable::Entry& e) {
                         e.bytes = t.data();
                         e.token = static_cast<TokenId>(i);
                       })
                  .token,
              i);
  }
  tokens.Reserve(100000);  // holds tokens: left as it is, every one still found
  for (std::size_t i = 0; i < names.size(); ++i) {
    ASSERT_EQ(tokens.Get(names[i], eval_internal::HashBytes(names[i]), [](TokenTable::Entry&) { FAIL(); }).token, i);
  }

  Lexicon lex;
  lex.Reserve(50000, 50000);
  for (int i = 0; i < 60000; ++i) {
    ASSERT_EQ(lex.Intern("w" + std::to_string(i)), static_cast<TokenId>(2 * i));
    ASSERT_EQ(lex.Intern("p " + std::to_string(i)), static_cast<TokenId>(2 * i + 1));
  }
  lex.Reserve(1000000, 1000000);  // holds strings: its index stays, ids and look-ups as they were
  EXPECT_EQ(*lex.Find("w59999"), 2u * 59999);
  EXPECT_EQ(*lex.Find("p 0"), 1u);
  EXPECT_EQ(lex.Intern("w0"), 0u);
}

// nltk 3.8's stems (mode nltk) of the lower-case ASCII words of the dictionary golden file.
std::vector<std::pair<std::string, std::string>> NltkStems() {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string path = std::string(KPLAB_TEST_DATA) + "/porter/dict.tsv.gz";
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return out;
  std::vector<char> buf(1 << 16);
  while (gzgets(f, buf.data(), static_cast<int>(buf.size())) != nullptr) {
    std::string_view line(buf.data());
    if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
    const std::size_t tab = line.find('\t');
    const std::string_view word = line.substr(0, tab);
    if (word.empty() || !std::all_of(word.begin(), word.end(), [](char c) { return c >= 'a' && c <= 'z'; })) continue;
    const std::string_view rest = line.substr(tab + 1);
    out.emplace_back(word, test::DecodeStemCode(word, rest.substr(0, rest.find('\t'))));
  }
  gzclose(f);
  return out;
}

// The 247,033 lower-case dictionary words through the builder's token table (grown from 1,024 slots
// to 512K, with the collisions of its probes): every phrase's stems are nltk's, on one thread and on
// three (three builders and tables, their lexicons merged), and the key is the stems joined by ' '.
TEST(TokenTable, CorpusStemsAreNltks) {
  const auto words = NltkStems();
  ASSERT_GT(words.size(), 100000u) << "tests/data/porter/dict.tsv.gz";
  RawDataset ds;
  ds.path = ds.name = "dict";
  RawPredictions preds;
  preds.path = "dict-preds";
  for (std::size_t i = 0; i < words.size(); i += 40) {
    RawDoc d;
    d.id = std::to_string(i);
    d.has_text = false;
    RawPrediction p;
    for (std::size_t k = i; k < std::min(i + 40, words.size()); ++k) {
      d.refs.push_back({words[k].first});
      // A two-word phrase of this word and the next: the key joins two stems.
      p.phrases.push_back(words[k].first + " " + words[(k + 1) % words.size()].first);
    }
    ds.docs.push_back(std::move(d));
    preds.docs.push_back(std::move(p));
  }
  for (int threads : {1, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    auto c = BuildCorpus(ds, &preds, *FindProfile("kplab"), threads);
    ASSERT_TRUE(c.ok()) << c.error().message;
    std::size_t checked = 0;
    for (std::size_t d = 0; d < c->docs.size(); ++d) {
      const Document& doc = c->docs[d];
      // References dedup by key: two words with one stem keep the first; walk the list before dedup.
      const auto refs = doc.ref_view_dups();
      ASSERT_EQ(refs.size(), std::min<std::size_t>(40, words.size() - d * 40));
      for (std::size_t k = 0; k < refs.size(); ++k) {
        const auto& [word, stem] = words[d * 40 + k];
        ASSERT_EQ(refs[k]->surface(), word);
        ASSERT_EQ(refs[k]->stems().size(), 1u);
        ASSERT_EQ(c->Str(refs[k]->stems()[0]), stem) << word;
        ASSERT_EQ(c->Str(refs[k]->key()), stem) << word;
        ++checked;
      }
      for (const Keyphrase* p : doc.pred_view_dups()) {
        const auto stems = p->stems();
        ASSERT_EQ(stems.size(), 2u);
        ASSERT_EQ(c->Str(p->key()), std::string(c->Str(stems[0])) + " " + std::string(c->Str(stems[1])));
      }
    }
    EXPECT_EQ(checked, words.size());
  }
}

std::string WriteTokenFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::vector<std::string> SurfacesOf(std::span<const Keyphrase> kps) {
  std::vector<std::string> out;
  for (const auto& k : kps) out.emplace_back(k.surface());
  return out;
}

// Keyphrase and prediction lines read as views into the files (LineDocuments, the path `kplab eval`
// takes for Meng-2017 lines): files without a final newline, a NUL byte inside a keyphrase, a token
// of 100,000 bytes, empty pieces, "<peos>" and "<unk>", a repeat. Checked against the documents
// written out by hand, and the same corpus as the general importers give.
TEST(LineViews, HostileLinesAsWrittenOut) {
  test::TempDir dir;
  const std::string nul("x\0y", 3);
  const std::string huge(100000, 'q');
  // Two documents; the keys file and the predictions file both end without a newline.
  WriteTokenFile(dir / "h_allkeywords.txt", "Neural Networks;;" + nul + ";" + huge + "\ngraph;graphs ");
  WriteTokenFile(dir / "h_context.txt", "neural networks and " + nul + " <eos> the body\nno separator here");
  const std::string p =
      WriteTokenFile(dir / "p.txt", "neural network;<peos>;<unk> thing;" + nul + ";neural networks;" + huge + "\ngraph;;");
  auto lines = LineDocuments::Open(dir.path(), {}, p);
  ASSERT_TRUE(lines.ok()) << lines.error().message;
  auto c = BuildCorpus(std::move(*lines), *FindProfile("kplab"), 1);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->docs.size(), 2u);
  const Document& d = c->docs[0];
  EXPECT_EQ(d.id, "1");
  // The empty reference is dropped; "x\0y" is one token (NUL is not whitespace).
  EXPECT_EQ(SurfacesOf(d.refs), (std::vector<std::string>{"neural networks", nul, huge}));
  EXPECT_EQ(c->Str(d.refs[0].key()), "neural network");
  ASSERT_EQ(d.refs[1].tokens().size(), 1u);
  EXPECT_EQ(c->Str(d.refs[1].tokens()[0]), nul);
  EXPECT_EQ(c->Str(d.refs[2].key()), huge);  // Porter leaves a word without a vowel alone
  EXPECT_TRUE(d.refs[0].present());
  EXPECT_TRUE(d.refs[1].present());
  EXPECT_FALSE(d.refs[2].present());
  // "<peos>" dropped (what follows is after it), "<unk> thing" invalid, "neural networks" a repeat.
  EXPECT_EQ(SurfacesOf(d.preds), (std::vector<std::string>{"neural network", nul, huge}));
  EXPECT_EQ(d.n_pred_pieces, 6);
  EXPECT_EQ(d.n_pred_invalid, 1);
  EXPECT_EQ(d.n_pred_dups(), 1);
  EXPECT_FALSE(d.preds[0].after_peos());
  EXPECT_TRUE(d.preds[1].after_peos());
  const Document& e = c->docs[1];
  EXPECT_EQ(e.id, "2");
  // "graph" and "graphs " share the key "graph": the second is a repeat (its trailing space stripped).
  EXPECT_EQ(SurfacesOf(e.refs), (std::vector<std::string>{"graph"}));
  EXPECT_EQ(SurfacesOf(e.refs_before_dedup()), (std::vector<std::string>{"graph", "graphs"}));
  EXPECT_EQ(SurfacesOf(e.preds), (std::vector<std::string>{"graph"}));
  EXPECT_EQ(e.n_pred_pieces, 3);  // "graph;;" is three pieces, two of them empty
  EXPECT_FALSE(e.refs[0].present());
  // The general importers read the same documents.
  auto ds = ImportDataset(dir.path());
  ASSERT_TRUE(ds.ok()) << ds.error().message;
  auto pr = ImportPredictions(p);
  ASSERT_TRUE(pr.ok()) << pr.error().message;
  auto al = AlignPredictions(*ds, std::move(*pr));
  ASSERT_TRUE(al.ok()) << al.error().message;
  auto g = BuildCorpus(*ds, &*al, *FindProfile("kplab"), 1);
  ASSERT_TRUE(g.ok()) << g.error().message;
  ASSERT_EQ(g->lex.size(), c->lex.size());
  for (TokenId id = 0; id < c->lex.size(); ++id) EXPECT_EQ(g->lex.Str(id), c->lex.Str(id)) << id;
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(SurfacesOf(g->docs[i].refs), SurfacesOf(c->docs[i].refs));
    EXPECT_EQ(SurfacesOf(g->docs[i].preds), SurfacesOf(c->docs[i].preds));
  }
}

// Calls check on every string of up to 9 bytes from the four-byte alphabet, then on n_random strings
// of up to max_random bytes, each byte byte(next) for next() a xorshift64 from seed (the same strings on
// every run); stops at the first string check refuses, naming it.
template <class Check, class Byte>
void ExpectOnShortAndRandomStrings(const char (&alphabet)[4], int n_random, std::size_t max_random, std::uint64_t seed,
                                   Byte byte, Check check) {
  for (std::size_t len = 0; len <= 9; ++len) {
    std::size_t count = 1;
    for (std::size_t k = 0; k < len; ++k) count *= 4;
    for (std::size_t code = 0; code < count; ++code) {
      std::string s(len, ' ');
      for (std::size_t k = 0, c = code; k < len; ++k, c /= 4) s[k] = alphabet[c % 4];
      ASSERT_TRUE(check(s)) << "'" << s << "'";
    }
  }
  std::uint64_t x = seed;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int r = 0; r < n_random; ++r) {
    std::string s(next() % (max_random + 1), ' ');
    for (char& c : s) c = byte(next);
    ASSERT_TRUE(check(s)) << "'" << s << "'";
  }
}

// SplitChar (every ';' line split, 16 and 8 bytes at a time) against string_view::find's split, over
// every string of up to 9 bytes from an alphabet of the separator, the byte one above it (which the
// word trick can falsely mark after a separator), a letter and a byte with the high bit set, and
// 100,000 random strings of up to 80 bytes from it, so that separators fall at each position of the
// 16- and 8-byte blocks, across them and in the tail.
TEST(LineViews, SplitCharIsFindsSplit) {
  auto check = [](const std::string& s, char sep) {
    std::vector<std::string_view> want, got;
    for (std::size_t start = 0;;) {
      const std::size_t pos = std::string_view(s).find(sep, start);
      want.push_back(std::string_view(s).substr(start, pos == std::string_view::npos ? pos : pos - start));
      if (pos == std::string_view::npos) break;
      start = pos + 1;
    }
    io_internal::SplitChar(s, sep, got);
    return got == want;
  };
  for (const char sep : {';', '\n'}) {
    const char alphabet[] = {sep, static_cast<char>(sep + 1), 'a', static_cast<char>(sep | 0x80)};
    ExpectOnShortAndRandomStrings(
        alphabet, 100000, 80, 88172645463325252ull, [&](auto& next) { return alphabet[next() % 4]; },
        [&](const std::string& s) { return check(s, sep); });
  }
}

// LineIndex (one pass, 16 bytes at a time) against the lines as a line-by-line reader finds them
// (each line's start, LF-terminated, a final LF starting no line; At strips one CR before an LF), over
// every text of up to 9 bytes from LF, CR, a letter and a high-bit byte, and 20,000 random texts of up
// to 100 bytes, so that line ends fall at each position of a 16-byte block, across blocks and in the tail.
TEST(LineViews, LineIndexIsLineByLine) {
  auto check = [](const std::string& s) {
    std::vector<std::string_view> want;
    for (std::size_t start = 0; start < s.size();) {
      const std::size_t end = std::min(s.find('\n', start), s.size());
      std::string_view line = std::string_view(s).substr(start, end - start);
      if (end < s.size() && !line.empty() && line.back() == '\r') line.remove_suffix(1);
      want.push_back(line);
      start = end + 1;
    }
    const io_internal::LineIndex index(s);
    std::vector<std::string_view> got;
    for (std::size_t i = 0; i < index.size(); ++i) got.push_back(index.At(s, i));
    return got == want;
  };
  const char alphabet[] = {'\n', '\r', 'a', static_cast<char>(0xC3)};
  ExpectOnShortAndRandomStrings(
      alphabet, 20000, 100, 2463534242ull, [&](auto& next) { return next() % 5 == 0 ? alphabet[next() % 4] : 'a'; },
      check);
}

// A document's rare lists (DocumentExtra): the references before dedup (a reference line with a repeat)
// and the whole sequence's log-probabilities (a "tokens" file), each alone, both, or neither, in turn
// over 40 documents built on 1, 2 and 3 threads, merged and per range. Written out by hand: a document
// with neither has no extra at all (the memory the split saves), the others read back what was given.
TEST(DocumentExtras, EachListAloneBothOrNeitherOnEveryThreadCount) {
  RawDataset ds;
  ds.path = ds.name = "extras";
  RawPredictions preds;
  preds.path = "extras-preds";
  for (int d = 0; d < 40; ++d) {
    RawDoc doc;
    doc.id = std::to_string(d);
    const bool repeat = d % 4 == 1 || d % 4 == 3, logprobs = d % 4 == 2 || d % 4 == 3;
    doc.refs = {{"graph theory"}, {"tree " + std::to_string(d)}};
    if (repeat) doc.refs.push_back({"graphs theory"});  // stems to "graph theori", the first one's key
    RawPrediction p;
    p.phrases = {"graph theory", "forest"};
    if (logprobs) p.sequence_logprobs = {-0.5, -0.25 * d, -2.0};
    ds.docs.push_back(std::move(doc));
    preds.docs.push_back(std::move(p));
  }
  for (int threads : {1, 2, 3}) {
    for (PhraseIds ids : {PhraseIds::kCorpus, PhraseIds::kPerRange}) {
      SCOPED_TRACE(std::to_string(threads) + (ids == PhraseIds::kCorpus ? " threads, merged" : " threads, per range"));
      auto c = BuildCorpus(ds, &preds, *FindProfile("kplab"), threads, [ids] { return ids; });
      ASSERT_TRUE(c.ok()) << c.error().message;
      for (int d = 0; d < 40; ++d) {
        const Document& doc = c->docs[static_cast<std::size_t>(d)];
        const bool repeat = d % 4 == 1 || d % 4 == 3, logprobs = d % 4 == 2 || d % 4 == 3;
        EXPECT_EQ(doc.extra != nullptr, repeat || logprobs) << d;
        EXPECT_EQ(SurfacesOf(doc.refs), (std::vector<std::string>{"graph theory", "tree " + std::to_string(d)})) << d;
        if (repeat) {
          EXPECT_EQ(SurfacesOf(doc.refs_before_dedup()),
                    (std::vector<std::string>{"graph theory", "tree " + std::to_string(d), "graphs theory"}))
              << d;
          EXPECT_EQ(doc.ref_view_dups().size(), 3u) << d;
        } else {
          EXPECT_TRUE(doc.refs_before_dedup().empty()) << d;
          EXPECT_EQ(doc.ref_view_dups().size(), 2u) << d;
        }
        if (logprobs) {
          ASSERT_EQ(doc.sequence_logprobs().size(), 3u) << d;
          EXPECT_EQ(doc.sequence_logprobs()[0], -0.5) << d;
          EXPECT_EQ(doc.sequence_logprobs()[1], -0.25 * d) << d;
          EXPECT_EQ(doc.sequence_logprobs()[2], -2.0) << d;
        } else {
          EXPECT_TRUE(doc.sequence_logprobs().empty()) << d;
        }
      }
    }
  }
}

// Dedup (first wins) over lists longer than the builder's small set (64 items, then a hash set), with
// repeats before and after the hand-over, across many documents (the set's generations): written
// out by hand. Every third document has no repeat, so the repeats' lists of a range (one array, each
// document's run from where it begins) skip documents; built on 1, 2, 3 and 8 threads, with phrase ids
// merged and per range, so runs start in every range and at range boundaries.
TEST(LineViews, DedupBeyondTheSmallSet) {
  RawDataset ds;
  ds.path = ds.name = "many";
  RawPredictions preds;
  preds.path = "many-preds";
  auto repeats = [](int d) { return d % 3 != 2; };
  for (int d = 0; d < 300; ++d) {
    RawDoc doc;
    doc.id = std::to_string(d);
    doc.has_text = false;
    RawPrediction p;
    // 100 distinct phrases, then repeats of the 1st, the 64th, the 65th and the 100th, and one new.
    for (int k = 0; k < 100; ++k) p.phrases.push_back("w" + std::to_string((d + k) % 150));
    if (repeats(d)) {
      for (int k : {0, 63, 64, 99}) p.phrases.push_back("w" + std::to_string((d + k) % 150));
    }
    p.phrases.push_back("new" + std::to_string(d));
    for (int k = 0; k < 70; ++k) doc.refs.push_back({"r" + std::to_string(k % 66)});
    ds.docs.push_back(std::move(doc));
    preds.docs.push_back(std::move(p));
  }
  for (int threads : {1, 2, 3, 8}) {
    for (PhraseIds ids : {PhraseIds::kCorpus, PhraseIds::kPerRange}) {
      SCOPED_TRACE(std::to_string(threads) + (ids == PhraseIds::kCorpus ? " threads, merged" : " threads, per range"));
      auto c = BuildCorpus(ds, &preds, *FindProfile("kplab"), threads, [ids] { return ids; });
      ASSERT_TRUE(c.ok()) << c.error().message;
      for (int d = 0; d < 300; ++d) {
        const Document& doc = c->docs[static_cast<std::size_t>(d)];
        ASSERT_EQ(doc.preds.size(), 101u) << d;
        for (int k = 0; k < 100; ++k)
          ASSERT_EQ(doc.preds[static_cast<std::size_t>(k)].surface(), "w" + std::to_string((d + k) % 150));
        EXPECT_EQ(doc.preds[100].surface(), "new" + std::to_string(d));
        ASSERT_EQ(doc.refs.size(), 66u);
        EXPECT_EQ(doc.refs_before_dedup().size(), 70u);
        if (!repeats(d)) {
          EXPECT_EQ(doc.n_pred_dups(), 0) << d;
          EXPECT_TRUE(doc.pred_view_dups().empty()) << d;
          continue;
        }
        EXPECT_EQ(doc.n_pred_dups(), 4) << d;
        // The kept pieces in order, the repeats pointing at their first occurrences (0, 63, 64, 99),
        // then the new one.
        const KeyphraseList dups = doc.pred_view_dups();
        ASSERT_EQ(dups.size(), 105u) << d;
        for (std::size_t k = 0; k < 100; ++k) ASSERT_EQ(dups[k], &doc.preds[k]) << d;
        EXPECT_EQ(dups[100], &doc.preds[0]) << d;
        EXPECT_EQ(dups[101], &doc.preds[63]) << d;
        EXPECT_EQ(dups[102], &doc.preds[64]) << d;
        EXPECT_EQ(dups[103], &doc.preds[99]) << d;
        EXPECT_EQ(dups[104], &doc.preds[100]) << d;
      }
    }
  }
}

// A new phrase's ASCII tokens (split eight bytes at a time, the last 1-7 bytes as the word that ends
// the surface) are the general SplitWhitespace's (Python's str.split(), kplab/text.h) of its surface,
// for 20,000 random pieces of up to 40 bytes of letters, spaces, tabs, the separators \x1c-\x1f
// (whitespace to Python), control bytes that are not (\x01, \x1b) and '!' (0x21, the first byte
// above the word trick's bound).
TEST(LineViews, AsciiTokensAreStrSplit) {
  const char alphabet[] = {'a', 'b', ' ', '\t', '\x1c', '\x1f', '\x01', '\x1b', '!'};
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  RawDataset ds;
  ds.path = ds.name = "ascii";
  RawPredictions preds;
  preds.path = "ascii-preds";
  for (int d = 0; d < 200; ++d) {
    RawDoc doc;
    doc.id = std::to_string(d);
    doc.has_text = false;
    RawPrediction p;
    for (int k = 0; k < 100; ++k) {
      std::string piece(1 + next() % 40, ' ');
      for (char& c : piece) c = alphabet[next() % std::size(alphabet)];
      p.phrases.push_back(piece);
    }
    ds.docs.push_back(std::move(doc));
    preds.docs.push_back(std::move(p));
  }
  auto c = BuildCorpus(ds, &preds, *FindProfile("kplab"), 1);
  ASSERT_TRUE(c.ok()) << c.error().message;
  std::size_t checked = 0;
  for (const Phrase& ph : c->phrases) {
    std::vector<std::string_view> got;
    for (TokenId t : ph.tokens()) got.push_back(c->Str(t));
    const std::string surface(ph.surface());
    ASSERT_EQ(got, SplitWhitespace(surface)) << "'" << surface << "'";
    ++checked;
  }
  EXPECT_GT(checked, 10000u);
}

// View gives Read's fields without the copies, over every document of a pair whose lines end with
// and without a newline.
TEST(LineViews, ViewIsReadWithoutCopies) {
  test::TempDir dir;
  WriteTokenFile(dir / "v_allkeywords.txt", "a;b\n;\nc");
  WriteTokenFile(dir / "v_context.txt", "t <eos> b\n<eos>\nno sep");
  const std::string p = WriteTokenFile(dir / "p.txt", "x;y\n\nz;");
  auto docs = LineDocuments::Open(dir.path(), {}, p);
  ASSERT_TRUE(docs.ok()) << docs.error().message;
  ASSERT_EQ(docs->size(), 3u);
  RawDoc d;
  RawPrediction r;
  LineDocuments::Lines v;
  for (std::size_t i = 0; i < 3; ++i) {
    docs->Read(i, d, r);
    docs->View(i, v);
    EXPECT_EQ(v.has_text, d.has_text);
    EXPECT_EQ(v.title, d.title);
    EXPECT_EQ(v.body, d.body);
    EXPECT_EQ(v.separator, d.separator);
    ASSERT_EQ(v.refs.size(), d.refs.size());
    for (std::size_t k = 0; k < v.refs.size(); ++k)
      EXPECT_EQ(std::vector<std::string>{std::string(v.refs[k])}, d.refs[k]);
    EXPECT_EQ(StringList(v.predictions.begin(), v.predictions.end()), r.phrases);
  }
  docs->View(1, v);
  EXPECT_EQ(v.title, "");
  EXPECT_EQ(v.body, "");
  EXPECT_EQ(v.separator, "<eos>");
  EXPECT_EQ(v.refs, (std::vector<std::string_view>{"", ""}));
  EXPECT_EQ(v.predictions, (std::vector<std::string_view>{""}));
  docs->View(2, v);
  EXPECT_EQ(v.body, "no sep");
  EXPECT_EQ(v.refs, (std::vector<std::string_view>{"c"}));
  EXPECT_EQ(v.predictions, (std::vector<std::string_view>{"z", ""}));
}

}  // namespace
}  // namespace kplab
