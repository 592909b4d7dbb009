#!/usr/bin/env python3
"""`kplab help` and the docs agree, both ways (docs/cli.md).

Usage: cli_docs.py KPLAB SOURCE_DIR
  1. Every command `kplab help` lists has a section "## kplab COMMAND" in docs/cli.md, and every such
     section names a listed command.
  2. Every option (--name, -x) and subcommand that `kplab help COMMAND` prints appears in that section.
  3. Every option that section mentions is one `kplab help COMMAND` prints.
  4. In README.md and docs/*.md, every command line in code (a ```sh block line or a `code span`
     starting `kplab WORD` or `build/host/kplab WORD`) names a listed command, and each of its options
     is one that command's help prints (for `kplab run`, only the options before the script, which
     belong to kplab; the script's own come after it). docs/design-notes.md is left out: it is history
     and names commands that were considered and not built.
Failures name FILE:LINE (or the command) and what is missing. A self-check on made-up help and docs
runs first, so that a check that accepts everything cannot pass.
"""
import re
import subprocess
import sys
from pathlib import Path

OPTION = re.compile(r"(?<![\w\-./])(--[a-z][a-z0-9\-]*|-[a-zA-Z])(?![\w\-])")
SECTION = re.compile(r"^## kplab ([a-z]+)\s*$", re.M)
UNIVERSAL = {"--help", "-h"}  # every command takes them (`kplab COMMAND --help` is `kplab help COMMAND`)


def listed_commands(usage):
    block = usage.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    return [m.group(1) for m in re.finditer(r"^  ([a-z]+)\s{2,}\S", block, re.M)]


def subcommands(cmd, text):
    subs = set()
    for line in text.split("\n"):
        if not line.startswith(f"kplab {cmd} "):
            continue
        head = re.split(r" \[| --", line[len(f"kplab {cmd} "):], maxsplit=1)[0]
        for piece in head.split("|"):
            word = piece.strip().split(" ")[0]
            if re.fullmatch(r"[a-z]+", word):
                subs.add(word)
    return subs


def sections(doc):
    out = {}
    matches = list(SECTION.finditer(doc))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(doc)
        out[m.group(1)] = doc[m.end():end]
    return out


def check_sections(usage, helps, doc, doc_name):
    problems = []
    commands = listed_commands(usage)
    secs = sections(doc)
    for cmd in commands:
        if cmd not in secs:
            problems.append(f"{doc_name}: no section '## kplab {cmd}' for a command `kplab help` lists")
            continue
        text = secs[cmd]
        for opt in sorted(set(OPTION.findall(helps[cmd]))):
            if not re.search(r"(?<![\w\-])" + re.escape(opt) + r"(?![\w\-])", text):
                problems.append(f"{doc_name}: section kplab {cmd} does not mention {opt} (kplab help {cmd})")
        for sub in sorted(subcommands(cmd, helps[cmd])):
            if not re.search(r"\b" + re.escape(sub) + r"\b", text):
                problems.append(f"{doc_name}: section kplab {cmd} does not mention subcommand {sub}")
        for opt in sorted(set(OPTION.findall(text)) - set(OPTION.findall(helps[cmd])) - UNIVERSAL):
            problems.append(f"{doc_name}: section kplab {cmd} documents {opt}, which `kplab help {cmd}` does not print")
    for cmd in secs:
        if cmd not in commands:
            problems.append(f"{doc_name}: section '## kplab {cmd}' names no command `kplab help` lists")
    return problems


def command_lines(md_text):
    """(line number, text after 'kplab ') of each command line in code."""
    out = []
    fence = None
    for n, line in enumerate(md_text.split("\n"), 1):
        if line.startswith("```"):
            fence = None if fence is not None else line[3:].strip()
            continue
        if fence in ("sh", "bash", "console", "shell"):
            for part in re.split(r"&&|;|\$\(|\|(?!\|)", line.split(" #")[0]):
                m = re.match(r"\s*(?:\$ )?(?:\S*/)?kplab ([a-z].*)", part)
                if m and not part.strip().startswith(("echo", "#")):
                    out.append((n, m.group(1)))
        elif fence is None:
            for span in re.findall(r"`([^`\n]+)`", line):
                m = re.match(r"(?:\S*/)?kplab ([a-z].*)", span)
                if m:
                    out.append((n, m.group(1)))
    return out


