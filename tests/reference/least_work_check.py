#!/usr/bin/python3
"""bench/least_work.cc (the yardstick of bench/least_work_ratio.py), with and without --intern, against
P/R/F1 worked out by hand, against kplab, and on the input it promises to refuse.

Checks, against expectations written here:
  * two documents worked by hand (below): a stem match ("Neural Networks" and "neural network"), a
    repeated prediction (the first kept), a "<peos>" piece (dropped), a miss, and a key met again in the
    second document. Both modes print the 12 values below, and so does `kplab eval --metrics exact` on
    the same files; --intern, which matches by the keys' corpus-wide ids, reports 4 distinct keys
    (neural network, support vector machin, svm, deep learn) of the 8 it kept, so a key met again
    must get the id it had (an id per key kept would be 8);
  * a second hand case: tokens longer than the 16 bytes read at once (the long-token path), a key met
    again in a differently cased piece, and files whose last line has no line end: 2 distinct keys of
    5 kept, the values below, and kplab's;
  * on KP20k itself (the shared data), both modes print the text kplab's CSV gives, digit for digit;
  * hostile input: a non-ASCII byte (file:line), files of different line counts, an empty keywords or
    predictions file, a missing file, a directory, a FIFO with no writer (refused at once, not waited
    on), an unknown option in either place -- each an error with the text below and exit status 1 (2
    for usage), within a 10 s limit.

Usage: least_work_check.py LEAST_WORK_BINARY KPLAB_BINARY SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

GOLD = "Neural Networks;support vector machine\nneural network\n"
PREDS = "neural network;svm;support vector machines;neural networks\n<peos>;deep learning;neural network\n"
# Document 1: references {neural network, support vector machin}; predictions after the profile's
# filters and first-wins dedup: neural network (hit), svm, support vector machin (hit): n = 3, 2 hits.
#   @5: P = 2/5, R = 2/2, F1 = 2(0.4)(1)/1.4 = 4/7;  @M (k = n = 3): P = 2/3, R = 1, F1 = 0.8.
# Document 2: reference {neural network}; "<peos>" dropped; deep learn, neural network (hit): n = 2.
#   @5: P = 1/5, R = 1, F1 = 2(0.2)/1.2 = 1/3;  @M: P = 1/2, R = 1, F1 = 2(0.5)/1.5 = 2/3.
# Micro: hits 3 of pden 10 (@5) and 5 (@M), rden 3.  Macro: the documents' means.
WANT = {
    "all.p@5.micro": 3 / 10, "all.r@5.micro": 3 / 3, "all.f1@5.micro": 2 * 0.3 * 1 / 1.3,
    "all.p@5.macro": (2 / 5 + 1 / 5) / 2, "all.r@5.macro": 1.0, "all.f1@5.macro_doc": (4 / 7 + 1 / 3) / 2,
    "all.p@M.micro": 3 / 5, "all.r@M.micro": 1.0, "all.f1@M.micro": 2 * 0.6 / 1.6,
    "all.p@M.macro": (2 / 3 + 1 / 2) / 2, "all.r@M.macro": 1.0, "all.f1@M.macro_doc": (0.8 + 2 / 3) / 2,
}
# The second case, without a final line end in either file. "electroencephalographic" (23 bytes) is
# read by the long-token path; "recordings" and "Recording" stem to the reference's "record".
# Document 1: reference {electroencephalograph record}; predictions: it (hit), x: n = 2, 1 hit.
#   @5: P = 1/5, R = 1, F1 = 1/3;  @M: P = 1/2, R = 1, F1 = 2/3.
# Document 2: the same reference; prediction "Electroencephalographic Recording" (hit): n = 1.
#   @5: P = 1/5, R = 1, F1 = 1/3;  @M: P = 1, R = 1, F1 = 1.
# Micro: hits 2 of pden 10 (@5) and 3 (@M), rden 2. Kept keys: 1 + 2 + 1 + 1 = 5, distinct 2.
LONG_GOLD = "electroencephalographic recording\nelectroencephalographic recording"
LONG_PREDS = "electroencephalographic recordings;x\nElectroencephalographic Recording"
LONG_WANT = {
    "all.p@5.micro": 2 / 10, "all.r@5.micro": 1.0, "all.f1@5.micro": 2 * 0.2 / 1.2,
    "all.p@5.macro": 1 / 5, "all.r@5.macro": 1.0, "all.f1@5.macro_doc": 1 / 3,
    "all.p@M.micro": 2 / 3, "all.r@M.micro": 1.0, "all.f1@M.micro": 2 * (2 / 3) / (5 / 3),
    "all.p@M.macro": (1 / 2 + 1) / 2, "all.r@M.macro": 1.0, "all.f1@M.macro_doc": (2 / 3 + 1) / 2,
}


def parse_lw(text):
    return {k: v for k, v in (line.split() for line in text.splitlines() if line.strip())}


def parse_csv(text):
    return {k: v for k, v in (line.split(",", 1) for line in text.splitlines()[1:] if "," in line)}


def main():
    lw, kplab, source = (os.path.abspath(a) for a in sys.argv[1:4])
    data = os.path.normpath(os.path.join(source, "..", "shared", "data"))
    tmp = tempfile.mkdtemp(prefix="kplab_least_work_")
    failures = []

    def write(name, text, mode="w"):
        path = os.path.join(tmp, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, mode) as f:
            f.write(text)
        return path

    def run(*args, timeout=120):
        try:
            return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(list(args), -1, "", "(no answer within %d s)" % timeout)

    def kplab_exact(dataset, preds):
        r = run(kplab, "eval", "--dataset", dataset, "--predictions", preds, "--no-store", "--output", "csv",
                "--metrics", "exact")
        if r.returncode != 0:
            sys.exit("kplab eval failed (%d): %s" % (r.returncode, r.stderr))
        return parse_csv(r.stdout)

    try:
        def hand_case(name, gold_text, preds_text, want, distinct):
            gold = write(name + "/word_" + name + "_testing_allkeywords.txt", gold_text)
            preds = write(name + "_preds.txt", preds_text)
            theirs = kplab_exact(os.path.dirname(gold), preds)
            for k, v in want.items():
                if abs(float(theirs.get(k, "nan")) - v) > 1e-12:
                    failures.append("kplab on %s: %s = %s, by hand %r" % (name, k, theirs.get(k), v))
            for mode in ([], ["--intern"]):
                r = run(lw, *mode, gold, preds)
                got = parse_lw(r.stdout)
                interned = [line for line in r.stderr.splitlines() if "distinct keys interned" in line]
                want_interned = ["least_work: %d distinct keys interned" % distinct] if mode else []
                if interned != want_interned:
                    failures.append("least_work %s on %s reports %s, expected %s" % (mode, name, interned,
                                                                                    want_interned))
                if r.returncode != 0 or sorted(got) != sorted(want):
                    failures.append("least_work %s on %s: exit %d, %s %s" % (mode, name, r.returncode, got, r.stderr))
                    continue
                for k, v in want.items():
                    if abs(float(got[k]) - v) > 1e-12:
                        failures.append("least_work %s on %s: %s = %s, by hand %r" % (mode, name, k, got[k], v))
                    if got[k] != theirs.get(k):
                        failures.append("least_work %s on %s: %s = %s, kplab prints %s" % (mode, name, k, got[k],
                                                                                          theirs.get(k)))
            return gold, preds

        gold, preds = hand_case("hand", GOLD, PREDS, WANT, 4)
        hand_case("long", LONG_GOLD, LONG_PREDS, LONG_WANT, 2)

        kp20k = os.path.join(data, "kpg_testsets_meng2017", "kp20k")
        kp20k_preds = os.path.join(data, "predictions", "catSeqTG-2RF1", "kp20k", "seed1234.txt")
        if os.path.isdir(kp20k) and os.path.isfile(kp20k_preds):
            theirs = kplab_exact(kp20k, kp20k_preds)
            for mode in ([], ["--intern"]):
                r = run(lw, *mode, os.path.join(kp20k, "word_kp20k_testing_allkeywords.txt"), kp20k_preds)
                got = parse_lw(r.stdout)
                bad = [k for k in got if got[k] != theirs.get(k)]
                if r.returncode != 0 or len(got) != 12 or bad:
                    failures.append("least_work %s on KP20k: exit %d, %d values, differ: %s" % (mode, r.returncode,
                                                                                                len(got), bad))
        else:
            failures.append("the shared data is not at %s (KP20k and its predictions)" % data)

        # Hostile input: each refused with its file and what was wrong.
        non_ascii = write("non_ascii.txt", "graph theory\nforests;b\xc3\xa9ta\n".encode("latin-1"), "wb")
        short = write("short.txt", "neural network\n")
        empty = write("empty.txt", "")
        fifo = os.path.join(tmp, "fifo")
        os.mkfifo(fifo)  # nobody writes to it: reading it would wait forever
        cases = [
            ([gold, non_ascii], 1, "least_work: %s:2: a non-ASCII byte (this program reads ASCII only)\n" % non_ascii),
            (["--intern", non_ascii, preds], 1,
             "least_work: %s:2: a non-ASCII byte (this program reads ASCII only)\n" % non_ascii),
            ([gold, short], 1, "least_work: %s: fewer lines than %s has (1 read; expected one prediction line per "
                               "document)\n" % (short, gold)),
            ([empty, preds], 1, "least_work: %s: no documents\n" % empty),
            ([gold, empty], 1, "least_work: %s: fewer lines than %s has (0 read; expected one prediction line per "
                               "document)\n" % (empty, gold)),
            ([gold, fifo], 1, "least_work: %s: not a regular file\n" % fifo),
            (["--intern", fifo, preds], 1, "least_work: %s: not a regular file\n" % fifo),
            ([os.path.join(tmp, "missing.txt"), preds], 1,
             "least_work: %s: cannot open\n" % os.path.join(tmp, "missing.txt")),
            ([tmp, preds], 1, "least_work: %s: not a regular file\n" % tmp),
            (["--interned", gold, preds], 2, "usage: least_work [--intern] KEYWORDS_FILE PREDICTIONS_FILE\n"),
            (["--interned", preds], 2, "usage: least_work [--intern] KEYWORDS_FILE PREDICTIONS_FILE\n"),
            ([gold, "--x"], 2, "usage: least_work [--intern] KEYWORDS_FILE PREDICTIONS_FILE\n"),
            (["--intern", "--intern", gold, preds], 2, "usage: least_work [--intern] KEYWORDS_FILE PREDICTIONS_FILE\n"),
            (["--intern", gold], 2, "usage: least_work [--intern] KEYWORDS_FILE PREDICTIONS_FILE\n"),
        ]
        for args, status, message in cases:
            r = run(lw, *args, timeout=10)
            if r.returncode != status or r.stderr != message or r.stdout:
                failures.append("least_work %s: exit %d, stderr %r, stdout %r; expected exit %d, %r" % (
                    args, r.returncode, r.stderr, r.stdout, status, message))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL: " + f)
    if failures:
        sys.exit(1)
    print("least_work_check: two hand cases, KP20k and %d hostile inputs: OK" % len(cases))


if __name__ == "__main__":
    main()
