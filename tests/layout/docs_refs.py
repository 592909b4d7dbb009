#!/usr/bin/env python3
"""The docs' links and file references resolve (docs/testing.md, "Layout checks").

Usage: docs_refs.py SOURCE_DIR
Reads README.md, docs/*.md and bench/README.md and fails, naming FILE:LINE, on
  - a Markdown link [text](target) to a file or folder of the repository that does not exist, or to an
    anchor (#section) that no heading of the target file produces (GitHub's heading slugs);
  - a file path in backticks under one of the repository's top folders (`core/src/cache/ann.cc`,
    `tests/layout/docs_refs.py`, `docs/cli.md`) that does not exist. A path with a placeholder
    (NAME, <x>, *, ..., {a,b}, a one-letter file name such as plugins/x.lua) is a pattern, not a reference, and is not checked;
    a `path:LINE` or `path:Function` suffix is dropped first.
And in the sources (core/, host/, plot/, plugins/, tests/, scripts/, bench/, cmake/, .ci/, CMakeLists.txt; of the
fixtures under data/ folders, only their Markdown READMEs), a
comment or string citing docs/NAME.md names a document that exists (a comment once cited docs/cli.md,
which did not). Neither the documents nor the sources cite an issue by number ("issue N", "issues N and
M"): the tracker those numbers belong to is not in the repository, so a reader cannot follow them; a text
names the decision, target or design note instead. Another project's issue is cited by its URL
(`.../issues/N`), which this does not flag. External links (http:, https:, mailto:) are not fetched.
Before reading the docs it checks itself on made-up text (a missing file, a missing anchor, a good link, a
pattern, issue citations and look-alikes) so that it cannot pass by accepting everything.
"""
import re
import sys
import tempfile
from pathlib import Path

TOP = ("core", "host", "plot", "plugins", "tests", "docs", "scripts", "bench", "examples", "cmake", ".ci")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE = re.compile(r"`([^`\n]+)`")
PLACEHOLDER = re.compile(r"[<>*{}$]|\.\.\.|\b[A-Z]{2,}\b|\bN\b|XX|/$|/[a-z]\.\w+$")  # x.lua: an example name


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, out = {}, set()
        in_code = False
        for line in path.read_text(encoding="utf-8").split("\n"):
            if line.startswith("```"):
                in_code = not in_code
            if in_code:
                continue
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                out.add(s if n == 0 else f"{s}-{n}")
            for a in re.findall(r'<a (?:name|id)="([^"]+)"', line):
                out.add(a)
        cache[path] = out
    return cache[path]


def check_file(md, root):
    text = md.read_text(encoding="utf-8")
    problems = issue_cites(md, text)  # code blocks included
    in_code = False
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue
            path_part, _, anchor = target.partition("#")
            dest = (md.parent / path_part).resolve() if path_part else md
            if path_part and not dest.exists():
                problems.append(f"{md}:{n}: link to {target}: no such file or folder")
            elif anchor and dest.is_file() and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{md}:{n}: link to {target}: {dest.name} has no heading with anchor #{anchor}")
        for code in CODE.findall(re.sub(LINK, "", line)):
            ref = code.strip().split()[0] if code.strip() else ""
            if " " in code.strip() or not ref.startswith(tuple(t + "/" for t in TOP)):
                continue
            ref = re.sub(r":[\w:.\-]*$", "", ref).rstrip(".,;")
            if PLACEHOLDER.search(ref):
                continue
            if not (root / ref).exists():
                problems.append(f"{md}:{n}: `{code}`: no such file or folder in the repository")
    return problems


DOC_CITE = re.compile(r"\bdocs/([\w\-]+\.md)")
ISSUE_CITE = re.compile(r"\bissues? ?#?\d+", re.IGNORECASE)


def issue_cites(path, text):
    return [f"{path}:{n}: cites {m.group(0)!r} of a tracker that is not in the repository (name the decision, "
            "target or docs/design-notes.md note instead)"
            for n, line in enumerate(text.split("\n"), 1) for m in ISSUE_CITE.finditer(line)]


def check_sources(root):
    problems = []
    files = [root / "CMakeLists.txt"] + [p for d in ("core", "host", "plot", "plugins", "tests", "scripts", "bench",
                                                     "cmake", ".ci") for p in sorted((root / d).rglob("*"))]
    for path in files:
        if path.resolve() == Path(__file__).resolve():
            continue  # its own examples
        in_data = "data" in path.relative_to(root).parts[:2] and path.suffix != ".md"
        if not path.is_file() or in_data or path.suffix in (".gz", ".db", ".bin"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.split("\n"), 1):
            for name in DOC_CITE.findall(line):
                if not (root / "docs" / name).exists():
                    problems.append(f"{path}:{n}: cites docs/{name}, which does not exist")
        problems += issue_cites(path, text)
    return problems


def self_check():
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / "docs").mkdir()
        (root / "docs/a.md").write_text("# Title\n\n## Two words\n")
        (root / "docs/b.md").write_text(
            "[ok](a.md#two-words) [bad](missing.md) [anchor](a.md#nope) `docs/a.md` `docs/gone.md` "
            "`tests/NAME.py` `plugins/x.lua` `core/src/xy.cc:12`\n")
        found = sorted(p.split(": ", 1)[1].split(":")[0] for p in check_file(root / "docs/b.md", root))
        expected = ["`core/src/xy.cc", "`docs/gone.md`", "link to a.md#nope", "link to missing.md"]
        if found != expected:
            sys.exit(f"{__file__}: self-check found {found}, expected {expected}")
    made_up = ("// (issue 13, item 4)\n# Issues 16 and 32\nissue #7 issue12\n"
               "see https://github.com/scipy/scipy/issues/11602; an issue of scale; tissue 3\n")
    found = [p.split(": cites ")[1].split(" of ")[0] for p in issue_cites("x", made_up)]
    expected = ["'issue 13'", "'Issues 16'", "'issue #7'", "'issue12'"]
    if found != expected:
        sys.exit(f"{__file__}: issue-citation self-check found {found}, expected {expected}")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: docs_refs.py SOURCE_DIR")
    self_check()
    root = Path(sys.argv[1]).resolve()
    docs = [root / "README.md", root / "bench/README.md"] + sorted((root / "docs").glob("*.md"))
    problems = [p for md in docs for p in check_file(md, root)] + check_sources(root)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        sys.exit(f"{len(problems)} broken links, file references or issue citations in {len(docs)} documents "
                 "and the sources")
    print(f"{len(docs)} documents: every link and file reference resolves, and no text cites an issue by number")


if __name__ == "__main__":
    main()
