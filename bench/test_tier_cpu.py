#!/usr/bin/env python3
"""Where a test tier's time goes: every ctest command of the tier re-run, each timed on its own.

    bench/test_tier_cpu.py [--build DIR] [--tier quick|slow] [--jobs N] [--top K]

Reads the tier's tests from `ctest --show-only=json-v1 -L ^TIER$` (command, working directory and
environment as ctest would run them), runs each JOBS at a time (default 2), and takes each one's wall
time and CPU time (user and system, its children included: os.wait4's rusage). Prints the totals, the
TOP (default 30) by CPU, and how much of the tier's summed time is cases of under 0.1 s and of 0.5 s or
more. A test that fails is counted and named (exit 1). docs/testing.md uses its figures for the tiers.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import time


def tests_of(build, tier):
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1", "-L", f"^{tier}$"],
                         check=True, capture_output=True, text=True).stdout
    tests = []
    for t in json.loads(out)["tests"]:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        env = dict(os.environ)
        for e in props.get("ENVIRONMENT", []):
            k, _, v = e.partition("=")
            env[k] = v
        tests.append((t["name"], t["command"], props.get("WORKING_DIRECTORY", build), env))
    return tests


def run(test):
    name, cmd, cwd, env = test
    start = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    return name, time.perf_counter() - start, ru.ru_utime, ru.ru_stime, os.waitstatus_to_exitcode(status)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--tier", default="quick", choices=["quick", "slow"])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    if a.jobs < 1 or a.top < 0:
        sys.exit("test_tier_cpu.py: --jobs must be >= 1 and --top >= 0")
    if not os.path.isfile(os.path.join(a.build, "CMakeCache.txt")):
        sys.exit(f"test_tier_cpu.py: {a.build} is not a build directory (expected its CMakeCache.txt)")
    tests = tests_of(a.build, a.tier)
    if not tests:
        sys.exit(f"test_tier_cpu.py: no {a.tier} test in {a.build} (build the tests first: scripts/test.sh)")
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        rows = list(pool.map(run, tests))
    wall, user, sys_ = (sum(r[i] for r in rows) for i in (1, 2, 3))
    print(f"{a.tier} tier, {len(rows)} tests, {a.jobs} at a time: summed wall {wall:.1f} s, "
          f"CPU {user + sys_:.1f} s ({user:.1f} user + {sys_:.1f} system), waiting {max(0.0, wall - user - sys_):.1f} s")
    for label, keep in (("under 0.1 s of CPU", lambda c: c < 0.1), ("0.5 s of CPU or more", lambda c: c >= 0.5)):
        part = [r for r in rows if keep(r[2] + r[3])]
        print(f"  {len(part)} tests {label}: {sum(r[2] + r[3] for r in part):.1f} s of CPU")
    print(f"the {a.top} with the most CPU (s: CPU = user + system, wall):")
    for name, w, u, s, _ in sorted(rows, key=lambda r: -(r[2] + r[3]))[:a.top]:
        print(f"  {u + s:6.2f} = {u:.2f} + {s:.2f}  {w:6.2f}  {name}")
    failed = [r[0] for r in rows if r[4] != 0]
    for name in failed:
        print(f"FAILED: {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
