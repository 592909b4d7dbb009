#!/usr/bin/python3
"""bench/phase_medians.py (the per-phase A/B benchmark) on stand-in binaries: its medians and its refusals.

Checks, against expectations written here:
  * the medians of KPLAB_TIMING's phase lines: a stand-in that prints "[timing] corpus" lines whose
    times come from a counter file, 10/30/20 ms wall over three runs, gives a median of 20.0;
  * NAME=VALUE words in front of a variant's binary reach its environment, and only its own: two
    variants of one stand-in that prints its phase time from KPLAB_FAKE_MS (7 and 9, unset 5) give
    7.0, 9.0 and 5.0, and KPLAB_TIMING stays 1 whatever the variant sets;
  * a variant that is not an executable file is refused before any run, naming it, and one that is only
    settings (no binary after them) is refused as such;
  * a binary the kernel cannot start (its interpreter does not exist) is reported with the reason,
    not a Python traceback (the forked child used to unwind the script and delete its temporary
    directory, and the parent died on a FileNotFoundError);
  * a binary that exits with an error is reported with its stderr.
Each refusal exits 1.

And the process start every benchmark measures through (bench/benchlib.py spawn_timed, run_timed):
  * the measured process's rusage holds none of the harness's work: /bin/true spawned takes no more
    page faults than /usr/bin/time counts for it (both printed; a child forked from the interpreter
    takes hundreds more: the Python it runs before its exec);
  * run_timed reports a program that cannot start, and one that fails with its stderr, without a
    traceback;
  * run_pair_timed runs its two copies at once (each stand-in writes when it started and ended, then
    sleeps: the two intervals overlap), returns their mean CPU, and names a copy that fails;
  * over bench/*.py, every os.wait4 (a measured process's rusage) is spawn_timed's (or run_pair_timed's,
    which spawns the same way), and every os.fork is
    listed with why it measures nothing of its child's rusage: a new benchmark cannot fork what it times.

Usage: phase_medians_check.py SOURCE_DIR
"""
import os
import subprocess
import sys
import tempfile


def main():
    src = sys.argv[1]
    script = os.path.join(src, "bench", "phase_medians.py")
    failures = []

    def run(*variants, runs=1):
        return subprocess.run([sys.executable, script, "--data", tmp, "--runs", str(runs), *variants],
                              capture_output=True, text=True, timeout=60)

    def check(what, cond, p):
        if not cond:
            failures.append("%s: exit %d\nstdout: %s\nstderr: %s" % (what, p.returncode, p.stdout, p.stderr))

    with tempfile.TemporaryDirectory() as tmp:
        def executable(name, text):
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o755)
            return path

        # Run k (1, 2, 3) prints a corpus phase of 10, 30, 20 ms wall and 1, 3, 2 ms CPU.
        counter = os.path.join(tmp, "count")
        timed = executable("timed.sh", "#!/bin/sh\n"
                           "n=$(cat %s 2>/dev/null || echo 0); n=$((n + 1)); echo $n > %s\n"
                           "case $n in 1) w=10.0 c=1.0;; 2) w=30.0 c=3.0;; *) w=20.0 c=2.0;; esac\n"
                           "echo \"[timing] corpus       $w ms  cpu $c ms  rss 1.0 MB  peak 1.0 MB\" >&2\n"
                           % (counter, counter))
        p = run(timed, runs=3)
        line = next((l for l in p.stdout.splitlines() if l.strip().startswith("corpus wall")), "")
        check("medians", p.returncode == 0 and line.split()[-1] == "20.0", p)
        line = next((l for l in p.stdout.splitlines() if l.strip().startswith("corpus cpu")), "")
        check("CPU medians", p.returncode == 0 and line.split()[-1] == "2.0", p)

        # The phase's time from the environment: each variant's own settings, the script's KPLAB_TIMING.
        from_env = executable("env.sh", "#!/bin/sh\n"
                              "[ \"$KPLAB_TIMING\" = 1 ] || exit 4\n"
                              "echo \"[timing] corpus       ${KPLAB_FAKE_MS:-5}.0 ms  cpu 1.0 ms  rss 1.0 MB  "
                              "peak 1.0 MB\" >&2\n")
        p = run("KPLAB_FAKE_MS=7 " + from_env, "KPLAB_TIMING=0 KPLAB_FAKE_MS=9 " + from_env, from_env, runs=2)
        line = next((l for l in p.stdout.splitlines() if l.strip().startswith("corpus wall")), "")
        check("settings", p.returncode == 0 and line.split()[-3:] == ["7.0", "9.0", "5.0"], p)
        check("system time row", p.returncode == 0 and any(l.strip().startswith("process sys")
                                                           for l in p.stdout.splitlines()), p)

        plain = os.path.join(tmp, "plain.txt")
        with open(plain, "w") as f:
            f.write("not a program\n")
        for variant in (plain + "::--metrics exact", os.path.join(tmp, "missing"), "env X=1 " + timed,
                        "1X=2 " + timed):
            p = run(variant)
            check("refused %r" % variant, p.returncode == 1 and "not an executable file" in p.stderr
                  and repr(variant) in p.stderr and "Traceback" not in p.stderr, p)

        # Settings with nothing after them (the binary forgotten): named as such, not as an empty path.
        for variant in ("KPLAB_FAKE_MS=7 ", "KPLAB_FAKE_MS=7  ::--metrics exact"):
            p = run(variant)
            check("no binary %r" % variant, p.returncode == 1 and "settings but no binary" in p.stderr
                  and repr(variant) in p.stderr and "Traceback" not in p.stderr, p)

        no_interpreter = executable("nointerp.sh", "#!/no/such/interpreter\n")
        p = run(no_interpreter)
        check("cannot start", p.returncode == 1 and "cannot run %s: No such file or directory" % no_interpreter
              in p.stderr and "Traceback" not in p.stderr, p)

        failing = executable("fails.sh", "#!/bin/sh\necho 'kplab: something is wrong' >&2\nexit 3\n")
        p = run(failing)
        check("fails", p.returncode == 1 and "failed: kplab: something is wrong" in p.stderr
              and "Traceback" not in p.stderr, p)

    failures += spawn_failures(src)
    for f in failures:
        print("FAIL", f, file=sys.stderr)
    if failures:
        sys.exit(1)
    print("phase_medians_check: medians, settings and 8 refusals as expected; the measured processes are "
          "the programs' own")


