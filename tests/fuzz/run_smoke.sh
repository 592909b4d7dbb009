#!/usr/bin/env bash
# The fuzz smoke run (ctest `fuzz_smoke`, label `fuzz`; docs/testing.md). Configures a clang build
# of its own with -DKPLAB_FUZZ=ON (ASan + UBSan + libFuzzer), builds the harnesses, then for each one:
# replays every kept regression input (tests/fuzz/regressions/<harness>/), and fuzzes for SECONDS over
# the committed seed corpus (tests/fuzz/corpus/<harness>/). Any crash, sanitizer report, leak, timeout
# (30 s an input) or out-of-memory fails the run; the input is left in the work directory, named on
# the last lines of the output.
# Usage: run_smoke.sh SOURCE_DIR BUILD_DIR [SECONDS]   (SECONDS default 25, or $KPLAB_FUZZ_SECONDS)
# Exit 77 (ctest: skipped) when clang or libFuzzer is not installed (scripts/test.sh installs both).
set -euo pipefail
src=$(cd "$1" && pwd)
dir=$2
secs=${3:-${KPLAB_FUZZ_SECONDS:-25}}
harnesses=(importers lua_api store)

if ! command -v clang >/dev/null 2>&1 || ! command -v clang++ >/dev/null 2>&1; then
  echo "skipped: clang/clang++ not found (scripts/test.sh installs clang and libclang-rt-14-dev)"
  exit 77
fi
if [ ! -e "$(clang++ -print-resource-dir)/lib/linux/libclang_rt.fuzzer-$(uname -m).a" ]; then
  echo "skipped: no libFuzzer runtime (apt-get install libclang-rt-14-dev)"
  exit 77
fi

fail() {  # file:line of this script, then the message
  echo "$src/tests/fuzz/run_smoke.sh:${BASH_LINENO[0]}: $*" >&2
  exit 1
}

mkdir -p "$dir"
CC=clang CXX=clang++ cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKPLAB_FUZZ=ON \
  -DKPLAB_BUILD_TESTS=OFF -DKPLAB_BUILD_BENCHMARKS=OFF -DKPLAB_BUILD_PYTHON=OFF >"$dir/smoke-configure.log" 2>&1 ||
  { cat "$dir/smoke-configure.log"; fail "configuring the clang fuzz build failed (log above)"; }
targets=()
for h in "${harnesses[@]}"; do targets+=(--target "fuzz_$h"); done
cmake --build "$dir" -j"$(nproc)" "${targets[@]}" >"$dir/smoke-build.log" 2>&1 ||
  { tail -n 60 "$dir/smoke-build.log"; fail "building the fuzz harnesses failed (log: $dir/smoke-build.log)"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/kplab-fuzz-smoke-XXXXXX")
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1
# Findings already reported and not yet fixed (tests/fuzz/known_open.txt) are not generated, so that the
# smoke run looks for new ones; see docs/testing.md.
export KPLAB_FUZZ_SKIP=$src/tests/fuzz/known_open.txt
status=0
for h in "${harnesses[@]}"; do
  bin=$dir/tests/fuzz/fuzz_$h
  regressions=("$src/tests/fuzz/regressions/$h"/*)
  if [ -e "${regressions[0]}" ]; then
    echo "== $h: replaying ${#regressions[@]} regression inputs"
    for input in "${regressions[@]}"; do  # one process each: several file arguments read as corpus dirs
      "$bin" -timeout=30 -rss_limit_mb=2048 "$input" >"$work/$h.replay.log" 2>&1 ||
        { tail -n 80 "$work/$h.replay.log"; echo "FAIL: kept regression input $input fails again" >&2; status=1; }
    done
  fi
  echo "== $h: fuzzing ${secs}s over tests/fuzz/corpus/$h"
  mkdir -p "$work/$h.corpus"
  # -timeout=30, not the 10 s of a dedicated run: a CI machine running other tests beside this one
  # must not turn a slow input into a failure; a hang still exceeds it.
  if ! "$bin" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
      -artifact_prefix="$work/$h-" "$work/$h.corpus" "$src/tests/fuzz/corpus/$h" >"$work/$h.fuzz.log" 2>&1; then
    tail -n 80 "$work/$h.fuzz.log"
    echo "FAIL: fuzz_$h found an input that crashes, leaks or hangs: $(ls "$work/$h-"* 2>/dev/null)" >&2
    echo "      keep it as tests/fuzz/regressions/$h/<name> once fixed (docs/testing.md)" >&2
    status=1
  else
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)|^Done ' "$work/$h.fuzz.log" || true
  fi
done
if [ "$status" = 0 ]; then rm -rf "$work"; fi
exit $status
