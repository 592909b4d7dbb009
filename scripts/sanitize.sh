#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer, in one command
# (docs/testing.md). Configures build-asan/ (RelWithDebInfo, -DKPLAB_SANITIZE=ON: mimalloc off, UBSan
# findings abort), builds it, and runs ctest in two passes:
#   1. every test whose processes are kplab's own executables (core, host, conformance, c_api), with
#      LeakSanitizer on;
#   2. the tests that load kplab into an uninstrumented interpreter (label `library`: the stock lua5.4,
#      the installed consumer, the README snippets; label `python`), with the ASan runtime preloaded
#      (it must come first in the process) and leak checks off (the interpreters' own allocations at exit
#      are not kplab's).
# The fuzz smoke run (label `fuzz`) is skipped: it builds its own sanitized clang tree.
# Usage: scripts/sanitize.sh [extra ctest arguments, e.g. -R Store]
# Environment: KPLAB_ASAN_BUILD (build directory, default build-asan), JOBS (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${KPLAB_ASAN_BUILD:-build-asan}
jobs=${JOBS:-$(nproc)}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKPLAB_SANITIZE=ON -DKPLAB_BUILD_BENCHMARKS=OFF
cmake --build "$dir" -j"$jobs"

export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
# alloc_dealloc_mismatch=0 (both passes: the second's tests run the CLI too, e.g. to compare the Python
# module's output with it): the kplab executable replaces operator new with a malloc-based one
# (host/cli/main.cc: out of memory must throw, and mimalloc's would abort) and keeps the library's
# operator delete, which frees with free: compatible, but ASan reports every such pair in every CLI
# process (each test that runs the executable failed so).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1:alloc_dealloc_mismatch=0 \
LSAN_OPTIONS=suppressions=$PWD/scripts/sanitize.lsan.supp:print_suppressions=0 \
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" -LE 'library|python|fuzz' "$@" || status=1

cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$dir/CMakeCache.txt")
asan_rt=$("$cxx" -print-file-name=libasan.so)
# libstdc++ too: a C interpreter loads it only with kplab's module, after ASan has looked for the
# __cxa_throw it intercepts ("CHECK failed: ... real___cxa_throw").
cxx_rt=$("$cxx" -print-file-name=libstdc++.so)
for rt in "$asan_rt" "$cxx_rt"; do
  if [ ! -e "$rt" ]; then
    echo "scripts/sanitize.sh:$LINENO: runtime $rt not found (from $cxx -print-file-name)" >&2
    exit 1
  fi
done
LD_PRELOAD="$asan_rt $cxx_rt" ASAN_OPTIONS=detect_leaks=0:alloc_dealloc_mismatch=0 \
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" -L 'library|python' "$@" || status=1
exit $status
