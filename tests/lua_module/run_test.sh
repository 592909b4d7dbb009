#!/bin/sh
# `require "kplab"` from Debian's stock lua5.4 (C Lua): runs tests/lua_module/api.lua with the module
# and under `kplab run`, and requires the same output; checks the module links no liblua.
# Usage: run_test.sh LUA MODULE_DIR KPLAB SOURCE_DIR
set -eu
lua=$1 moddir=$2 kplab=$3 src=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if readelf -d "$moddir/kplab.so" | grep -i 'NEEDED.*liblua'; then
  echo "FAIL: $moddir/kplab.so links a liblua (it must use the interpreter's)" >&2
  exit 1
fi
LUA_CPATH="$moddir/?.so" "$lua" "$src/tests/lua_module/api.lua" "$src/examples/tiny" >"$tmp/module.txt"
# kplab run confines scripts to granted directories (docs/scripts.md); the module is unconfined.
"$kplab" run --allow-read "$src/examples" "$src/tests/lua_module/api.lua" "$src/examples/tiny" >"$tmp/host.txt"
if ! diff -u "$tmp/host.txt" "$tmp/module.txt"; then
  echo "FAIL: the module's kp differs from kplab run's (diff above: - host, + module)" >&2
  exit 1
fi
grep -q '^kp.load function$' "$tmp/module.txt" || { echo "FAIL: kp.load missing" >&2; exit 1; }
echo "ok: $(wc -l <"$tmp/module.txt") lines identical"
# Argument errors in the module unwind the bindings' C++ objects: 100,000 failing calls grow RSS < 5 MB.
# Under scripts/sanitize.sh (AddressSanitizer preloaded into the stock interpreter), freed memory waits in
# ASan's quarantine, ~300 MB here, so the resident set says nothing about leaks: this one process runs
# without the quarantine (LeakSanitizer cannot run in an uninstrumented interpreter either).
case "${LD_PRELOAD:-}" in *libasan*) export ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=0" ;; esac
LUA_CPATH="$moddir/?.so" "$lua" "$src/tests/lua_module/leak.lua" "$src/examples/tiny"
