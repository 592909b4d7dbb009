#!/usr/bin/env python3
"""No C++ function in core/ or host/ longer than 150 lines (docs/testing.md, "Layout checks").

Usage: function_length.py SOURCE_DIR [--list]

A function's length is counted from the line of its name to the line of its closing brace, both
included; lambdas and local classes count in the function that holds them. The scan strips comments,
string, character and raw string literals, then matches braces: a brace opened at namespace or class
level after a parameter list (`) {`, `) const {`, `) -> T {`, a constructor's initializer list) is a
function body; `namespace`, `class`, `struct`, `union`, `enum` and `= {` initializers are not.

ALLOWED lists the functions over the limit when the check was written, each with its length then and
"to split": such a function may shrink but not grow, and its entry must go when it is split (an entry
whose function is gone or within the limit fails too, so the list only shrinks). EXCEPTIONS lists code
that is long by nature (table-only or generated), each with its reason. `--list` prints every function over the limit.

Before scanning it checks itself on made-up sources (a long function, a long class of short methods, a
long initializer table, a long function behind a commented-out brace and a string holding braces).
"""
import re
import sys
from pathlib import Path

LIMIT = 150

# "path:qualified name": (lines when the check was written, what is to be done). Remove an entry when its
# function is split; never add one for new code.
ALLOWED = {}

# "path:qualified name": reason it may stay long (generated or table-only code).
EXCEPTIONS = {
    # One map literal of the help text of each command: data, no control flow; its length is the
    # documentation's, and cutting it in pieces would only scatter the text.
    "host/cli/cli.cc:HelpTexts": "table-only: the help text of every command",
}

NOT_FUNCTION = re.compile(r"\b(namespace|class|struct|union|enum)\b")
QUALIFIER_END = re.compile(r"(\)|\b(const|override|final|noexcept|mutable|volatile)|->\s*[\w:<>,\s*&]+)\s*$")


def strip(text):
    """Comments and literals replaced by spaces (newlines kept, so line numbers stay)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i + m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # digit separator: 1'000'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * max(0, j - i - 2) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(qualified name, first line, last line) of every function body at namespace or class level."""
    code = strip(text)
    found = []
    stack = []  # per open brace: ("scope"|"fn"|"other", name, line)
    header_start = 0
    line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == ";" and not any(k == "fn" for k, _, _ in stack):
            header_start = i + 1
        elif c == "{":
            if any(k in ("fn", "other") for k, _, _ in stack):
                stack.append(("inner", None, line))
                continue
            header = code[header_start:i]
            if NOT_FUNCTION.search(header.split("(")[0]) or re.search(r'\bextern\s*"\s*"\s*$', header) or not header.strip():
                stack.append(("scope", None, line))
                header_start = i + 1
            elif "(" in header and QUALIFIER_END.search(header.rstrip().rstrip("}")) or re.search(r"\)\s*:\s", header) and header.rstrip().endswith(("}", ")")):
                before = header[:header.index("(")].rstrip()
                m = re.search(r"((?:[\w~]+|operator\s*\S+?)(?:\s*<[^()]*>)?(?:\s*::\s*(?:[\w~]+|operator\s*\S+?))*)\s*$", before)
                name = re.sub(r"\s+", "", m.group(1)) if m else "?"
                first = line - code[header_start:i].count("\n") + code[header_start:header_start + header.index("(")].count("\n")
                first = line - header[header.index("("):].count("\n")
                stack.append(("fn", name, first))
            else:
                stack.append(("other", None, line))
        elif c == "}":
            if not stack:
                continue
            kind, name, first = stack.pop()
            if kind == "fn":
                found.append((name, first, line))
                header_start = i + 1
            elif kind == "scope":
                header_start = i + 1
    return found


def self_check():
    body = "\n".join(f"  x += {k};" for k in range(LIMIT))
    long_fn = f"int Long(int x) {{\n{body}\n  return x;\n}}\n"
    short_methods = "class C {\n" + "".join(f" int M{k}() const {{ return {k}; }}\n" for k in range(200)) + "};\n"
    table = "const int kTable[] = {\n" + ",\n".join(str(k) for k in range(200)) + "};\n"
    hidden = "// void Fake() {\nnamespace n {\nconst char* s = \"{{{\";\n" + long_fn.replace("Long", "Hidden") + "}\n"
    ctor = "S::S(int a) : a_(a), b_{a} {\n" + body + "\n}\n"
    src = long_fn + short_methods + table + hidden + ctor
    long_ones = sorted((n, b - a + 1) for n, a, b in functions(src) if b - a + 1 > LIMIT)
    expected = [("Hidden", LIMIT + 3), ("Long", LIMIT + 3), ("S::S", LIMIT + 2)]
    if long_ones != expected:
        sys.exit(f"{__file__}: self-check: found {long_ones}, expected {expected}")


def scan(root):
    over = {}
    for folder in ("core", "host"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".cc", ".h") or not path.is_file():
                continue
            rel = path.relative_to(root).as_posix()
            for name, first, last in functions(path.read_text(encoding="utf-8", errors="replace")):
                length = last - first + 1
                if length > LIMIT:
                    key = f"{rel}:{name}"
                    while key in over:
                        key += "'"
                    over[key] = (length, first)
    return over


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "--list"):
        sys.exit("usage: function_length.py SOURCE_DIR [--list]")
    self_check()
    root = Path(sys.argv[1])
    over = scan(root)
    if len(sys.argv) == 3:
        for key, (length, first) in sorted(over.items(), key=lambda kv: -kv[1][0]):
            print(f"    \"{key}\": ({length}, \"to split\"),")
        return
    errors = []
    for key, (length, first) in sorted(over.items()):
        path = key.split(":")[0]
        if key in EXCEPTIONS:
            continue
        if key not in ALLOWED:
            errors.append(f"{path}:{first}: {key.split(':', 1)[1]} is {length} lines (limit {LIMIT}); split it at "
                          "the phases its comments name")
        elif length > ALLOWED[key][0]:
            errors.append(f"{path}:{first}: {key.split(':', 1)[1]} grew to {length} lines (allowed {ALLOWED[key][0]} "
                          "until it is split; tests/layout/function_length.py)")
    for key in sorted(set(ALLOWED) - set(over)):
        errors.append(f"{__file__}: ALLOWED entry {key} is within the limit or gone: remove the entry")
    for line in errors:
        print(line, file=sys.stderr)
    if errors:
        sys.exit(f"{len(errors)} function-length problems")
    allowed = sum(key in ALLOWED for key in over)
    print(f"{len(over)} functions over {LIMIT} lines: {len(over) - allowed} table-only exceptions, {allowed} on the "
          "allow-list (to split)")


if __name__ == "__main__":
    main()
