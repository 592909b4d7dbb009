#!/usr/bin/env python3
"""Every C++ raw string literal in the tree holds text, not code that was meant to close it.

The HTML report once showed `documents where )" + Html(opt.doc_metric) + R"HTML( differs most first`:
a literal opened as R"HTML( was closed with )" — valid C++ (a raw literal ends only at its own
delimiter), so the compiler took the concatenation as page text. This check finds every raw literal in
core/, host/ and bench/ and fails on one whose body opens another raw literal (`R"DELIM(`): the page's
HTML, CSS and JavaScript never contain that, a mis-closed literal followed by more C++ always does.
Usage: raw_strings.py SOURCE_DIR
"""
import pathlib
import re
import sys

OPEN = re.compile(r'(?<![A-Za-z0-9_])(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(')
SUSPECT = re.compile(r'(?<![A-Za-z0-9_])R"[^()\\\s]{0,16}\(')


def literals(text):
    """(line, delimiter, body) of each raw literal, skipping comments and ordinary strings."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif (m := OPEN.match(text, i)) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + m.group(1) + '"'
            j = text.find(close, m.end())
            if j < 0:
                yield text.count("\n", 0, i) + 1, m.group(1), text[m.end():]
                return
            yield text.count("\n", 0, i) + 1, m.group(1), text[m.end():j]
            i = j + len(close)
        elif c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1


def main():
    root = pathlib.Path(sys.argv[1])
    problems, count = [], 0
    for path in sorted(p for d in ("core", "host", "bench") for p in (root / d).rglob("*")
                       if p.suffix in (".cc", ".h", ".cpp")):
        for line, delim, body in literals(path.read_text(encoding="utf-8", errors="replace")):
            count += 1
            if (m := SUSPECT.search(body)):
                at = line + body.count("\n", 0, m.start())
                problems.append(f"{path.relative_to(root)}:{at}: raw string R\"{delim}( holds {m.group(0)!r}: "
                                f"C++ meant to close it? (close it with ){delim}\")")
    for p in problems:
        print(p)
    print(f"{count} raw string literals checked, {len(problems)} problems")
    sys.exit(1 if problems or count == 0 else 0)


if __name__ == "__main__":
    main()
