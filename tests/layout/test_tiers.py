#!/usr/bin/env python3
"""Every ctest test carries exactly one tier label, `quick` or `slow` (docs/testing.md, "Tiers").

Usage: test_tiers.py CTEST BUILD_DIR [SLOW_GTEST...]
Reads the suite as ctest itself lists it (`ctest --show-only=json-v1`; the GoogleTest binaries' tests,
one a suite and one a slow case, once the binaries are built) and fails, naming each test, when one has
neither label or both. The README's test command runs `-L quick` and .ci/run adds `-L slow`, so a test
without a tier would never run and a test with both would run twice.

Before reading the suite it checks itself on a made-up listing (a test with no tier, one with both, one
with a look-alike label `quickish`) so that a check that accepts everything cannot pass.

The SLOW_GTEST names are tests/CMakeLists.txt's KPLAB_SLOW_GTESTS, the GoogleTest cases moved to the slow
tier: each must be a test of the suite labelled `slow`. A case renamed or deleted would otherwise leave a
stale line in that list, and one the include file failed to relabel would run in the quick tier unseen.

A test labelled `early` (tests/CMakeLists.txt, kplab_early) is one scripts/test.sh runs while the test
binaries compile, so it must be quick and must name (in its command, working directory or environment) no
file under BUILD_DIR/tests, where the test build puts what it makes: one that did would run against a
binary that is missing or stale. (The folder itself, a test's default working directory, exists once
the build is configured.)

Every case a GoogleTest binary lists is run by exactly one ctest test: each test that runs a binary with
--gtest_filter is expanded against the binary's whole list (`--gtest_list_tests`, once a binary), and the
cases of all of them together must be that list, none twice (a suite's filter that also caught a slow
case, or a case left out of every test, is named). The filters are matched here, as GoogleTest matches
them (`*` any run of characters, `?` one, `:` between patterns, a `-` before the excluded ones); each
filter with excluded patterns, the only kind whose reading is more than a name or `Suite.*`, is also
expanded by the binary itself, and a difference is a problem. (One binary process a filter took ~6 s
of the quick tier's CPU for ~240 filters; the binary's own reading is kept where there is any to read.)
"""
import json
import os
import subprocess
import sys

TIERS = ("quick", "slow")


def labels_of(test):
    for prop in test.get("properties", []):
        if prop.get("name") == "LABELS":
            return list(prop.get("value", []))
    return []


def problems(listing):
    out = []
    for test in listing.get("tests", []):
        tiers = [label for label in labels_of(test) if label in TIERS]
        if len(tiers) != 1:
            out.append(f"{test['name']}: tier labels {tiers or 'none'} (labels {labels_of(test)}); "
                       "expected exactly one of quick, slow (tests/CMakeLists.txt, kplab_tier)")
    return out


def early_problems(listing, build):
    made_by_tests = os.path.join(os.path.realpath(build), "tests") + os.sep
    out = []
    for test in listing.get("tests", []):
        labels = labels_of(test)
        if "early" not in labels:
            continue
        if "quick" not in labels:
            out.append(f"{test['name']}: labelled early but not quick (scripts/test.sh runs early tests as part of "
                       "the quick tier)")
        props = {p.get("name"): p.get("value") for p in test.get("properties", [])}
        cwd = props.get("WORKING_DIRECTORY") or made_by_tests  # the folder itself exists after configuring
        words = list(test.get("command") or []) + [e.partition("=")[2] for e in props.get("ENVIRONMENT") or []]
        for word in words:
            for part in str(word).replace(",", ";").split(";"):
                path = os.path.realpath(os.path.join(cwd, part)) + os.sep
                if "/" in part and path.startswith(made_by_tests) and path != made_by_tests:
                    out.append(f"{test['name']}: labelled early but names {part}, which the test build makes "
                               "(scripts/test.sh runs early tests before it; drop kplab_early for this test)")
                    break
    return out


def gtest_cases(binary, gtest_filter=None):
    args = [binary, "--gtest_list_tests"] + ([f"--gtest_filter={gtest_filter}"] if gtest_filter is not None else [])
    cases, suite = [], None
    for line in subprocess.run(args, check=True, capture_output=True, text=True).stdout.splitlines():
        line = line.split("  #")[0]
        if line.startswith("  ") and suite:
            cases.append(suite + line.strip())
        elif line.endswith(".") and not line.startswith(" "):
            suite = line
    return cases


def wildcard_matches(pattern, name):
    """Does pattern ('*' any run of characters, '?' any one, every other character itself) match all of
    name? Greedy with one backtrack point, as GoogleTest's PatternMatchesString: O(len(pattern) *
    len(name)) at worst, where a regular expression of many '*' backtracks exponentially."""
    p = n = 0
    star, mark = -1, 0
    while n < len(name):
        if p < len(pattern) and pattern[p] in ("?", name[n]):
            p, n = p + 1, n + 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark, p = p, n, p + 1
        elif star >= 0:
            mark += 1
            p, n = star + 1, mark
        else:
            return False
    return pattern[p:].strip("*") == ""


