#!/usr/bin/env python3
"""Every file an importer may map is checked for a change once its bytes are read (design note 66).

io_internal::ReadTextFile maps a file of 64 KiB or more when the process allows it (kplab/io.h,
SetMappedFileReads). A mapped file cut shorter while it is read gives zeros past its new end, so whoever
reads a mapped file must ask CheckUnchanged once done, and ChangedWhileRead before reporting an error of
its own. Each call of ReadTextFile in core/ and host/ must therefore be one of:

  - `files.push_back(ReadTextFile(...))`: a file an importer hands to ImportDataset or LineDocuments::Open,
    which check every one of them (both are checked below);
  - in a function that calls both CheckUnchanged( and ChangedWhileRead( (the scan looks up to the
    previous function's closing brace at column 0, and down to this function's);
  - marked `// mapped-read: REASON` on its line or the line above.

Its error paths too: in a function that calls ReadTextFile or ReadLinePair, and in the holders, an
error caught (`return e.error;`) is returned only after the change was asked for (ChangedWhileRead /
CheckUnchanged in the same catch block): zeros past a cut file's new end make errors that are
not the file's.

A new reader of mapped bytes that forgets the check fails this test with FILE:LINE.

Usage: mapped_reads.py SOURCE_DIR
"""
import os
import re
import sys

CALL = re.compile(r"\bReadTextFile\(")
PUSHED = re.compile(r"\bfiles\.push_back\((io_internal::)?ReadTextFile\(")
MARKER = re.compile(r"//\s*mapped-read:\s*\S")
DEFINITION = re.compile(r"^FileData ReadTextFile\(")

# The places that check the files pushed: (file, function's first line, what its body must hold).
HOLDERS = [
    ("core/src/io/io.cc", "Result<RawDataset> ImportDataset(", ["CheckUnchanged(f)", "ChangedWhileRead(files)"]),
    ("core/src/io/io_lines.cc", "Status LineDocuments::CheckUnchanged() const {",
     ["ChangedWhileRead(f_->data, f_->pred)"]),
    ("core/src/io/io_lines.cc", "std::optional<Error> ChangedWhileRead(std::span<const FileData> data, const FileData& pred) {",
     ["io_internal::ChangedWhileRead(data)", "io_internal::ChangedWhileRead(std::span(&pred, 1))"]),
    ("core/src/eval/corpus.cc", "Result<Corpus> BuildCorpus(LineDocuments&& documents", ["docs.CheckUnchanged()"]),
]


def code(line):
    return line.split("//", 1)[0]


def function_around(lines, i):
    """The lines of the function holding line i: from after the previous column-0 '}' to the next one."""
    start = i
    while start > 0 and not lines[start - 1].startswith("}"):
        start -= 1
    end = i
    while end < len(lines) and not lines[end].startswith("}"):
        end += 1
    return lines[start:end + 1]


ASKS = re.compile(r"\bChangedWhileRead\(|\bCheckUnchanged\(")
READS = re.compile(r"\bReadTextFile\(|\bReadLinePair\(")


def error_paths(rel, lines, i):
    """`return e.error;` lines of the function around line i that return before asking for a change."""
    out = []
    start = i
    while start > 0 and not lines[start - 1].startswith("}"):
        start -= 1
    for j, line in enumerate(function_around(lines, i)):
        k = start + j
        if "return e.error" in code(line) and "value_or" not in line:
            catch = k
            while catch > start and "catch (" not in lines[catch]:
                catch -= 1
            if not any(ASKS.search(code(lines[m])) for m in range(catch, k + 1)):
                out.append(f"{rel}:{k + 1}: an error returned before asking whether a mapped file changed "
                           f"(ChangedWhileRead): {line.strip()}")
    return out


def problems_in(rel, lines):
    out = []
    seen = set()
    for i, line in enumerate(lines):
        if READS.search(code(line)) and not DEFINITION.search(line):
            for p in error_paths(rel, lines, i):
                if p not in seen:
                    seen.add(p)
                    out.append(p)
    for i, line in enumerate(lines):
        text = code(line)
        if not CALL.search(text) or DEFINITION.search(line):
            continue
        if MARKER.search(line) or (i > 0 and MARKER.search(lines[i - 1])) or PUSHED.search(text):
            continue
        body = "\n".join(code(l) for l in function_around(lines, i))
        if "CheckUnchanged(" in body and "ChangedWhileRead(" in body:
            continue
        out.append(f"{rel}:{i + 1}: a file read by ReadTextFile whose bytes no CheckUnchanged / ChangedWhileRead "
                   f"checks: {line.strip()}")
    return out


SELF_TEST = """\
void Importer(std::vector<FileData>& files) {
  files.push_back(ReadTextFile(a, "a"));
}

Result<X> Checked(const std::string& path) {
  FileData file;
  try {
    file = ReadTextFile(path, "x");
    io_internal::CheckUnchanged(file);
  } catch (const ImportFailure& e) {
    return io_internal::ChangedWhileRead(std::span(&file, 1)).value_or(e.error);
  }
}

Result<X> Forgot(const std::string& path) {
  const FileData file = ReadTextFile(path, "x");
  return Parse(file.bytes);
}

Result<X> ForgotItsErrors(const std::string& path) {
  FileData file;
  try {
    file = ReadTextFile(path, "x");
    io_internal::CheckUnchanged(file);
  } catch (const ImportFailure& e) {
    return e.error;
  }
}
"""


def main():
    src = sys.argv[1]
    found = problems_in("sample.cc", SELF_TEST.splitlines())
    if len(found) != 3 or not all(any(f":{n}:" in p for p in found) for n in (16, 23, 26)):
        print("mapped_reads.py self-test failed: " + repr(found))
        return 1
    problems, calls = [], 0
    for top in ("core", "host"):
        for root, _, files in os.walk(os.path.join(src, top)):
            for name in sorted(files):
                if not name.endswith((".cc", ".h")) or name == "io_internal.h":
                    continue
                full = os.path.join(root, name)
                rel = os.path.relpath(full, src)
                with open(full, encoding="utf-8") as f:
                    lines = f.read().splitlines()
                calls += sum(1 for l in lines if CALL.search(code(l)) and not DEFINITION.search(l))
                problems += problems_in(rel, lines)
    for rel, first, needed in HOLDERS:
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            lines = f.read().splitlines()
        at = [i for i, l in enumerate(lines) if l.startswith(first)]
        if len(at) != 1:
            problems.append(f"{rel}: expected one function starting '{first}', found {len(at)}")
            continue
        body = "\n".join(code(l) for l in function_around(lines, at[0] + 1))
        problems += [p for p in error_paths(rel, lines, at[0] + 1) if p not in problems]
        for n in needed:
            if n not in body:
                problems.append(f"{rel}:{at[0] + 1}: '{first}' no longer holds '{n}': the files it is given go unchecked")
    for p in problems:
        print(p)
    print(f"{calls} calls of ReadTextFile in core/ and host/, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
