#!/usr/bin/env python3
"""`kplab runs table --output latex` compiled by Debian's pdflatex (docs/tables.md, "LaTeX").

Scores the README's paper table (catSeq, catSeq-RL, catSeq-GAN, catSeqTG-2RF1 on Inspec, Krapivin and
SemEval; exact matching only, which gives the same F1 as the default metrics) in a fresh store, prints
`--metrics all.f1@5.macro_hm,present.f1@M.macro_hm --baseline catSeq --output latex --fit`, and
compiles it in a standard `article` text block. Checks: pdflatex succeeds with no Overfull/Underfull
box; every number of the table (`--output json`, formatted as the LaTeX prints it) and every label is
on the page (pdftotext); without --fit the same table IS overfull (so the check can see an overflow);
--fit keeps a small table as it is; `--float table*` in a two-column article and `--layout metrics`
fit too. Exit 77 (skipped) without pdflatex, pdftotext or ../shared/data.
Usage: table_pdflatex.py KPLAB_BINARY SOURCE_DIR [KEEP_DIR]  (KEEP_DIR: where to leave the PDFs)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

PREAMBLE = "\\documentclass%s\n\\usepackage{booktabs}\n\\usepackage{graphicx}\n\\begin{document}\n"


def main():
    kplab, source = sys.argv[1], sys.argv[2]
    keep = sys.argv[3] if len(sys.argv) > 3 else None
    data = os.path.join(source, "..", "shared", "data")
    for tool in ("pdflatex", "pdftotext"):
        if not shutil.which(tool):
            print(f"{tool} not found (scripts/test.sh installs it for the tests): skipped")
            return 77
    if not os.path.isdir(data):
        print(f"{data} not found: skipped")
        return 77
    tmp = tempfile.mkdtemp(prefix="kplab_table_latex_")
    db = os.path.join(tmp, "runs.db")

    def run(*args):
        out = subprocess.run([kplab, *args, "--db", db], cwd=source, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"kplab {' '.join(args)} failed ({out.returncode}): {out.stderr}")
        return out.stdout

    for ds in ("inspec", "krapivin", "semeval"):
        extra = ["--refs-stemmed"] if ds == "semeval" else []
        run("eval", "--dataset", f"{data}/kpg_testsets_meng2017/{ds}", *extra, "--metrics", "exact",
            "--output", "csv", "--predictions",
            f"{data}/predictions/{{catSeq,catSeq-RL,catSeq-GAN,catSeqTG-2RF1}}/{ds}/{{predictions,seed*}}.txt")
    table = ["runs", "table", "--metrics", "all.f1@5.macro_hm,present.f1@M.macro_hm", "--baseline", "catSeq"]
    failures = []

    def compile_tex(name, body, cls="{article}"):
        tex = os.path.join(tmp, name + ".tex")
        with open(tex, "w") as f:
            f.write(PREAMBLE % cls + body + "\n\\end{document}\n")
        out = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", name + ".tex"], cwd=tmp,
                             capture_output=True, text=True)
        log = open(os.path.join(tmp, name + ".log"), encoding="latin-1").read()
        if out.returncode != 0:
            failures.append(f"{name}: pdflatex failed:\n{log[-3000:]}")
            return log, ""
        text = subprocess.run(["pdftotext", "-layout", name + ".pdf", "-"], cwd=tmp, capture_output=True,
                              text=True).stdout
        if keep:
            os.makedirs(keep, exist_ok=True)
            shutil.copy(os.path.join(tmp, name + ".pdf"), keep)
        return log, text

    def boxes(log):
        return re.findall(r"(?:Overfull|Underfull) \\[hv]box[^\n]*", log)

    def choice(log):
        m = re.search(r"kplab runs table --fit: ([^\n]*)", log)
        return m.group(1) if m else None

    # The README's table, fitted: no bad box, every number and label on the page.
    log, text = compile_tex("fit", run(*table, "--output", "latex", "--fit"))
    if boxes(log):
        failures.append(f"fit: {boxes(log)}")
    flat = re.sub(r"\s+", " ", text)
    js = json.loads(run(*table, "--output", "json"))
    want = ["F1@5", "F1@M", "Present", "inspec", "krapivin", "semeval", "catSeq", "catSeqTG-2RF1"]
    for row in js["rows"]:
        for cell in row["cells"]:
            if cell is None:
                continue
            want.append(f"{100 * cell['mean']:.1f}")
            if cell["n"] > 1:
                want.append(f"{100 * cell['sd']:.1f}")
    if len(want) < 8 + 4 * 6:
        failures.append(f"only {len(want) - 8} numbers in the table: {js}")
    for w in want:
        if w not in flat:
            failures.append(f"fit: '{w}' is not on the page")
    if f"{js['resamples']} resamples" not in flat or "significantly different from catSeq" not in flat:
        failures.append(f"fit: the note is not on the page: {flat[-600:]}")
    print(f"fit: {choice(log)}; {len(want)} numbers and labels found on the page")

    # Without --fit the same table overflows the text block: the box check above can see it.
    log, _ = compile_tex("plain", run(*table, "--output", "latex"))
    if not any(b.startswith("Overfull \\hbox") for b in boxes(log)):
        failures.append("plain: the unfitted table did not overflow (the check cannot see an overflow)")
    # A table that fits is left as it is.
    log, _ = compile_tex("small", run("runs", "table", "--metrics", "all.f1@5.macro_hm", "--dataset", "inspec",
                                      "--output", "latex", "--fit"))
    if boxes(log) or choice(log) != "as it is":
        failures.append(f"small: {boxes(log)}, choice {choice(log)}")
    # table* across both columns of a two-column page, and metrics over datasets.
    log, _ = compile_tex("wide", run(*table, "--output", "latex", "--fit", "--float", "table*"),
                         cls="[twocolumn]{article}")
    if boxes(log) or "table*" not in open(os.path.join(tmp, "wide.tex")).read():
        failures.append(f"wide: {boxes(log)}")
    log, text = compile_tex("metrics", run(*table, "--output", "latex", "--fit", "--layout", "metrics",
                                           "--label", "inspec=Inspec", "--label", "present=Present keyphrases"))
    if boxes(log) or "Inspec" not in text or "Present keyphrases" not in text:
        failures.append(f"metrics: {boxes(log)}; {text[:400]}")
    for f in failures:
        print("FAIL", f)
    shutil.rmtree(tmp)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