def filter_matches(name, gtest_filter):
    """GoogleTest's reading of --gtest_filter (its PositiveAndNegativeUnitTestFilter): the patterns before
    the first '-' and those after it, ':' between patterns; a name matches when a positive pattern matches
    it whole and no negative one does. With a '-', an empty positive part is '*'; without one, an empty
    filter matches no test (a pattern matches only what it spells out)."""
    positive, dash, negative = gtest_filter.partition("-")
    if dash and not positive:
        positive = "*"

    def any_matches(patterns):
        return any(wildcard_matches(p, name) for p in patterns.split(":"))
    return any_matches(positive) and not (dash and any_matches(negative))


def coverage_problems(listing, run_cases=gtest_cases):
    """Each GoogleTest case run by exactly one test; run_cases(binary, filter=None) lists a binary's cases."""
    runs = {}  # binary -> {case: [tests]}
    every = {}  # binary -> its whole list
    out = []
    for test in listing.get("tests", []):
        command = test.get("command") or []
        filters = [a[len("--gtest_filter="):] for a in command[1:] if a.startswith("--gtest_filter=")]
        if not filters:
            continue
        binary, gtest_filter = command[0], filters[-1]
        if binary not in every:
            every[binary] = run_cases(binary)
        cases = [c for c in every[binary] if filter_matches(c, gtest_filter)]
        if "-" in gtest_filter:
            own = run_cases(binary, gtest_filter)
            if own != cases:
                out.append(f"{test['name']}: --gtest_filter={gtest_filter} selects {own} in "
                           f"{os.path.basename(binary)} but {cases} as read here (test_tiers.py, filter_matches)")
        counts = runs.setdefault(binary, {})
        for case in cases:
            counts.setdefault(case, []).append(test["name"])
    for binary, counts in sorted(runs.items()):
        for case in every[binary]:
            tests = counts.pop(case, [])
            if len(tests) != 1:
                out.append(f"{case}: run by {len(tests)} tests {tests} ({os.path.basename(binary)}); expected one")
    return out


def stale_slow(listing, names):
    slow = {t["name"] for t in listing.get("tests", []) if "slow" in labels_of(t)}
    return [f"{name}: listed in KPLAB_SLOW_GTESTS (tests/CMakeLists.txt) but not a slow test of the suite"
            for name in names if name not in slow]


