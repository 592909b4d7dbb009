#!/usr/bin/env python3
"""kplab sets mimalloc's page options before it starts, and the environment still decides (design note 46).

Usage: mimalloc_options.py KPLAB_BINARY
Reads the options mimalloc itself reports (MIMALLOC_VERBOSE=1 prints "mimalloc: option 'NAME': VALUE" as
it starts) for `kplab --version`: with no MIMALLOC_* variable large_os_pages must be 1 and
eager_commit_delay 0 (kplab's choice); with MIMALLOC_LARGE_OS_PAGES=0 and MIMALLOC_EAGER_COMMIT_DELAY=1
they must be 0 and 1 (the user's). Exits 1 naming what differs.
"""
import os
import re
import subprocess
import sys


def options(kplab, extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC_")}
    env.update(extra, MIMALLOC_VERBOSE="1")
    r = subprocess.run([kplab, "--version"], env=env, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        sys.exit("mimalloc_options.py: %s --version failed (exit %d): %s" % (kplab, r.returncode, r.stderr[:300]))
    return dict(re.findall(r"mimalloc: option '(\w+)': (-?\d+)", r.stderr))


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    bad = 0
    for extra, want in (({}, {"large_os_pages": "1", "eager_commit_delay": "0"}),
                        ({"MIMALLOC_LARGE_OS_PAGES": "0", "MIMALLOC_EAGER_COMMIT_DELAY": "1"},
                         {"large_os_pages": "0", "eager_commit_delay": "1"})):
        got = options(argv[1], extra)
        for name, value in want.items():
            if got.get(name) != value:
                print("FAIL: with %s, mimalloc's %s is %s (expected %s)"
                      % (extra or "no MIMALLOC_* variable", name, got.get(name, "not reported"), value),
                      file=sys.stderr)
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
