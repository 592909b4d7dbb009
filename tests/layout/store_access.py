#!/usr/bin/env python3
"""Every read of a run store goes through the read-back layer, and every open through one gate
(docs/store.md, "Reading a store back" and "Store paths"), as properties of the source tree:

1. In core/ and host/, only core/src/store/ and core/src/cache/ use SQLite (include SQLiteCpp or
   sqlite3.h): every other consumer reads runs through RunStore, whose reading methods call the
   read-back layer.
2. Every SQLite connection is made by store_internal::OpenSqlite (core/src/store/store.cc), which checks
   the path first: no other SQLite::Database is constructed from a name, and nothing calls sqlite3_open.
3. In core/src/store/readback.cc, columns are read (getColumn) only by the typed readers of class Row,
   which refuse NULLs and wrong types.

A violation is reported as FILE:LINE and the script exits 1.
Usage: store_access.py SOURCE_DIR
"""
import os
import re
import sys

SQLITE_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](SQLiteCpp/[^">]+|sqlite3\.h)[">]')
# A connection made from a name: SQLite::Database(...), SQLite::Database x(...) / x{...},
# make_unique<SQLite::Database>(...), sqlite3_open*(...).
CONSTRUCTION = re.compile(r"SQLite::Database\s*[({]|SQLite::Database\s+\w+\s*[({]|<SQLite::Database>\s*\(|sqlite3_open")
ALLOWED_SQLITE = ("core/src/store/", "core/src/cache/")


def sources(src):
    for top in ("core", "host"):
        for root, _, files in os.walk(os.path.join(src, top)):
            for f in sorted(files):
                if f.endswith((".h", ".cc")):
                    path = os.path.join(root, f)
                    yield os.path.relpath(path, src), path


def function_span(lines, signature):
    """(first, last) line numbers (1-based) of the function whose definition line contains signature."""
    for i, line in enumerate(lines):
        if signature in line and line.rstrip().endswith("{"):
            depth = 0
            for j in range(i, len(lines)):
                depth += lines[j].count("{") - lines[j].count("}")
                if depth == 0:
                    return i + 1, j + 1
    return None


def main(src):
    problems = []
    for rel, path in sources(src):
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        allowed = rel.startswith(ALLOWED_SQLITE)
        gate = function_span(lines, "Result<SQLite::Database> OpenSqlite(") if rel == "core/src/store/store.cc" else None
        rows = function_span(lines, "class Row {") if rel == "core/src/store/readback.cc" else None
        for n, line in enumerate(lines, 1):
            code = line.split("//")[0]
            if SQLITE_INCLUDE.search(code) and not allowed:
                problems.append(f"{rel}:{n}: SQLite used outside core/src/store and core/src/cache (read runs "
                                "through RunStore)")
            if CONSTRUCTION.search(code) and not (gate and gate[0] <= n <= gate[1]):
                problems.append(f"{rel}:{n}: an SQLite connection made outside store_internal::OpenSqlite "
                                "(open store files through it: it checks the path)")
            if rel == "core/src/store/readback.cc" and "getColumn(" in code and not (rows and rows[0] <= n <= rows[1]):
                problems.append(f"{rel}:{n}: a column read outside the typed readers of class Row")
        if rel == "core/src/store/store.cc" and gate is None:
            problems.append(f"{rel}:1: store_internal::OpenSqlite not found")
        if rel == "core/src/store/readback.cc" and rows is None:
            problems.append(f"{rel}:1: class Row not found")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
