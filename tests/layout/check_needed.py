#!/usr/bin/env python3
"""The libraries do not need the app's libraries: checks the NEEDED entries of ELF files (readelf -d).

Usage: check_needed.py LIB [--lacks FILE...] [--has FILE...]
  LIB     a prefix of a soname, e.g. libedit (matches libedit.so.2)
  --lacks the files that must not need it (the Lua module, the Python module, libkplab_c)
  --has   the files that must need it (the kplab executable): proves the check sees the library at all
Exits 1 naming each file that breaks the rule.
"""
import subprocess
import sys


def needed(path):
    out = subprocess.run(["readelf", "-d", path], check=True, capture_output=True, text=True).stdout
    # " 0x0000000000000001 (NEEDED)             Shared library: [libedit.so.2]"
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    lib, mode, bad, checked = argv[1], None, 0, 0
    for arg in argv[2:]:
        if arg in ("--lacks", "--has"):
            mode = arg
            continue
        if mode is None:
            print(f"check_needed.py: {arg}: expected --lacks or --has first", file=sys.stderr)
            return 2
        hits = [n for n in needed(arg) if n.startswith(lib + ".so") or n.startswith(lib + "-")]
        checked += 1
        if mode == "--lacks" and hits:
            print(f"FAIL: {arg} needs {', '.join(hits)} (expected no {lib})", file=sys.stderr)
            bad += 1
        elif mode == "--has" and not hits:
            print(f"FAIL: {arg} does not need {lib} (expected it to)", file=sys.stderr)
            bad += 1
        else:
            print(f"ok: {arg}: {'no ' if mode == '--lacks' else ''}{lib} ({', '.join(needed(arg))})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
