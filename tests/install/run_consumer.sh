#!/bin/sh
# The installed tree, as a newcomer uses it (docs/library.md): `cmake --install` into a fresh prefix,
# then from that prefix only
#  - a C++ project (tests/consumer) finds the package with find_package(kplab), builds and runs;
#  - the C ABI test (tests/c_api/c_api_test.c), compiled as C against the installed libkplab_c;
#  - the stock lua5.4 loads the installed Lua module;
#  - the installed kplab executable evaluates.
# A plugin written into the installed share/kplab/plugins only (installed_marker) proves that the
# executable and libkplab_c find their plugins in the install tree.
# Usage: run_consumer.sh CMAKE BUILD_DIR SOURCE_DIR LUA_CMOD_DIR LUA
set -eu
cmake=$1 build=$2 src=$3 luadir=$4 lua=$5
tmp=$(mktemp -d /tmp/kplab-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
tiny=$src/examples/tiny

"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log"

# Only public headers: the C ABI's, and kplab/host/evaluate.h with exactly the headers it includes
# (no bindings, app or other engine headers; docs/library.md). The consumer below compiles
# evaluate.h from the install tree, so the set is also self-contained.
host_headers=$(cd "$prefix/include/kplab/host" && ls | tr '\n' ' ')
if [ "$host_headers" != "evaluate.h params.h plugin.h runner.h sandbox.h " ]; then
  echo "FAIL: installed include/kplab/host is '$host_headers' (expected evaluate.h params.h plugin.h runner.h sandbox.h)" >&2
  exit 1
fi
[ -f "$prefix/include/kplab/c.h" ] || { echo "FAIL: include/kplab/c.h not installed" >&2; exit 1; }
for private in bindings.h lua_util.h cli.h repl.h lua_script.h; do
  if find "$prefix/include" -name "$private" | grep -q .; then
    echo "FAIL: private header $private installed" >&2
    exit 1
  fi
done
# The installed package does not look for libedit (PkgConfig::LIBEDIT: the app links it, no library).
if grep -q LIBEDIT "$prefix"/lib*/cmake/kplab/*.cmake; then
  echo "FAIL: the installed CMake package mentions libedit" >&2
  exit 1
fi
cat >"$prefix/share/kplab/plugins/installed_marker.lua" <<'LUA'
-- kplab-api: 1
return kp.metric {
  name = "installed_marker", version = "1.0.0",
  score = function(doc) return { ["all.n_refs"] = #doc.refs } end,
}
LUA

"$cmake" -S "$src/tests/consumer" -B "$tmp/consumer" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
"$cmake" --build "$tmp/consumer" -j2 >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }

echo "== C++ consumer (kplab::core, kplab::host, kplab::plot)"
"$tmp/consumer/consumer" "$tiny"
echo "== C ABI (kplab::c)"
"$tmp/consumer/c_api_test" "$tiny" installed_marker
if readelf -d "$tmp/consumer/c_api_test" | grep -q 'NEEDED.*libkplab_c.so.0'; then :; else
  echo "FAIL: c_api_test does not link libkplab_c.so.0" >&2
  exit 1
fi

echo "== Lua module from $luadir"
case $luadir in /*) moddir=$luadir ;; *) moddir=$prefix/$luadir ;; esac
TINY=$tiny LUA_CPATH="$moddir/?.so" "$lua" -e '
  local kp = require "kplab"
  local tiny = os.getenv("TINY")
  local c = kp.load { dataset = tiny, predictions = tiny .. "/predictions.txt" }
  local d = c:doc(1)
  -- Document 1: scheduler=scheduling, batch jobs, interactive queries in the top 5 (hits 3).
  assert(d.preds:match(d.refs):hits(5) == 3)
  print("ok: " .. tostring(c))'

echo "== installed kplab executable"
out=$(cd "$tmp" && "$prefix/bin/kplab" eval --dataset "$tiny" --predictions "$tiny/predictions.txt" \
  --metrics installed_marker --no-store --output json)
echo "$out"
# 5 + 4 + 4 + 4 + 4 references over 5 documents = 4.2
echo "$out" | grep -q '"all.n_refs": 4.2' || { echo "FAIL: installed plugin not found or wrong" >&2; exit 1; }
echo "ok"
