// The kernels' filters over one document's references (eval/kernels.cc), as bits over the references
// (bit j: reference j): which are longer than an item (a 32-bit count) and hold its set (64 bits), and
// which are shorter and held by it, four references a step with SSE2 where it is (every x86-64), the
// scalar loop elsewhere. The arrays are the references' counts and sets side by side, readable up to n
// rounded up to four entries (what lies past n is read and masked off); n <= 64.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
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

// WithinRowsScalar's rows (only `longer` with kShorter false), four references a step with SSE2.
template <bool kShorter = true>
WithinRows Within(const std::int32_t* lanes, const std::uint64_t* sets, std::size_t n, std::uint32_t count,
                  std::uint64_t set) {
#if defined(__SSE2__)
  return WithinRowsSse2<true, kShorter>(lanes, sets, n, count, set);
#else
  return WithinRowsScalar(lanes, sets, n, count, set);
#endif
}

}  // namespace kplab::eval_internal
