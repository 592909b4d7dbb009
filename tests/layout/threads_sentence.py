#!/usr/bin/env python3
"""Every header of kplab::core, kplab::plot and the host says what may be shared between threads.

Usage: threads_sentence.py SOURCE_DIR
Each core/include/kplab/*.h, plot/include/kplab/*.h and host/**/*.h must have, in the comment block
before its `#pragma once`, a sentence starting "// Threads:" (leveldb's habit: whether one object may be
used from several threads, which thread uses a Lua VM, or that the functions are pure). A header without
one fails, named with file:line. The C ABI's header (host/capi/include/kplab/c.h, C comments and an
include guard) says it in its list of conventions instead: that line must be there.
"""
import sys
from pathlib import Path


C_ABI_SENTENCE = "A handle may be used by one thread at a time"


def check(path):
    lines = path.read_text(encoding="utf-8").split("\n")
    for n, line in enumerate(lines, 1):
        if line.startswith("#pragma once"):
            return f"{path}:{n}: no '// Threads:' sentence before #pragma once (docs/library.md, \"Threads\")"
        if line.startswith("// Threads:") and len(line.split()) > 3:
            return None
    return f"{path}:1: no #pragma once"


def self_check():
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        late = Path(d) / "late.h"
        late.write_text("// A header.\n#pragma once\n// Threads: said too late.\n")
        empty = Path(d) / "empty.h"
        empty.write_text("// Threads:\n#pragma once\n")
        good = Path(d) / "good.h"
        good.write_text("// A header.\n// Threads: pure functions.\n#pragma once\n")
        if not check(late) or not check(empty) or check(good):
            sys.exit(f"{__file__}: self-check failed (a late or empty sentence passed, or a good one failed)")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: threads_sentence.py SOURCE_DIR")
    self_check()
    root = Path(sys.argv[1])
    headers = sorted(list((root / "core/include/kplab").glob("*.h")) + list((root / "plot/include/kplab").glob("*.h")))
    if len(headers) < 20:
        sys.exit(f"{__file__}: found {len(headers)} public headers under {root}; expected core's and plot's")
    c_abi = root / "host/capi/include/kplab/c.h"
    host = sorted(h for h in (root / "host").rglob("*.h") if h != c_abi)
    if len(host) < 20:
        sys.exit(f"{__file__}: found {len(host)} host headers under {root}; expected the engine's, Lua's, CLI's")
    headers += host
    bad = [e for e in map(check, headers) if e]
    if C_ABI_SENTENCE not in c_abi.read_text(encoding="utf-8"):
        bad.append(f"{c_abi}:1: no '{C_ABI_SENTENCE}' in its conventions")
    for e in bad:
        print(e, file=sys.stderr)
    if bad:
        sys.exit(f"{len(bad)} of {len(headers) + 1} headers without a threads sentence")
    print(f"{len(headers)} headers (core, plot, host) and the C ABI's, each with its threads sentence")


if __name__ == "__main__":
    main()
