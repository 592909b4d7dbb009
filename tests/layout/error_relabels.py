#!/usr/bin/env python3
"""Every error that takes another error's message under a kind of its own is listed, with its reason.

Usage: error_relabels.py SOURCE_DIR [--list]

An error is made with its kind (kplab/result.h, design note 49). Passing an error on keeps its kind:
`return r.error();` or `Error(r.error().kind, "context: " + r.error().message)`. A *relabel* makes a new
error of a kind written at the site from another error's message: `Error::Script(r.error().message)`,
`Error(ErrorKind::kStore, st.message())`, a one-line helper that makes an error of a fixed kind
(`Error UsageFail(std::string m) { return Error::Usage(std::move(m)); }`, found in every file and then
called anywhere: `UsageFail(st.message())`), or any call with a literal `ErrorKind::kX` argument beside such
a message (the C ABI's `SetError(errptr, r.error().message, ErrorKind::kStore)`, an importer's
`InputError{ErrorKind::kInput, ...}`). A relabel is sometimes right (a plugin file that cannot be read is
the plugin's failure whatever the reader said), but a new one must be a decision, not an accident: this
scan finds every relabel in core/, host/ and plot/ and fails on one that ALLOWED does not list.

What counts as another error's message, inside the call's parentheses: `X.error().message` (a Result's
or Status's error), `X.error.message` or `X.error->message` (an Error held in a field: the importers'
`ImportFailure`, the phrase cache's chunk), `X.message()` (a Status; not a std::error_code, whose declared
names are skipped) and `X.message` where X is declared in the file as an `Error`. Comments and
literals are blanked first (tests/layout/function_length.py's reader), and the enclosing function is the
one function_length.py finds, so an entry is "path:Function". A message copied into a variable first and
relabelled later is out of its reach; the sites it lists are the ones a reader meets.

ALLOWED maps "path:Function" to (number of relabels in that function, reason). The number must match:
a new relabel in a listed function fails as a new one does, and an entry whose relabels are gone fails
until it is removed (the list only shrinks unless a reviewer adds a reasoned entry). `--list` prints the
relabels found.

Before scanning it checks itself on made-up sources (a relabel across lines, one by a literal kind in
SetError, a kind passed on, an error_code's message, a relabel in a comment and in a string).
"""
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from function_length import functions, strip  # noqa: E402

# "path:Function": (relabels in it, why the new kind is right there).
ALLOWED = {
    "core/src/util/file_gate.cc:GateFile": (
        1, "every refusal of the gate is a usage error (file_gate.h), a path it cannot resolve too"),
    "core/src/store/store.cc:CheckOneStoreFile": (
        1, "a directory, FIFO or device where a store's own file belongs is a broken store, not bad input "
           "(the gate's usage refusal is passed on)"),
    "host/engine/drill.cc:ReloadRunCorpus": (
        1, "params_json was written by kplab into the store: text there that does not parse is a damaged "
           "store, not a usage error as on the command line"),
    "host/engine/evaluate.cc:LoadMetrics": (
        2, "a plugin directory or file that cannot be listed or read is the plugin's failure (script, "
           "exit 3), as a bad plugin is (design note 49)"),
}

KINDS = r"(?:Input|Usage|Script|Store|Limit|Internal)"
FACTORY = re.compile(r"\bError::" + KINDS + r"\s*\(")
HELPER = re.compile(r"\bError\s+(\w+)\s*\(\s*std::string\s+\w+\s*\)\s*\{\s*return\s+Error::" + KINDS + r"\s*\(")
LITERAL_KIND = re.compile(r"\bErrorKind::k(Input|Usage|Script|Store|Limit|Internal)\b")
ERROR_MESSAGE = re.compile(r"\berror(?:\(\))?\s*(?:\.|->)\s*message\b")
MESSAGE_CALL = re.compile(r"([\w\]\)]+)\s*(?:\.|->)\s*message\s*\(\s*\)")
MESSAGE_FIELD = re.compile(r"\b(\w+)\s*(?:\.|->)\s*message\b(?!\s*\()")
ERROR_CODE_DECL = re.compile(r"\berror_code\s*&?\s*(\w+)")
ERROR_DECL = re.compile(r"(?<![\w:])(?:kplab::)?Error\s*&?\s+(\w+)\b(?!\s*\()")


def closing(code, open_at):
    """Index of the bracket that closes the one at open_at ('(' or '{'), or len(code)."""
    depth = 0
    pairs = {"(": ")", "{": "}", "[": "]"}
    for i in range(open_at, len(code)):
        c = code[i]
        if c in pairs:
            depth += 1
        elif c in ")}]":
            depth -= 1
            if depth == 0:
                return i
    return len(code)


def enclosing_call(code, at):
    """(open, close) of the innermost (...) or {...} call around index at, or None."""
    depth = 0
    for i in range(at - 1, -1, -1):
        c = code[i]
        if c in ")}]":
            depth += 1
        elif c in "({[":
            if depth == 0:
                if c == "[" or c == "{" and not re.search(r"[\w>]\s*$", code[:i]):
                    return None  # a block or an index, not a call or a braced initializer
                return i, closing(code, i)
            depth -= 1
        elif c == ";" and depth == 0:
            return None
    return None


def takes_message(args, error_codes, errors):
    if ERROR_MESSAGE.search(args):
        return True
    for m in MESSAGE_CALL.finditer(args):
        receiver = re.sub(r"\[.*$", "", m.group(1))
        if receiver not in error_codes:
            return True
    return any(m.group(1) in errors for m in MESSAGE_FIELD.finditer(args))


def helpers(text):
    """Names of the functions of a file that only make an error of a fixed kind from a message."""
    return set(HELPER.findall(strip(text)))