# Where bench/*.py may call os.wait4 and os.fork (file, function), and why.
WAIT4_ALLOWED = {
    ("benchlib.py", "spawn_timed"): "the one start of a measured process",
    ("benchlib.py", "run_pair_timed"): "two measured processes at once, spawned the same way",
    ("test_tier_cpu.py", "run"): "whole ctest commands (seconds each) through Popen, which vforks; needs cwd",
}
FORK_ALLOWED = {
    ("transformer_torch.py", "main"): "the peer's worker pool; each worker times itself (process_time)",
}


def calls_by_function(path, name):
    """(function, line) of every call of os.NAME in the Python file path."""
    import ast
    tree = ast.parse(open(path).read(), path)
    found = []

    def visit(node, func):
        for child in ast.iter_child_nodes(node):
            f = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and child.func.attr == name
                    and isinstance(child.func.value, ast.Name) and child.func.value.id == "os"):
                found.append((func, child.lineno))
            visit(child, f)
    visit(tree, None)
    return found


def spawn_failures(src):
    import statistics
    bench = os.path.join(src, "bench")
    sys.path.insert(0, bench)
    import benchlib
    failures = []

    # The harness's own work is not the measured process's: page faults of /bin/true.
    spawned = statistics.median(benchlib.spawn_timed(["/bin/true"])[2].ru_minflt for _ in range(7))
    timed = []
    for _ in range(7):
        p = subprocess.run(["/usr/bin/time", "-f", "%R", "/bin/true"], capture_output=True, text=True)
        timed.append(int(p.stderr.strip().splitlines()[-1]))
    if spawned > statistics.median(timed):
        failures.append("spawn_timed: /bin/true took %d page faults, /usr/bin/time counts %d"
                        % (spawned, statistics.median(timed)))
    print("phase_medians_check: /bin/true spawned takes %d page faults, /usr/bin/time counts %d"
          % (spawned, statistics.median(timed)))

    # run_timed's refusals.
    with tempfile.TemporaryDirectory() as tmp:
        failing = os.path.join(tmp, "fails.sh")
        with open(failing, "w") as f:
            f.write("#!/bin/sh\necho 'something is wrong' >&2\nexit 3\n")
        os.chmod(failing, 0o755)
        for cmd, expected in (([os.path.join(tmp, "missing")], "cannot run: No such file or directory"),
                              ([failing], "failed (exit 3): something is wrong")):
            p = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, %r); import benchlib; "
                                "benchlib.run_timed(%r)" % (bench, cmd)], capture_output=True, text=True)
            if p.returncode != 1 or expected not in p.stderr or "Traceback" in p.stderr:
                failures.append("run_timed(%r): exit %d, stderr %r" % (cmd, p.returncode, p.stderr))

    # run_pair_timed: the two copies overlap in time; the CPU is their mean; a failure is named.
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "log")
        stand_in = os.path.join(tmp, "pair.sh")
        with open(stand_in, "w") as f:
            f.write("#!/bin/sh\necho start $(date +%%s.%%N) >> %s\nsleep 0.3\necho end $(date +%%s.%%N) >> %s\n"
                    % (log, log))
        os.chmod(stand_in, 0o755)
        wall, cpu = benchlib.run_pair_timed([stand_in])
        events = [line.split() for line in open(log)]
        if [e[0] for e in events] != ["start", "start", "end", "end"] or not (0.3 <= wall < 0.6) or cpu > 0.3:
            failures.append("run_pair_timed: events %r, wall %.3f s, CPU %.3f s (expected both started before "
                            "either ended)" % (events, wall, cpu))
        with open(stand_in, "w") as f:
            f.write("#!/bin/sh\nexit 5\n")
        p = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, %r); import benchlib; "
                            "benchlib.run_pair_timed([%r])" % (bench, stand_in)], capture_output=True, text=True)
        if p.returncode != 1 or "failed (exit 5), run two at once" not in p.stderr or "Traceback" in p.stderr:
            failures.append("run_pair_timed of a failing program: exit %d, stderr %r" % (p.returncode, p.stderr))

    # Over the whole bench/ directory: who waits for a process's rusage, who forks.
    for name, allowed in (("wait4", WAIT4_ALLOWED), ("fork", FORK_ALLOWED)):
        seen = set()
        for file in sorted(os.listdir(bench)):
            if file.endswith(".py"):
                for func, line in calls_by_function(os.path.join(bench, file), name):
                    seen.add((file, func))
                    if (file, func) not in allowed:
                        failures.append("bench/%s:%d: os.%s in %s (measured processes start through "
                                        "benchlib.spawn_timed)" % (file, line, name, func))
        for gone in sorted(set(allowed) - seen):
            failures.append("listed os.%s in bench/%s %s is gone: take it off the list" % (name, gone[0], gone[1]))
    return failures


if __name__ == "__main__":
    main()
