#!/usr/bin/env python3
"""Every open of a file in core/ and host/ sits behind the one gate (kplab/file_gate.h, GateFile).

An opener is any construct that opens or lists a named file: std::ifstream/ofstream/fstream, fopen,
::open, mkostemp, memfd_create, mmap, SQLite (SQLite::Database, sqlite3_open), simdjson's file loads,
directory iterators, std::filesystem::copy_file, libedit's history file (H_LOAD/H_SAVE). Each one must
have a gate call -- GateFile(, or CheckRegularFile( / ListDirectory( / CheckAccess( (lua_script.cc),
which call it first -- in the
lines above it within the same function (the scan stops at the previous function's closing brace at
column 0, and looks at most 30 lines up), or a marker comment `// file-gate: REASON` on its line or the
line above, saying why no path from anyone reaches it (a fixed /proc file, an fd already opened behind
the gate, ...). A new opener without either fails the test with FILE:LINE.

Elevations to the user's context (UserFileScope: a path kplab takes from the user's own configuration)
are counted per file against ELEVATIONS below, each with its reason: a new one fails until it is listed.

Usage: file_gate.py SOURCE_DIR
"""
import os
import re
import sys

OPENER = re.compile(
    r"std::(i|o)?fstream\b|\bf?reopen\(|\bfopen\(|(?<![\w.>])::open\(|\bmkostemp\(|\bmemfd_create\(|"
    r"\bmmap\(|SQLite::Database\b(?!\s*[&*])|\bsqlite3_open|padded_string::load\(|\bparser\.load\(|"
    r"directory_iterator\b|\bcopy_file\(|\bH_LOAD\b|\bH_SAVE\b|\bopendir\(")
GATE = re.compile(r"\bGateFile\(|\bCheckRegularFile\(|\bListDirectory\(|\bCheckAccess\(")
MARKER = re.compile(r"//\s*file-gate:\s*\S")
WINDOW = 30

# Where kplab opens a path in the user's context whoever asked (kplab/file_gate.h, UserFileScope).
ELEVATIONS = {
    "core/src/plan/embedding_plan.cc": (1, "a model is resolved by name in the user's registry"),
    "host/engine/evaluate.cc": (1, "the phrase cache in the user's default store when the request names none"),
    "host/lua/sandbox.cc": (2, "the shipped plugin directory and $KPLAB_PLUGIN_PATH are listed and read as the user's"),
    "host/repl/repl.cc": (2, "the REPL's history file is the user's (load and save)"),
    "host/lua/lua_textmetrics.cc": (1, "WordNet is installed data (wordnet-base or $KPLAB_WORDNET), not a plugin's path"),
    "core/src/util/file_gate.cc": (2, "the definition"),
    "core/include/kplab/file_gate.h": (2, "the declaration"),
}


def strip_comment(line):
    # Good enough for this code base: no "//" inside the string literals of the lines that open files.
    return line.split("//", 1)[0]


def problems_in(path, lines):
    out = []
    for i, line in enumerate(lines):
        code = strip_comment(line)
        if not OPENER.search(code):
            continue
        if MARKER.search(line) or (i > 0 and MARKER.search(lines[i - 1])):
            continue
        gated = False
        for j in range(i, max(-1, i - WINDOW - 1), -1):
            if j < i and lines[j].startswith("}"):
                break  # the previous function ended: its gate is not this opener's
            if GATE.search(strip_comment(lines[j])):
                gated = True
                break
        if not gated:
            out.append(f"{path}:{i + 1}: an open that no gate call precedes: {line.strip()}")
    return out


SELF_TEST = """\
Status GoodReader(const std::string& path) {
  if (Status st = GateFile(path, FileAccess::kRead); !st.ok()) return st;
  std::ifstream in(path);
  return Status::Ok();
}

std::string BadReader(const std::string& path) {
  std::ifstream in(path);
  return "";
}
"""


def main():
    src = sys.argv[1]
    # The check must catch a new opener: an ungated reader in a sample must be reported, a gated one not.
    found = problems_in("sample.cc", SELF_TEST.splitlines())
    if len(found) != 1 or ":8:" not in found[0]:
        print("file_gate.py self-test failed: " + repr(found))
        return 1
    problems, openers, elevations = [], 0, {}
    for top in ("core", "host"):
        for root, _, files in os.walk(os.path.join(src, top)):
            for name in sorted(files):
                if not name.endswith((".cc", ".h")):
                    continue
                full = os.path.join(root, name)
                rel = os.path.relpath(full, src)
                with open(full, encoding="utf-8") as f:
                    lines = f.read().splitlines()
                openers += sum(1 for l in lines if OPENER.search(strip_comment(l)))
                problems += problems_in(rel, lines)
                n = sum(len(re.findall(r"\bUserFileScope\b", strip_comment(l))) for l in lines)
                if n:
                    elevations[rel] = n
    for rel, n in sorted(elevations.items()):
        allowed = ELEVATIONS.get(rel, (0, ""))[0]
        if n != allowed:
            problems.append(f"{rel}: {n} uses of UserFileScope, {allowed} listed in ELEVATIONS (each needs its reason)")
    for rel, (n, _) in sorted(ELEVATIONS.items()):
        if rel not in elevations:
            problems.append(f"{rel}: listed in ELEVATIONS but has no UserFileScope")
    for p in problems:
        print(p)
    print(f"{openers} openers in core/ and host/, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