def relabels(text, fixed_kind_helpers=frozenset()):
    """[(line, text of the call)] of the relabels in a source file."""
    code = strip(text)
    error_codes = set(ERROR_CODE_DECL.findall(code)) | {"ec"}
    errors = set(ERROR_DECL.findall(code))
    calls = set()
    factories = [FACTORY]
    if fixed_kind_helpers:
        factories.append(re.compile(r"(?<![\w:.>])(?:" + "|".join(sorted(fixed_kind_helpers)) + r")\s*\("))
    for factory in factories:
        for m in factory.finditer(code):
            open_at = m.end() - 1
            if re.match(r"\s*std::string\s+\w+\s*\)\s*\{", code[open_at + 1:]):
                continue  # the helper's own definition
            calls.add((m.start(), open_at, closing(code, open_at)))
    for m in LITERAL_KIND.finditer(code):
        around = enclosing_call(code, m.start())
        if around:
            name = re.search(r"[\w:]*\s*$", code[:around[0]])
            calls.add((name.start(), around[0], around[1]))
    found = []
    for start, open_at, close in sorted(calls):
        if takes_message(code[open_at + 1:close], error_codes, errors):
            line = code.count("\n", 0, start) + 1
            found.append((line, " ".join(text[start:close + 1].split())))
    # A factory call and a literal kind inside it are one relabel.
    seen, out = set(), []
    for line, call in found:
        if any(call in other and call != other for _, other in found):
            continue
        if (line, call) not in seen:
            seen.add((line, call))
            out.append((line, call))
    return out


def scan(root):
    """{"path:Function": [(line, call), ...]} over core/, host/ and plot/."""
    texts = {}
    for folder in ("core", "host", "plot"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in (".cc", ".h") and path.is_file():
                texts[path] = path.read_text(encoding="utf-8", errors="replace")
    fixed_kind_helpers = set().union(*(helpers(text) for text in texts.values()))
    found = {}
    for path, text in texts.items():
        sites = relabels(text, fixed_kind_helpers)
        if not sites:
            continue
        spans = functions(text)
        rel = path.relative_to(root).as_posix()
        for line, call in sites:
            inside = [(a, name) for name, a, b in spans if a <= line <= b]
            name = max(inside)[1] if inside else "(file scope)"
            found.setdefault(f"{rel}:{name}", []).append((line, call))
    return found


def self_check():
    src = """
Result<int> Read(const std::string& p);
Status A(Result<int> r) {
  if (!r) return Error::Script(
      "plugin: " + r.error().message);
  return Status::Ok();
}
void B(Result<int> id, char** errptr) {
  SetError(errptr, id.error().message, kplab::ErrorKind::kStore);
}
Status C(Result<int> r) { return Error(r.error().kind, "c: " + r.error().message); }
Status D(const fs::path& p) {
  std::error_code ec;
  if (ec) return Error::Input(p.string() + ": " + ec.message());
  // return Error::Usage(r.error().message);
  const char* s = "Error::Usage(r.error().message)";
  return Status::Ok();
}
Status E(Status st) { if (!st.ok()) return Error::Usage(st.message()); return st; }
Status F() {
  const Error& e = Last(); if (!ok) return Error::Input(e.message);
  return Status::Ok();
}
Error StoreFail(std::string message) { return Error::Store(std::move(message)); }
Status G(Status st) { return StoreFail("g: " + st.message()); }
Status H() {
  try { Parse(); } catch (const ImportFailure& f) { return Error::Usage(f.error.message); }
  if (chunk.error) return Error(ErrorKind::kLimit, chunk.error->message);
  try { Parse(); } catch (const ImportFailure& f) { return f.error; }
  return Status::Ok();
}
"""
    got = [(line, call.split("(")[0]) for line, call in relabels(src, helpers(src))]
    expected = [(4, "Error::Script"), (9, "SetError"), (19, "Error::Usage"), (21, "Error::Input"), (25, "StoreFail"),
                (27, "Error::Usage"), (28, "Error")]
    if got != expected:
        sys.exit(f"{__file__}: self-check: found {got}, expected {expected}")


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "--list"):
        sys.exit("usage: error_relabels.py SOURCE_DIR [--list]")
    self_check()
    root = Path(sys.argv[1])
    found = scan(root)
    if len(sys.argv) == 3:
        for key, sites in sorted(found.items()):
            for line, call in sites:
                print(f"{key.split(':')[0]}:{line}: {key.split(':', 1)[1]}: {call}")
        return
    errors = []
    for key, sites in sorted(found.items()):
        path = key.split(":")[0]
        if key not in ALLOWED:
            for line, call in sites:
                errors.append(f"{path}:{line}: {key.split(':', 1)[1]}: {call}: a new kind for another error's "
                              "message. Pass the kind on "
                              "(Error(x.error().kind, ...)), or list the function in ALLOWED of "
                              f"{__file__} with the reason the new kind is right")
        elif len(sites) != ALLOWED[key][0]:
            lines = ", ".join(str(line) for line, _ in sites)
            errors.append(f"{path}:{lines}: {key.split(':', 1)[1]} has {len(sites)} relabels, ALLOWED lists "
                          f"{ALLOWED[key][0]}: pass a new one's kind on or give its reason; lower the count when one goes")
    for key in sorted(set(ALLOWED) - set(found)):
        errors.append(f"{__file__}: ALLOWED entry {key} has no relabel left: remove the entry")
    for line in errors:
        print(line, file=sys.stderr)
    if errors:
        sys.exit(f"{len(errors)} error-relabel problems")
    print(f"{sum(len(s) for s in found.values())} relabels in {len(found)} functions, all listed with their reasons")


if __name__ == "__main__":
    main()
