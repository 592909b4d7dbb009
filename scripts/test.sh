#!/usr/bin/env bash
# The README's second command: installs the Debian packages only the tests need, turns the tests (with
# --tier slow or all also the benchmark programs) on in build/, builds them, and runs a tier of the suite
# (docs/testing.md):
#   scripts/test.sh              the quick tier (ctest -L quick): every test but the slow ones
#   scripts/test.sh --tier slow  the slow tier: the sanitizer fuzz smoke, the subproject and install
#                                consumers, the browser, Dask, pdflatex, the reference scripts
#   scripts/test.sh --tier all   both
# Arguments after the options go to ctest (e.g. scripts/test.sh -R Stem). Run scripts/setup.sh first:
# it installs what a user needs and builds what a user runs; this builds the rest on top.
set -euo pipefail
cd "$(dirname "$0")/.."

tier=quick
if [ "${1:-}" = --tier ]; then
  case "${2:-}" in
    quick|slow|all) tier=$2; shift 2 ;;
    *) echo "scripts/test.sh:$LINENO: --tier takes quick, slow or all (got: '${2:-}')" >&2; exit 2 ;;
  esac
fi

# install_missing and KPLAB_CONFIGURE_OPTS: what both README commands share.
source scripts/common.sh

# Only the tests need these (a user's packages are scripts/setup.sh's).
TEST_PACKAGES=(
  libgtest-dev libgmock-dev googletest      # GoogleTest + matchers: the unit and end-to-end test binaries
  zlib1g-dev                                # gzip golden files in the tests
  wordnet-base                              # METEOR's synonym stage (users: scripts/setup.sh --extra wordnet)
  python3-nltk                              # the independent reference (tests/reference, benchmarks, goldens)
  time                                      # /usr/bin/time for whole-process benchmark timings
  valgrind                                  # bench/instructions.py counts instructions (callgrind)
  texlive-latex-base texlive-latex-recommended poppler-utils  # pdflatex compiles `runs table
                                            # --output latex` (booktabs, graphicx), pdftotext reads the page
  chromium                                  # headless browser: the tests render kp.plot's SVG and the report
  clang libclang-rt-14-dev                  # libFuzzer + sanitizers for the fuzz smoke test (tests/fuzz)
  clang-format                              # .ci/run checks the format of the C++ files a commit changed
)
install_missing "${TEST_PACKAGES[@]}"

# The same build/ as scripts/setup.sh (its targets are up to date, so only the tests are compiled). The
# benchmark programs (bench/) are no test's input: they are built with the slow tier, which keeps them
# compiling in .ci/run, and stay out of the quick tier's build time.
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${KPLAB_CONFIGURE_OPTS[@]}" >/dev/null
fi
benchmarks=ON
if [ "$tier" = quick ]; then benchmarks=OFF; fi
cmake -S . -B build -DKPLAB_BUILD_TESTS=ON -DKPLAB_BUILD_BENCHMARKS=$benchmarks "${KPLAB_CONFIGURE_OPTS[@]}" >/dev/null

# The quick tier runs one test more than there are cores: about a tenth of its wall time is tests waiting
# (on a child process, a terminal, a lock, a deadline), which the extra one fills (docs/testing.md).
quick_jobs=$(($(nproc) + 1))

# The whole quick tier, no ctest arguments: its `early` tests (they need only what a user runs) run one at a
# time while the test binaries compile, where the build leaves a core idle, and the rest after; their output
# is shown once the build is done. With arguments (scripts/test.sh -R Stem), one ctest as below.
if [ "$tier" = quick ] && [ $# -eq 0 ]; then
  cmake --build build -j"$(nproc)" $(kplab_user_targets)
  early_log=$(mktemp)
  # The early tests run in a session of their own (setsid), so that an interrupted or failed script stops
  # them with their children: a script's background job ignores Ctrl-C, and would run on, orphaned.
  early_pid=""
  trap 'if [ -n "$early_pid" ]; then kill -TERM -- "-$early_pid" 2>/dev/null || true; fi; rm -f "$early_log"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  setsid --wait ctest --test-dir build --output-on-failure -j1 -L '^quick$' -L '^early$' >"$early_log" 2>&1 &
  early_pid=$!
  build_status=0
  cmake --build build -j"$(nproc)" || build_status=$?
  early_status=0
  wait "$early_pid" || early_status=$?
  early_pid=""
  echo "== the quick tier's early tests (run while the test binaries compiled) =="
  cat "$early_log"
  if [ "$build_status" -ne 0 ]; then exit "$build_status"; fi
  echo "== the rest of the quick tier =="
  rest_status=0
  ctest --test-dir build --output-on-failure -j"$quick_jobs" -L '^quick$' -LE '^early$' || rest_status=$?
  if [ "$early_status" -ne 0 ]; then
    echo "scripts/test.sh: the quick tier's early tests failed (their output is above the rest's)" >&2
    exit "$early_status"
  fi
  exit "$rest_status"
fi

cmake --build build -j"$(nproc)"
case "$tier" in
  quick) ctest --test-dir build --output-on-failure -j"$quick_jobs" -L '^quick$' "$@" ;;
  slow) ctest --test-dir build --output-on-failure -j"$(nproc)" -L '^slow$' "$@" ;;
  all) ctest --test-dir build --output-on-failure -j"$(nproc)" "$@" ;;
esac
