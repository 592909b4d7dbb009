#!/usr/bin/env python3
"""The instructions kplab executes, counted by valgrind's callgrind: an A/B that needs no quiet machine.

    instructions.py --data DIR [--docs N] [--least-work BIN] [--top N] VARIANT...

A VARIANT is bench/phase_medians.py's, [NAME=VALUE ...] BINARY::OPTIONS: that binary runs `eval --dataset
KP20k --predictions catSeqTG-2RF1 seed 1234 --no-store --output csv OPTIONS` under `valgrind
--tool=callgrind`, once (--docs N: N documents of tagged KP20k copies, as phase_medians.py --docs).
A one-thread run executes the same instructions every time but for some tens of thousands (Lua's hash
seed, the addresses the system hands out and the environment change from run to run: 353,444,757 to
353,458,192 over eight runs of `--metrics exact --threads 1` on KP20k, 0.004%), where
this machine's wall and CPU times move by 5-8% from one round to the next (bench/README.md), more than
most single changes to the build save. Give --threads 1: a two-thread run's count also moves with how its
threads meet. A count is not a time (a cache miss costs no instruction): the benchmarks' ratios remain
the verdicts.

Prints each variant's count, and from the second on its ratio to the first. --least-work BIN also
counts bench/least_work.cc's program on the same files and gives each variant's ratio to it. --top N
prints, for each variant, the N functions whose calls cost the most instructions counted with
everything they call (callgrind_annotate --inclusive), leaving out the program's entry (main and what
calls it) and the chain of calls that holds nearly the whole run (above 90%).

Needs valgrind (scripts/test.sh installs it). Exit status 1 with the command's own error output when a
run fails.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

PROG = "instructions.py"
ENTRY_CHAIN = 90.0  # percent: functions above it are the chain of calls that holds nearly the whole run


def count(cmd, env, out_file):
    """Runs cmd under callgrind; returns the instructions it executed."""
    full = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out_file] + cmd
    p = subprocess.run(full, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
    if p.returncode != 0:
        # valgrind's own lines start with ==PID==; the program's are what says why it failed.
        own = "\n".join(line for line in p.stderr.splitlines() if not line.startswith("=="))
        sys.exit("%s: %s failed (exit %d): %s" % (PROG, " ".join(cmd), p.returncode, own.strip()[-600:]))
    m = re.search(r"Collected : (\d+)", p.stderr)
    if not m:
        sys.exit("%s: valgrind gave no count for %s: %s" % (PROG, " ".join(cmd), p.stderr.strip()[-600:]))
    return int(m.group(1))


def short_name(name):
    """A demangled name without its template arguments, parameter lists and qualifiers:
    kplab::(anonymous namespace)::Builder::Doc(unsigned long, ...) -> kplab::Builder::Doc."""
    name = name.replace("(anonymous namespace)::", "")
    out, depth = [], 0
    for c in name:
        if c in "<({":
            depth += 1
        elif c in ">)}" and depth > 0:
            depth -= 1
        elif depth == 0:
            out.append(c)
    return re.sub(r"\s+const$", "", "".join(out)).strip()


def top_functions(out_file, n):
    """The n costliest functions of a callgrind output, inclusive, below the entry chain: (count, share, name)."""
    p = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out_file],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    if p.returncode != 0:
        sys.exit("%s: callgrind_annotate failed: %s" % (PROG, p.stderr.strip()[-400:]))
    rows = []
    for line in p.stdout.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*([\d.]+)%\)\s+(\S.*)$", line)
        if not m or m.group(3) == "PROGRAM TOTALS" or float(m.group(2)) >= ENTRY_CHAIN:
            continue
        name = re.sub(r" \[[^\]]*\]$", "", m.group(3))  # the object file
        name = name.split(":", 1)[1] if ":" in name else name  # the source file
        if name in ("main", "(below main)") or name.startswith(("__libc_start", "0x")):
            continue  # the program's entry, and the loader's unnamed one
        rows.append((int(m.group(1).replace(",", "")), float(m.group(2)), short_name(name)))
        if len(rows) == n:
            break
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="the shared data directory")
    ap.add_argument("--docs", type=int, default=0, help="N documents of tagged KP20k copies (0: KP20k itself)")
    ap.add_argument("--least-work", help="bench/least_work.cc's program, counted on the same files")
    ap.add_argument("--top", type=int, default=0, help="the N costliest functions of each variant, inclusive")
    ap.add_argument("variants", nargs="+", help="[NAME=VALUE ...] BINARY::OPTIONS")
    a = ap.parse_args()
    if a.docs < 0 or a.top < 0:
        sys.exit("%s: --docs and --top must be >= 0 (got %d, %d)" % (PROG, a.docs, a.top))
    for tool in ("valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            sys.exit("%s: %s not found: scripts/test.sh installs it (the Debian package valgrind)" % (PROG, tool))
    variants = benchlib.parse_variants(a.variants, PROG)
    if a.least_work and not (os.path.isfile(a.least_work) and os.access(a.least_work, os.X_OK)):
        sys.exit("%s: --least-work %s: not an executable file" % (PROG, a.least_work))
    gold = os.path.join(a.data, "kpg_testsets_meng2017", "kp20k")
    keywords = os.path.join(gold, "word_kp20k_testing_allkeywords.txt")
    pred = os.path.join(a.data, "predictions", "catSeqTG-2RF1", "kp20k", "seed1234.txt")
    for f in (keywords, pred):
        if not os.path.isfile(f):
            sys.exit("%s: %s not found (--data is the shared data directory)" % (PROG, f))
    name = "KP20k"
    with tempfile.TemporaryDirectory(prefix="kplab-ir.") as tmp:
        if a.docs:
            gold, keywords, pred = benchlib.tagged_copies(keywords, pred, a.docs, tmp)
            name = "%s documents (tagged KP20k copies)" % format(a.docs, ",")
        base = None
        if a.least_work:
            base = count([a.least_work, keywords, pred], dict(os.environ), os.path.join(tmp, "lw.out"))
        print("%s: instructions executed (valgrind --tool=callgrind)" % name)
        if base is not None:
            print("  %-50s %15s" % ("least work (" + a.least_work + ")", format(base, ",")))
        first = None
        for i, (label, binary, opts, settings) in enumerate(variants):
            cmd = [binary, "eval", "--dataset", gold, "--predictions", pred, "--no-store", "--output", "csv"] + opts
            out_file = os.path.join(tmp, "cg.%d.out" % i)
            n = count(cmd, dict(os.environ, **settings), out_file)
            first = n if first is None else first
            line = "  [%d] %-46s %15s" % (i, label, format(n, ","))
            if i > 0:
                line += "  %.4fx [0]" % (n / first)
            if base:
                line += "  %.2fx least work" % (n / base)
            print(line)
            for ir, share, fn in top_functions(out_file, a.top) if a.top else []:
                print("        %15s %5.1f%%  %s" % (format(ir, ","), share, fn))


if __name__ == "__main__":
    main()
