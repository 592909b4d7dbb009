#!/usr/bin/env bash
# Do the shipped plugins give the same numbers as those of an earlier commit? (The rule of plugin API 2,
# "gives the same numbers as before, name the commit", and of the native metric kernels.) Runs
# bench/binary_identity.sh's nine evaluations (examples/tiny with custom cut-offs, Inspec under
# kpeval/kenchan/exhird, SemEval under semrp-standalone, KP20k with the three homogeneity plugins,
# calibration twice) with this build, once on OLD's plugins/ and once on the shipped ones, and compares
# every aggregate and every per-document export bit for bit.
# Usage: bench/plugin_identity.sh [OLD_COMMIT (default 9cda64c)]   (KPLAB_BUILD_DIR, KPLAB_SHARED_DATA)
set -euo pipefail
cd "$(dirname "$0")/.."
OLD="${1:-9cda64c}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
git archive "$OLD" plugins | tar -x -C "$TMP"
bash bench/binary_identity.sh "${KPLAB_BUILD_DIR:-build}/host/kplab" "$TMP/plugins"