def self_check():
    def t(name, labels):
        return {"name": name, "properties": [{"name": "LABELS", "value": labels}]}
    made_up = {"tests": [t("ok_quick", ["core", "quick"]), t("ok_slow", ["slow"]), t("none", ["host"]),
                         t("both", ["quick", "slow"]), t("lookalike", ["quickish"]), {"name": "bare"},
                         t("P/Case.Name/param", ["slow"])]}
    found = sorted(p.split(":")[0] for p in problems(made_up))
    if found != ["bare", "both", "lookalike", "none"]:
        sys.exit(f"{__file__}:{self_check.__code__.co_firstlineno}: the self-check found {found}, "
                 "expected bare, both, lookalike, none")
    stale = sorted(p.split(":")[0] for p in stale_slow(made_up, ["ok_slow", "ok_quick", "gone", "P/Case.Name/param"]))
    if stale != ["gone", "ok_quick"]:
        sys.exit(f"{__file__}:{self_check.__code__.co_firstlineno}: the slow-list self-check found {stale}, "
                 "expected gone, ok_quick")

    def e(name, labels, command, env=()):
        return {"name": name, "command": command,
                "properties": [{"name": "LABELS", "value": labels}, {"name": "ENVIRONMENT", "value": list(env)}]}
    made_up_early = {"tests": [
        e("ok", ["quick", "early"], ["/b/host/kplab", "/src/tests/x.py"], ["KPLAB_BINARY=/b/host/kplab"]),
        e("slow_early", ["slow", "early"], ["/usr/bin/python3"]),
        e("binary", ["quick", "early"], ["/b/tests/kplab_core_tests"]),
        e("in_list", ["quick", "early"], ["x.py", "core=/src/a.cc,/b/tests/gen.cc"]),
        e("in_env", ["quick", "early"], ["x.py"], ["PATH=/usr/bin;/b/tests/bin"]),
        e("lookalike", ["quick", "early"], ["/b/tests2/x", "/b/testsuite", "/b/tests", "-m", "unittest"]),
        e("relative", ["quick", "early"], ["./kplab_core_tests"]),
        e("not_early", ["quick"], ["/b/tests/kplab_core_tests"])]}
    found = sorted(p.split(":")[0] for p in early_problems(made_up_early, "/b"))
    if found != ["binary", "in_env", "in_list", "relative", "slow_early"]:
        sys.exit(f"{__file__}:{self_check.__code__.co_firstlineno}: the early-test self-check found {found}, "
                 "expected binary, in_env, in_list, relative, slow_early")

    # A made-up binary with suites A (A.x, A.y) and B (B.z): its filters expanded by a fnmatch stand-in.
    def fake_cases(binary, gtest_filter=None):
        import fnmatch
        every = ["A.x", "A.y", "B.z"]
        if gtest_filter is None:
            return every
        positive, _, negative = gtest_filter.partition(":-")
        return [c for c in every if any(fnmatch.fnmatchcase(c, p) for p in positive.split(":"))
                and not any(fnmatch.fnmatchcase(c, p) for p in negative.split(":") if p)]
    def g(name, f):
        return {"name": name, "command": ["/b/tests/t", f"--gtest_filter={f}"]}
    made_up_runs = {"tests": [g("A", "A.*:-A.y"), g("A.y", "A.y"), g("B", "B.*"), g("B.z", "B.z"),
                              {"name": "other", "command": ["/usr/bin/python3", "x.py"]}]}
    found = sorted(p.split(":")[0] for p in coverage_problems(made_up_runs, fake_cases))
    if found != ["B.z"]:
        sys.exit(f"{__file__}:{self_check.__code__.co_firstlineno}: the coverage self-check found {found}, "
                 "expected B.z (run twice)")
    made_up_runs["tests"] = made_up_runs["tests"][:3]
    found = sorted(p.split(":")[0] for p in coverage_problems(made_up_runs, fake_cases))
    if found != []:
        sys.exit(f"{__file__}:{self_check.__code__.co_firstlineno}: the coverage self-check found {found} "
                 "where every case runs once")
    made_up_runs["tests"] = [g("A", "A.*:-A.y"), g("B", "B.*")]
    found = sorted(p.split(":")[0] for p in coverage_problems(made_up_runs, fake_cases))
    if found != ["A.y"]:
        sys.exit(f"{__file__}:{self_check.__code__.co_firstlineno}: the coverage self-check found {found}, "
                 "expected A.y (run by none)")
    # A binary whose reading of a filter with excluded patterns is not filter_matches' is named.
    def other_reading(binary, gtest_filter=None):
        return fake_cases(binary, gtest_filter) if gtest_filter is None else ["A.x", "A.y"]
    made_up_runs["tests"] = [g("A", "A.*:-A.y"), g("A.y", "A.y"), g("B", "B.*")]
    found = sorted(p.split(":")[0] for p in coverage_problems(made_up_runs, other_reading))
    if found != ["A"]:
        sys.exit(f"{__file__}:{self_check.__code__.co_firstlineno}: the coverage self-check found {found}, "
                 "expected A (the binary reads its filter otherwise)")
    # GoogleTest's filter semantics, by hand (googletest's docs, "Running a Subset of the Tests"; the empty
    # filter, which matches nothing, as Debian's GoogleTest 1.12 binaries read it).
    hand = [("A.x", "A.*", True), ("A.x", "A.?", True), ("A.xy", "A.?", False), ("B.x", "A.*", False),
            ("A.x", "A.*:-A.x", False), ("A.y", "A.*:-A.x", True), ("A.x", "-A.y", True), ("A.y", "-A.y", False),
            ("A.x", "B.*:A.x", True), ("A.x", "A.x:-B.*:A.*", False), ("P/A.x/0", "P/A.*", True),
            ("A.x", "A.[x]", False), ("A.[x]", "A.[x]", True), ("A.x", "a.x", False), ("A.x", "*", True),
            ("A.x", "", False), ("A.x", "-", True), ("A.x", "A.x::", True), ("A.x", "A", False),
            ("A.x", "*" * 40 + "?" * 5, False), ("A.x", "*x", True), ("A.xx", "*x*x", True), ("A.x", "*x*x", False)]
    wrong = [(n, f) for n, f, want in hand if filter_matches(n, f) != want]
    if wrong:
        sys.exit(f"{__file__}:{self_check.__code__.co_firstlineno}: filter_matches misreads {wrong}")


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: test_tiers.py CTEST BUILD_DIR [SLOW_GTEST...]")
    self_check()
    ctest, build, slow_gtests = sys.argv[1], sys.argv[2], sys.argv[3:]
    listing = json.loads(subprocess.run([ctest, "--test-dir", build, "--show-only=json-v1"], check=True,
                                        capture_output=True, text=True).stdout)
    tests = listing.get("tests", [])
    if len(tests) < 10:
        sys.exit(f"{__file__}: ctest lists {len(tests)} tests in {build}; expected the whole suite")
    bad = (problems(listing) + stale_slow(listing, slow_gtests) + early_problems(listing, build) +
           coverage_problems(listing))
    for line in bad:
        print(line, file=sys.stderr)
    if bad:
        sys.exit(f"{len(bad)} problems with the tiers of {len(tests)} tests")
    counts = {tier: sum(tier in labels_of(t) for t in tests) for tier in TIERS + ("early",)}
    print(f"{len(tests)} tests: {counts['quick']} quick ({counts['early']} of them early), {counts['slow']} slow")


if __name__ == "__main__":
    main()
