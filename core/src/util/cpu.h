// What the processor can do, asked once as the program starts: the code paths that use an instruction
// set beyond x86-64's baseline (compiled with [[gnu::target]]) are chosen by these flags. A flag read at
// each call costs one load; a function-local static would add a guard check and a cold path to every
// caller.
#pragma once

namespace kplab {

#if defined(__x86_64__)
inline const bool kCpuHasAvx2 = [] {
  __builtin_cpu_init();  // a static initializer may run before libgcc's own
  return __builtin_cpu_supports("avx2") != 0;
}();
#else
inline constexpr bool kCpuHasAvx2 = false;
#endif

}  // namespace kplab
