// The kernels' filters over one document's references (eval/kernels.cc), as bits over the references
// (bit j: reference j): which are longer than an item (a 32-bit count) and hold its set (64 bits), and
// which are shorter and held by it, eight references a step with AVX2 where the processor has it, four
// with SSE2 where it is (every x86-64), the scalar loop elsewhere; and which have the item's key, four
// a step with SSE2. The arrays are the references' counts, sets and keys side by side, readable up to n
// rounded up to eight entries (what lies past n is read and masked off); n <= 64.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../util/cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kplab::eval_internal {

// The bits j < n of a row over n references.
inline std::uint64_t LowBits(std::size_t n) { return n >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1; }

// A 32-bit count as the lanes hold it: the sign bit flipped, so that signed compares (all SSE2 has)
// order the counts as unsigned numbers.
inline std::int32_t CountLane(std::uint32_t x) { return static_cast<std::int32_t>(x ^ 0x80000000u); }

// An item's relation to every reference as two rows: `longer`, bit j when reference j's count is above
// the item's and its set holds every bit of the item's; `shorter`, bit j when its count is below the
// item's and the item's set holds every bit of its set.
struct WithinRows {
  std::uint64_t longer = 0, shorter = 0;
};

inline WithinRows WithinRowsScalar(const std::int32_t* lanes, const std::uint64_t* sets, std::size_t n,
                                   std::uint32_t count, std::uint64_t set) {
  WithinRows rows;
  for (std::size_t j = 0; j < n; ++j) {
    rows.longer |= static_cast<std::uint64_t>((lanes[j] > CountLane(count)) & ((set & ~sets[j]) == 0)) << j;
    rows.shorter |= static_cast<std::uint64_t>((lanes[j] < CountLane(count)) & ((sets[j] & ~set) == 0)) << j;
  }
  return rows;
}

#if defined(__SSE2__)
// Four references a step, in one pass: the counts compared as 32-bit lanes; each 64-bit set's test made
// on its two 32-bit halves (the bits one set lacks of the other are zero when both halves are), the
// halves of four sets gathered into four lanes (even halves, odd halves) and AND-ed; the movemask of the
// four lanes is then four bits of the row. kLonger / kShorter: which rows are made.
template <bool kLonger, bool kShorter>
WithinRows WithinRowsSse2(const std::int32_t* lanes, const std::uint64_t* sets, std::size_t n, std::uint32_t count,
                          std::uint64_t set) {
  const __m128i c = _mm_set1_epi32(CountLane(count)), x = _mm_set1_epi64x(static_cast<long long>(set));
  const __m128i zero = _mm_setzero_si128();
  auto four = [&](__m128i lacks01, __m128i lacks23) {  // all-ones lanes where a set lacks nothing
    const __m128 z01 = _mm_castsi128_ps(_mm_cmpeq_epi32(lacks01, zero));
    const __m128 z23 = _mm_castsi128_ps(_mm_cmpeq_epi32(lacks23, zero));
    return _mm_and_ps(_mm_shuffle_ps(z01, z23, _MM_SHUFFLE(2, 0, 2, 0)),
                      _mm_shuffle_ps(z01, z23, _MM_SHUFFLE(3, 1, 3, 1)));
  };
  WithinRows rows;
  for (std::size_t j = 0; j < n; j += 4) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(lanes + j));
    const __m128i s01 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sets + j));
    const __m128i s23 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sets + j + 2));
    if constexpr (kLonger) {  // the item's bits the set lacks: ~set_j & x
      const __m128 held = four(_mm_andnot_si128(s01, x), _mm_andnot_si128(s23, x));
      const __m128 bits = _mm_and_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(v, c)), held);
      rows.longer |= static_cast<std::uint64_t>(_mm_movemask_ps(bits)) << j;
    }
    if constexpr (kShorter) {  // the set's bits the item lacks: set_j & ~x
      const __m128 held = four(_mm_andnot_si128(x, s01), _mm_andnot_si128(x, s23));
      const __m128 bits = _mm_and_ps(_mm_castsi128_ps(_mm_cmplt_epi32(v, c)), held);
      rows.shorter |= static_cast<std::uint64_t>(_mm_movemask_ps(bits)) << j;
    }
  }
  rows.longer &= LowBits(n);
  rows.shorter &= LowBits(n);
  return rows;
}
#endif

#if defined(__x86_64__)
// A bit for each of the four 64-bit lanes of v that is zero.
[[gnu::target("avx2"), gnu::always_inline]] inline unsigned ZeroLanesAvx2(__m256i v) {
  const __m256i zero = _mm256_cmpeq_epi64(v, _mm256_setzero_si256());
  return static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(zero)));
}

