#!/usr/bin/env python3
"""tests/gtest_list.cmake and tests/gtest_suites.cmake on made-up GoogleTest binaries.

Usage: gtest_suites_check.py CMAKE CTEST SOURCE_DIR

The quick tier runs a GoogleTest suite's quick cases as one ctest test and each slow case as its own
(docs/testing.md). Here fake binaries (shell scripts that print a --gtest_list_tests listing, or fail)
go through the listing script and the grouping, and ctest's own listing of the result
(`ctest --show-only=json-v1`) must be, test by test, what is written out below by hand:
- a suite whose cases are all quick is one test, `--gtest_filter=Suite.*`;
- a slow case is a test of its own, and its suite's filter leaves it out (`Suite.*:-Suite.Slow`);
- a suite whose cases are all slow has no quick test;
- parameterized names (`Prefix/Suite.Case/param  # GetParam() = ...`) keep their prefix and lose the comment;
- a suite name a second binary repeats is prefixed with that binary's layer;
- until the binary has listed its cases, it has one test, BINARY_NOT_BUILT, without a tier.
And the listing refuses what it cannot read: a binary that fails (its exit status and output), an
unexpected line (the line), a case before any suite, a binary with no case.
"""
import json
import os
import stat
import subprocess
import sys
import tempfile


def fake_binary(path, listing, status=0):
    with open(path, "w") as f:
        f.write("#!/bin/sh\ncat <<'EOF'\n" + listing + "EOF\nexit %d\n" % status)
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)


def list_cases(cmake, source, binary, out):
    return subprocess.run([cmake, "-D", f"BINARY={binary}", "-D", f"OUT={out}", "-P",
                           os.path.join(source, "tests", "gtest_list.cmake")], capture_output=True, text=True)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: gtest_suites_check.py CMAKE CTEST SOURCE_DIR")
    cmake, ctest, source = sys.argv[1:]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        a, b, unbuilt = (os.path.join(tmp, n) for n in ("a_tests", "b_tests", "c_tests"))
        fake_binary(a, "Running main() from ./googletest/src/gtest_main.cc\n"
                       "Quick.\n  One\n  Two\n"
                       "Mixed.\n  Fast\n  Slow\n  AlsoSlow\n"
                       "AllSlow.\n  Only\n"
                       "Peers/Param.\n  Match/kp20k  # GetParam() = kp20k\n  Match/inspec  # GetParam() = inspec\n"
                       "Typed/0.  # TypeParam = int\n  Works\n")
        fake_binary(b, "Quick.\n  Other\nB.\n  Case\n")
        for binary in (a, b):
            r = list_cases(cmake, source, binary, binary + "_cases.cmake")
            if r.returncode != 0:
                failures.append(f"listing {binary} failed: {r.stderr}")
        slow = ["Mixed.Slow", "Mixed.AlsoSlow", "AllSlow.Only", "Peers/Param.Match/kp20k"]
        with open(os.path.join(tmp, "CTestTestfile.cmake"), "w") as f:
            f.write(f"include([==[{source}/tests/gtest_suites.cmake]==])\n")
            for binary, layer in ((a, "core"), (b, "host"), (unbuilt, "conformance")):
                f.write(f"kplab_gtest_suites([==[{binary}]==] {layer} [==[{binary}_cases.cmake]==] {';'.join(slow)})\n")
        listing = json.loads(subprocess.run([ctest, "--test-dir", tmp, "--show-only=json-v1"], check=True,
                                            capture_output=True, text=True).stdout)
        got = {}
        for t in listing["tests"]:
            labels = next((p["value"] for p in t.get("properties", []) if p["name"] == "LABELS"), [])
            command = t.get("command") or [None]  # none when the executable does not exist (NOT_BUILT)
            got[t["name"]] = (command[0] and os.path.basename(command[0]), command[1:], labels)
        want = {
            "Quick": ("a_tests", ["--gtest_filter=Quick.*"], ["core", "quick"]),
            "Mixed": ("a_tests", ["--gtest_filter=Mixed.*:-Mixed.Slow:Mixed.AlsoSlow"], ["core", "quick"]),
            "Mixed.Slow": ("a_tests", ["--gtest_filter=Mixed.Slow"], ["core", "slow"]),
            "Mixed.AlsoSlow": ("a_tests", ["--gtest_filter=Mixed.AlsoSlow"], ["core", "slow"]),
            "AllSlow.Only": ("a_tests", ["--gtest_filter=AllSlow.Only"], ["core", "slow"]),
            "Peers/Param": ("a_tests", ["--gtest_filter=Peers/Param.*:-Peers/Param.Match/kp20k"], ["core", "quick"]),
            "Peers/Param.Match/kp20k": ("a_tests", ["--gtest_filter=Peers/Param.Match/kp20k"], ["core", "slow"]),
            "Typed/0": ("a_tests", ["--gtest_filter=Typed/0.*"], ["core", "quick"]),
            "host:Quick": ("b_tests", ["--gtest_filter=Quick.*"], ["host", "quick"]),
            "B": ("b_tests", ["--gtest_filter=B.*"], ["host", "quick"]),
            "c_tests_NOT_BUILT": (None, [], []),
        }
        for name in sorted(set(want) | set(got)):
            if got.get(name) != want.get(name):
                failures.append(f"test {name!r}: got {got.get(name)}, expected {want.get(name)}")

        # What the listing refuses, each with what it names.
        refused = [
            ("exits 3", "Quick.\n  One\n", 3, "exited with 3"),
            ("odd line", "Quick.\n  One\nsomething else\n", 0, "unexpected line in --gtest_list_tests: 'something else'"),
            ("case first", "  One\nQuick.\n", 0, "case 'One' before any suite"),
            ("no case", "Running main() from x\n", 0, "lists no test case"),
        ]
        for what, text, status, message in refused:
            bad = os.path.join(tmp, "bad_tests")
            fake_binary(bad, text, status)
            out = bad + "_cases.cmake"
            r = list_cases(cmake, source, bad, out)
            said = " ".join(r.stderr.split())
            if r.returncode == 0 or message not in said or os.path.exists(out):
                failures.append(f"listing a binary that {what}: exit {r.returncode}, wrote a list: "
                                f"{os.path.exists(out)}, said: {said!r} (expected to fail saying {message!r})")
    for f in failures:
        print(f, file=sys.stderr)
    if failures:
        sys.exit(f"{len(failures)} problems")
    print(f"{len(want)} tests as expected, {len(refused)} bad listings refused")


if __name__ == "__main__":
    main()
