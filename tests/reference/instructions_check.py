#!/usr/bin/python3
"""bench/instructions.py (instructions counted by callgrind) on a three-document dataset, and its refusals.

Checks, against expectations written here:
  * the same one-thread run counted twice gives counts within 100,000 instructions of each other
    (callgrind counts what runs; only Lua's hash seed, the addresses the system hands out and the
    environment move it, by some tens of thousands: 6,063,005 to 6,080,267 over eight runs of this
    dataset here, 27,000 apart in a CI run beside other tests), and the printed ratio of the second to
    the first is the ratio of the printed counts;
  * --least-work counts the least-work program on the same files and prints each variant's ratio to it,
    the ratio of the printed counts;
  * --top 3 prints three functions under each variant, each below 90% of the run and none of them the
    program's entry (main, __libc_start_main), named without argument lists;
  * refusals, each exit status 1 (2 for argparse's usage) with the text below and no traceback: a run
    that fails (kplab's own error shown), a variant that is not an executable, a missing data directory,
    a negative --top, and valgrind not on PATH (naming scripts/test.sh, which installs it).

Usage: instructions_check.py KPLAB_BINARY LEAST_WORK_BINARY SOURCE_DIR
"""
import os
import re
import subprocess
import sys
import tempfile

GOLD = "neural network;support vector machine\ndeep learning\ngraph;tree search\n"
PREDS = "neural networks;svm\ndeep learning;learning\ntree search;graphs;<peos>;tree\n"


def main():
    kplab, least_work, src = sys.argv[1:4]
    script = os.path.join(src, "bench", "instructions.py")
    failures = []

    def check(what, cond, out=""):
        if not cond:
            failures.append("%s\n%s" % (what, out[-1500:]))

    def run(*args, env=None):
        return subprocess.run([sys.executable, script] + list(args), capture_output=True, text=True, env=env,
                              timeout=300)

    with tempfile.TemporaryDirectory() as data:
        gold_dir = os.path.join(data, "kpg_testsets_meng2017", "kp20k")
        pred_dir = os.path.join(data, "predictions", "catSeqTG-2RF1", "kp20k")
        os.makedirs(gold_dir)
        os.makedirs(pred_dir)
        with open(os.path.join(gold_dir, "word_kp20k_testing_allkeywords.txt"), "w") as f:
            f.write(GOLD)
        with open(os.path.join(pred_dir, "seed1234.txt"), "w") as f:
            f.write(PREDS)
        variant = kplab + "::--metrics exact --threads 1"
        p = run("--data", data, "--least-work", least_work, "--top", "3", variant, variant)
        out = p.stdout + p.stderr
        check("a good run exits 0", p.returncode == 0, out)
        counts = [int(c.replace(",", "")) for c in re.findall(r"^\s+\[\d\] .*?\s([\d,]{7,})", p.stdout, re.M)]
        check("two variants counted", len(counts) == 2, out)
        m = re.search(r"^\s+least work \(.*\)\s+([\d,]+)$", p.stdout, re.M)
        check("the least-work program counted", m is not None, out)
        if len(counts) == 2 and m:
            base = int(m.group(1).replace(",", ""))
            check("the same run counted twice agrees within 100,000", abs(counts[1] - counts[0]) <= 100000, out)
            ratio = re.search(r"\[1\].*\s([\d.]+)x \[0\]", p.stdout)
            check("the second's ratio to the first is the counts' ratio",
                  ratio is not None and abs(float(ratio.group(1)) - counts[1] / counts[0]) < 1e-4, out)
            to_lw = re.findall(r"\s([\d.]+)x least work", p.stdout)
            check("each variant's ratio to the least-work program is the counts' ratio",
                  len(to_lw) == 2 and all(abs(float(r) - c / base) < 0.006 for r, c in zip(to_lw, counts)), out)
        tops = re.findall(r"^\s{8}\s*[\d,]+\s+([\d.]+)%\s+(\S.*)$", p.stdout, re.M)
        check("three functions under each variant", len(tops) == 6, out)
        check("each below 90% and not the entry, named without arguments",
              all(float(s) < 90 and "(" not in n and n.strip() and n not in ("main", "__libc_start_main@@GLIBC_2.34")
                  for s, n in tops), out)

        refusals = [
            ("a run that fails shows kplab's own error",
             ["--data", data, kplab + "::--metrics nosuchmetric --threads 1"], 1,
             ["instructions.py:", "failed (exit", "nosuchmetric"]),
            ("a variant that is not an executable",
             ["--data", data, os.path.join(data, "nothing") + "::--threads 1"], 1, ["not an executable file"]),
            ("a missing data directory", ["--data", os.path.join(data, "none"), variant], 1,
             ["not found (--data is the shared data directory)"]),
            ("a negative --top", ["--data", data, "--top", "-1", variant], 1, ["--docs and --top must be >= 0"]),
        ]
        for what, args, code, texts in refusals:
            p = run(*args)
            check(what, p.returncode == code and all(t in p.stderr for t in texts) and "Traceback" not in p.stderr,
                  p.stdout + p.stderr)
        empty = os.path.join(data, "empty-bin")
        os.mkdir(empty)
        bare = dict(os.environ, PATH=empty)  # the script runs by its path; valgrind is nowhere
        p = run("--data", data, variant, env=bare)
        check("valgrind not on PATH",
              p.returncode == 1 and "valgrind not found: scripts/test.sh installs it" in p.stderr
              and "Traceback" not in p.stderr, p.stdout + p.stderr)
    if failures:
        print("instructions_check: %d failed:\n" % len(failures) + "\n".join(failures))
        return 1
    print("instructions_check: counts agree run to run, ratios are the counts', top functions and 5 refusals "
          "as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
