#!/usr/bin/env python3
"""The quoted-include graph of core/ and host/ has no cycle (docs/design-notes.md, note 22).

A node is a unit: X.h and X.cc beside it are one node (a header and its implementation are one module, so
cli.cc including repl.h while repl.cc includes cli.h is the cycle cli <-> repl). Every `#include "X"` in a .h/.cc under core/ and host/ is resolved the way the compiler resolves it for
kplab's targets: first beside the including file, then in the include roots below (the targets'
include directories). An include that resolves to no file under the tree is a system/third-party
header (or a generated one) and is not an edge. The same check runs on the folders (core/, host/lua/, host/engine/, host/cli/, host/repl/, ...: the
targets of note 22), so that a target never includes a header of a target that depends on it. A cycle is reported as FILE:LINE of each #include on
it, and the script exits 1. An include that points up the layers of note 22 (core < host/lua < host/engine
< the app and the bindings' front-ends), or a Lua header included under core/, is reported the same way.

Usage: include_cycles.py SOURCE_DIR
"""
import os
import re
import sys

# The include directories the targets of core/CMakeLists.txt and host/CMakeLists.txt declare.
INCLUDE_ROOTS = [
    "core/include", "core/src", "plot/include",
    "host/lua", "host/engine", "host/cli", "host/repl", "host/capi/include",
]
SCANNED = ["core", "host"]
# Files that are one unit with another: the sandboxed VM's budgeted string library (lua_pattern.cc) and its
# bounded table/string loops (lua_stdlib.cc) are installed by LuaVm and charge LuaVm's budget, so they are
# part of the VM, split out only for size.
SAME_UNIT = {"host/lua/lua_pattern": "host/lua/sandbox", "host/lua/lua_stdlib": "host/lua/sandbox"}
SOURCE_DIR = ""
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
# The layers of note 22's target graph, lowest first: a folder includes only from its own layer or
# below (no upward arrow), and core/ -- the domain logic, with the kernels and the embedding plan --
# includes no Lua header at all.
LAYERS = {"core": 0, "host/lua": 1, "host/engine": 2, "host/cli": 3, "host/repl": 3, "host/capi": 3,
          "host/luamod": 3, "host/python": 3}
LUA_RE = re.compile(r'^\s*#\s*include\s*[<"](lua\.h|lua\.hpp|lauxlib\.h|lualib\.h)[>"]')


def resolve(src, including, name):
    for base in [os.path.dirname(including)] + [os.path.join(src, r) for r in INCLUDE_ROOTS]:
        path = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(path):
            return path
    return None


def unit(path):
    stem = os.path.splitext(path)[0]
    rel = os.path.relpath(stem, SOURCE_DIR)
    return os.path.join(SOURCE_DIR, SAME_UNIT[rel]) if rel in SAME_UNIT else stem


def folder(unit_path):
    """core/... -> core; host/X/... -> host/X (the host targets); plot/... -> plot."""
    parts = os.path.relpath(unit_path, SOURCE_DIR).split(os.sep)
    return os.path.join(SOURCE_DIR, *parts[:2]) if parts[0] == "host" else os.path.join(SOURCE_DIR, parts[0])


def graph(src):
    edges = {}  # file -> [(included file, line)]
    for top in SCANNED:
        for root, _, files in os.walk(os.path.join(src, top)):
            for f in files:
                if not f.endswith((".h", ".cc")):
                    continue
                path = os.path.normpath(os.path.join(root, f))
                out = edges.setdefault(unit(path), [])
                with open(path, encoding="utf-8") as fh:
                    for lineno, line in enumerate(fh, 1):
                        m = INCLUDE_RE.match(line)
                        if m:
                            target = resolve(src, path, m.group(1))
                            if target and unit(target) != unit(path):
                                out.append((unit(target), lineno, path))
    return edges


def layer_problems(src, edges):
    """FILE:LINE of each include that points up the layers, or of a Lua header included by core/."""
    out = []
    for u, outs in edges.items():
        fu = os.path.relpath(folder(u), src)
        for v, line, incl in outs:
            fv = os.path.relpath(folder(v), src)
            if fu in LAYERS and fv in LAYERS and LAYERS[fv] > LAYERS[fu]:
                out.append(f"{os.path.relpath(incl, src)}:{line}: {fu} includes from {fv}, a layer above it")
    for root, _, files in os.walk(os.path.join(src, "core")):
        for f in files:
            if f.endswith((".h", ".cc")):
                path = os.path.join(root, f)
                with open(path, encoding="utf-8") as fh:
                    for lineno, text in enumerate(fh, 1):
                        if LUA_RE.match(text):
                            out.append(f"{os.path.relpath(path, src)}:{lineno}: core/ includes a Lua header")
    return sorted(out)


def find_cycle(edges):
    """A cycle as [(file:line of the #include of the next unit), ...], or None. Iterative DFS."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = {f: WHITE for f in edges}
    for start in sorted(edges):
        if color[start] != WHITE:
            continue
        stack = [(start, iter(edges.get(start, [])))]
        path = [start]
        color[start] = GREY
        via = {}
        while stack:
            node, it = stack[-1]
            advanced = False
            for nxt, line, incl in it:
                via[node] = (incl, line)
                c = color.get(nxt, WHITE)
                if c == GREY:
                    i = path.index(nxt)
                    return [(f, via[f]) for f in path[i:]]
                if c == WHITE:
                    color[nxt] = GREY
                    path.append(nxt)
                    stack.append((nxt, iter(edges.get(nxt, []))))
                    advanced = True
                    break
            if not advanced:
                color[node] = BLACK
                stack.pop()
                path.pop()
    return None


def main():
    if len(sys.argv) != 2:
        print("usage: include_cycles.py SOURCE_DIR", file=sys.stderr)
        return 2
    global SOURCE_DIR
    src = SOURCE_DIR = os.path.abspath(sys.argv[1])
    edges = graph(src)
    n_edges = sum(len(v) for v in edges.values())
    if n_edges == 0:
        print(f"{src}: no quoted includes found under {', '.join(SCANNED)} (wrong SOURCE_DIR?)", file=sys.stderr)
        return 2
    folder_edges = {}
    for u, outs in edges.items():
        fu = folder(u)
        folder_edges.setdefault(fu, [])
        for v, line, incl in outs:
            if folder(v) != fu:
                folder_edges[fu].append((folder(v), line, incl))
    bad = False
    for kind, g in (("unit", edges), ("folder", folder_edges)):
        cycle = find_cycle(g)
        if not cycle:
            continue
        bad = True
        print(f"include cycle between {kind}s:", file=sys.stderr)
        for _, (path, line) in cycle:
            print(f"  {os.path.relpath(path, src)}:{line}: includes from the next {kind}", file=sys.stderr)
        print(f"  (back to {os.path.relpath(cycle[0][0], src)})", file=sys.stderr)
    for problem in layer_problems(src, edges):
        bad = True
        print(problem, file=sys.stderr)
    if bad:
        return 1
    print(f"ok: {len(folder_edges)} folders, {len(edges)} units, {n_edges} resolved quoted includes, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