def check_command_lines(usage, helps, md_text, md_name):
    problems = []
    commands = set(listed_commands(usage))
    for n, rest in command_lines(md_text):
        words = rest.split()
        cmd = words[0]
        if cmd not in commands:
            problems.append(f"{md_name}:{n}: `kplab {cmd}`: no such command (kplab help)")
            continue
        if cmd == "run":  # options after the script are the script's
            words = words[:next((i for i, w in enumerate(words) if w.endswith(".lua")), len(words))]
        known = set(OPTION.findall(helps[cmd])) | UNIVERSAL
        for opt in OPTION.findall(" ".join(words[1:])):
            if opt not in known:
                problems.append(f"{md_name}:{n}: `kplab {cmd} ... {opt}`: not an option `kplab help {cmd}` prints")
    return problems


def self_check():
    usage = "usage: kplab <command>\n\ncommands:\n  eval   score\n  runs   runs\n\nexit codes: ...\n"
    helps = {"eval": "kplab eval --dataset PATH [--old]\n  -k N\n",
             "runs": "kplab runs list|show ID [--db FILE]\n"}
    doc = ("## kplab eval\n\n--dataset, -k and --gone\n\n## kplab runs\n\nlist and --db\n\n"
           "## kplab ghost\n\nnothing\n")
    found = sorted(p.split(": ", 1)[1] for p in check_sections(usage, helps, doc, "d"))
    expected = ["section '## kplab ghost' names no command `kplab help` lists",
                "section kplab eval documents --gone, which `kplab help eval` does not print",
                "section kplab eval does not mention --old (kplab help eval)",
                "section kplab runs does not mention subcommand show"]
    if found != expected:
        sys.exit(f"{__file__}: self-check (sections) found {found}, expected {expected}")
    md = "```sh\nkplab eval --dataset d --nope\nkplab frob\n```\nsee `kplab runs list --db x`\n"
    found = [p.split(": ", 1)[1] for p in check_command_lines(usage, helps, md, "m")]
    if len(found) != 2 or "--nope" not in found[0] or "frob" not in found[1]:
        sys.exit(f"{__file__}: self-check (command lines) found {found}")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: cli_docs.py KPLAB SOURCE_DIR")
    self_check()
    kplab, root = sys.argv[1], Path(sys.argv[2])

    def run(*args):
        return subprocess.run([kplab, *args], check=True, capture_output=True, text=True).stdout

    usage = run("help")
    commands = listed_commands(usage)
    if len(commands) < 8:
        sys.exit(f"{__file__}: `kplab help` lists {commands}; expected the whole command list")
    helps = {c: run("help", c) for c in commands}
    # Subcommands with a help text of their own (kplab help runs table) add their options to the command's.
    for c in commands:
        for sub in subcommands(c, helps[c]):
            text = run("help", c, sub)
            if text != helps[c]:
                helps[c] += text
    cli_md = root / "docs/cli.md"
    problems = check_sections(usage, helps, cli_md.read_text(encoding="utf-8"), str(cli_md))
    # design-notes.md is history: it names commands that were considered and not built.
    for md in [root / "README.md"] + sorted(p for p in (root / "docs").glob("*.md") if p.name != "design-notes.md"):
        problems += check_command_lines(usage, helps, md.read_text(encoding="utf-8"), str(md))
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        sys.exit(f"{len(problems)} disagreements between `kplab help` and the docs")
    print(f"{len(commands)} commands: docs/cli.md and every command line in the docs agree with `kplab help`")


if __name__ == "__main__":
    main()