// Eight references a step: the counts as eight 32-bit lanes, the sets as two steps of four 64-bit lanes
// (AVX2 compares 64-bit lanes), each compare's movemask a part of the row's eight bits.
template <bool kLonger, bool kShorter>
[[gnu::target("avx2")]] WithinRows WithinRowsAvx2(const std::int32_t* lanes, const std::uint64_t* sets, std::size_t n,
                                                  std::uint32_t count, std::uint64_t set) {
  const __m256i c = _mm256_set1_epi32(CountLane(count)), x = _mm256_set1_epi64x(static_cast<long long>(set));
  WithinRows rows;
  for (std::size_t j = 0; j < n; j += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lanes + j));
    const __m256i s0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sets + j));
    const __m256i s4 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sets + j + 4));
    if constexpr (kLonger) {  // the item's bits the set lacks: ~set_j & x
      const unsigned low = ZeroLanesAvx2(_mm256_andnot_si256(s0, x)), high = ZeroLanesAvx2(_mm256_andnot_si256(s4, x));
      const unsigned within = low | high << 4;
      const unsigned longer = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(v, c))));
      rows.longer |= static_cast<std::uint64_t>(within & longer) << j;
    }
    if constexpr (kShorter) {  // the set's bits the item lacks: set_j & ~x
      const unsigned low = ZeroLanesAvx2(_mm256_andnot_si256(x, s0)), high = ZeroLanesAvx2(_mm256_andnot_si256(x, s4));
      const unsigned within = low | high << 4;
      const unsigned shorter = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(c, v))));
      rows.shorter |= static_cast<std::uint64_t>(within & shorter) << j;
    }
  }
  rows.longer &= LowBits(n);
  rows.shorter &= LowBits(n);
  return rows;
}
#endif

// Bit j for keys[j] == key (keys: the references' key ids side by side, readable up to n rounded up to
// four).
inline std::uint64_t EqualBitsScalar(const std::uint32_t* keys, std::size_t n, std::uint32_t key) {
  std::uint64_t bits = 0;
  for (std::size_t j = 0; j < n; ++j) bits |= static_cast<std::uint64_t>(keys[j] == key) << j;
  return bits;
}

#if defined(__SSE2__)
inline std::uint64_t EqualBitsSse2(const std::uint32_t* keys, std::size_t n, std::uint32_t key) {
  const __m128i k = _mm_set1_epi32(static_cast<int>(key));
  std::uint64_t bits = 0;
  for (std::size_t j = 0; j < n; j += 4) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(keys + j));
    bits |= static_cast<std::uint64_t>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(v, k)))) << j;
  }
  return bits & LowBits(n);
}
#endif

// EqualBitsScalar's bits, four keys a step with SSE2 (inlined: an AVX2 call costs more than it saves).
inline std::uint64_t EqualBits(const std::uint32_t* keys, std::size_t n, std::uint32_t key) {
#if defined(__SSE2__)
  return EqualBitsSse2(keys, n, key);
#else
  return EqualBitsScalar(keys, n, key);
#endif
}

// WithinRowsScalar's rows (only `longer` with kShorter false): eight references a step with AVX2, four
// with SSE2.
template <bool kShorter = true>
[[gnu::always_inline]] inline WithinRows Within(const std::int32_t* lanes, const std::uint64_t* sets, std::size_t n,
                                                std::uint32_t count, std::uint64_t set) {
#if defined(__x86_64__)
  if (kCpuHasAvx2) return WithinRowsAvx2<true, kShorter>(lanes, sets, n, count, set);
#endif
#if defined(__SSE2__)
  return WithinRowsSse2<true, kShorter>(lanes, sets, n, count, set);
#else
  return WithinRowsScalar(lanes, sets, n, count, set);
#endif
}

// A key's size in bytes as a lane: sizes of 4 GiB or more all as kSizeClamp, the largest count.
inline constexpr std::size_t kSizeClamp = 0xFFFFFFFF;
inline std::int32_t SizeLane(std::size_t size) {
  return CountLane(static_cast<std::uint32_t>(size < kSizeClamp ? size : kSizeClamp));
}

// Within for sizes in bytes held as SizeLane: for an item of kSizeClamp bytes or more the sizes are left
// out (a longer reference's lane would equal the item's) and the sets filter alone, so that a clamped
// size never drops a candidate; the caller's search decides.
[[gnu::cold, gnu::noinline]] inline WithinRows SetsOnlyRows(const std::uint64_t* sets, std::size_t n,
                                                            std::uint64_t set) {
  WithinRows rows;
  for (std::size_t j = 0; j < n; ++j) {
    rows.longer |= static_cast<std::uint64_t>((set & ~sets[j]) == 0) << j;
    rows.shorter |= static_cast<std::uint64_t>((sets[j] & ~set) == 0) << j;
  }
  return rows;
}
template <bool kShorter = true>
[[gnu::always_inline]] inline WithinRows WithinSizes(const std::int32_t* lanes, const std::uint64_t* sets,
                                                     std::size_t n, std::size_t size, std::uint64_t set) {
  if (size < kSizeClamp) [[likely]] {
    return Within<kShorter>(lanes, sets, n, static_cast<std::uint32_t>(size), set);
  }
  return SetsOnlyRows(sets, n, set);
}

}  // namespace kplab::eval_internal
