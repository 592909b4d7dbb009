#!/usr/bin/env python3
"""Every profile `kplab profiles` lists is named in README.md, docs/profiles.md and `kplab help eval`.

Usage: profiles_listed.py KPLAB SOURCE_DIR
A profile name counts in a document when it appears there as a code span (`kpeval`); in the help text,
as a word of the `--profile P` entry. Failures name the profile and the place that lacks it. A
self-check on a made-up listing runs first.
"""
import re
import subprocess
import sys
from pathlib import Path


def names(listing):
    return [line.split()[0] for line in listing.split("\n") if line.strip()]


def profile_entry(help_eval):
    """The text of the --profile entry of `kplab help eval` (its line and the indented lines after)."""
    m = re.search(r"^  --profile P\s+(.*(?:\n {20,}.*)*)", help_eval, re.M)
    return m.group(1) if m else ""


def missing(profiles, docs, help_eval):
    out = []
    entry = re.split(r"[\s,()]+", profile_entry(help_eval))
    for p in profiles:
        for name, text in docs.items():
            if f"`{p}`" not in text:
                out.append(f"{name}: profile {p} (kplab profiles) is not named (as `{p}`)")
        if p not in entry:
            out.append(f"kplab help eval: --profile does not list {p}")
    return out


def self_check():
    found = missing(["a", "b+c"], {"R": "`a` and `b+c`", "P": "`a` only"},
                    "  --profile P             a (default),\n                          b\n")
    if found != ["P: profile b+c (kplab profiles) is not named (as `b+c`)", "kplab help eval: --profile does not list b+c"]:
        sys.exit(f"{__file__}: self-check found {found}")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: profiles_listed.py KPLAB SOURCE_DIR")
    self_check()
    kplab, root = sys.argv[1], Path(sys.argv[2])
    run = lambda *a: subprocess.run([kplab, *a], check=True, capture_output=True, text=True).stdout
    profiles = names(run("profiles"))
    if len(profiles) < 5 or "kplab" not in profiles:
        sys.exit(f"{__file__}: `kplab profiles` listed {profiles}; expected the default and the peers'")
    docs = {str(root / f): (root / f).read_text(encoding="utf-8") for f in ("README.md", "docs/profiles.md")}
    problems = missing(profiles, docs, run("help", "eval"))
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        sys.exit(f"{len(problems)} places without a profile")
    print(f"{len(profiles)} profiles ({', '.join(profiles)}): each in the README, docs/profiles.md and kplab help eval")


if __name__ == "__main__":
    main()
