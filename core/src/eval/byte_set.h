// The set of a string's bytes modulo 64, as the bits of a word (bit c & 63 for each byte c): the
// kernels' filter for substrings (a string within another has its set within the other's), made for
// every key of a document by the rprec kernel (eval/kernels.cc).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "../util/cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kplab::eval_internal {

inline std::uint64_t ByteSetScalar(std::string_view s) {
  std::uint64_t set = 0;
  for (unsigned char c : s) set |= std::uint64_t{1} << (c & 63);
  return set;
}

#if defined(__x86_64__)
// One step of ByteSetAvx2: the eight bytes of w into the set's lanes.
[[gnu::target("avx2"), gnu::always_inline]] inline __m256i ByteSetStepAvx2(__m256i acc, long long w) {
  const __m256i one = _mm256_set1_epi64x(1), low6 = _mm256_set1_epi64x(63);
  const __m128i bytes = _mm_cvtsi64_si128(w);
  const __m256i first = _mm256_cvtepu8_epi64(bytes);                      // bytes 0-3
  const __m256i second = _mm256_cvtepu8_epi64(_mm_srli_si128(bytes, 4));  // bytes 4-7
  acc = _mm256_or_si256(acc, _mm256_sllv_epi64(one, _mm256_and_si256(first, low6)));
  return _mm256_or_si256(acc, _mm256_sllv_epi64(one, _mm256_and_si256(second, low6)));
}

// Eight bytes at a time where the processor has AVX2 (ByteSet asks): each byte widened to a 64-bit lane
// and 1 shifted left by its low six bits (a variable shift per lane), the lanes OR-ed together. A set
// does not mind a byte counted twice, so the last eight bytes (a string of 8 or more) or the first and
// last four (4 to 7) are one more step instead of a byte-by-byte tail.
[[gnu::target("avx2")]] inline std::uint64_t ByteSetAvx2(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  __m256i acc = _mm256_setzero_si256();
  if (n < 4) {
    std::uint64_t set = 0;
    for (std::size_t i = 0; i < n; ++i) set |= std::uint64_t{1} << (p[i] & 63);
    return set;
  }
  if (n < 8) {
    std::uint32_t head, tail;
    std::memcpy(&head, p, 4);
    std::memcpy(&tail, p + n - 4, 4);
    acc = ByteSetStepAvx2(acc, static_cast<long long>(head | static_cast<std::uint64_t>(tail) << 32));
  } else {
    for (std::size_t i = 0; i + 8 <= n; i += 8) {
      long long w;
      std::memcpy(&w, p + i, 8);
      acc = ByteSetStepAvx2(acc, w);
    }
    if (n % 8 != 0) {
      long long w;
      std::memcpy(&w, p + n - 8, 8);
      acc = ByteSetStepAvx2(acc, w);
    }
  }
  const __m128i x = _mm_or_si128(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
  return static_cast<std::uint64_t>(_mm_cvtsi128_si64(x)) | static_cast<std::uint64_t>(_mm_extract_epi64(x, 1));
}
#endif

// ByteSetScalar's set, eight bytes at a time where the processor has AVX2.
inline std::uint64_t ByteSet(std::string_view s) {
#if defined(__x86_64__)
  if (kCpuHasAvx2) return ByteSetAvx2(s);
#endif
  return ByteSetScalar(s);
}

}  // namespace kplab::eval_internal
