#!/bin/sh
# Builds tests/consumer_subdir (kplab through add_subdirectory) in a fresh directory and runs it on
# examples/tiny. No build type is given: kplab must leave the parent's (empty) one alone.
# Usage: run.sh CMAKE SOURCE_DIR
set -eu
cmake=$1 src=$2
tmp=$(mktemp -d /tmp/kplab-subdir-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$cmake" -S "$src/tests/consumer_subdir" -B "$tmp/b" -DKPLAB_SOURCE_DIR="$src" \
  >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; exit 1; }
"$cmake" --build "$tmp/b" -j2 --target consumer >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
"$tmp/b/consumer" "$src/examples/tiny"
