#!/usr/bin/env python3
"""Names at file scope are unique across each test binary's sources (the unity build's condition).

Usage: unity_names.py [--headers DIR,DIR] BINARY=SOURCE,SOURCE,... [BINARY=...]
       (relative paths: to the working directory)

The test binaries are compiled a batch of sources at a time (tests/CMakeLists.txt, CMake's unity
build): two sources in one batch share one translation unit, so a `const std::string kData` or a
`std::string Slurp(...)` in each one's anonymous namespace is a redefinition, or worse an overload
that quietly changes which function a call picks. Which sources share a batch depends on the file
names around them, so a clash the compiler does not see today appears when a test file is added or
renamed. This check sees it whatever the batches: every variable, function, type and alias a source
declares at column 0 (Google style does not indent namespace bodies), outside a class or function
body, must be declared by no other source of the same binary. Overloads within one source are fine.
Out-of-class member definitions (`Fixture::Helper(`), TEST macros, namespaces and preprocessor lines
are not names of the source. Failures name both files and lines. A self-check on made-up sources runs
first.

A batch also brings every header another of its sources includes: a test's `Surfaces(...)` in
namespace kplab beside kplab's own `Surfaces` type (core/include/kplab/surface.h) fails to compile, and
a test's `Lines(...)` beside a library function `Lines(...)` of the same namespace is an overload that
may quietly take the library's calls. So with --headers DIR,DIR (the library's source folders), a name
a test source declares at file scope must also not be one that a header under them declares at
namespace scope in the same namespace or one enclosing it (kplab::Foo is seen from kplab::test;
kplab::svg::Foo is not seen from kplab).
"""
import re
import sys
from pathlib import Path

# Comments and literals blanked, newlines kept: the layout checks' one implementation.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from function_length import strip  # noqa: E402

SKIP = re.compile(r"^(TEST|TYPED_TEST|INSTANTIATE|REGISTER|namespace\b|#|}|//|/\*|\*|template\b|extern\b|"
                  r"friend\b|public:|private:|protected:|return\b|if\b|for\b|while\b|else\b|case\b|default:)")
TYPE = re.compile(r"^(?:struct|class|union|enum(?:\s+class)?)\s+(\w+)\s*(?:[:{]|final\b|$)")
ALIAS = re.compile(r"^using\s+(\w+)\s*=")
# A declaration's name: the last identifier before '=', '{', '(' or ';' that is not qualified.
DECL = re.compile(r"^(?:(?:static|inline|constexpr|const|thread_local|volatile|unsigned|signed)\s+)*"
                  r"[\w:<>,\s\*&\[\]]*?[\s\*&>](\w+)\s*(?:\[[^\]]*\])?\s*(=|\{|\(|;)")


def file_scope_names(text, with_namespace=False):
    """[(name, line)] declared at column 0 outside any class or function body; with_namespace:
    [(name, line, namespace)], namespace the tuple of the named namespaces around it (an anonymous
    namespace adds nothing: its names are seen from the enclosing one)."""
    # One entry a brace still open: the namespace's name ("" for an anonymous one), None for any other.
    names, braces = [], []
    for lineno, line in enumerate(strip(text).split("\n"), 1):
        at_file_scope = all(b is not None for b in braces)
        stripped = line.strip()
        if at_file_scope and line[:1] not in (" ", "\t", "") and not SKIP.match(stripped):
            m = TYPE.match(stripped) or ALIAS.match(stripped)
            if m is None and not stripped.startswith(("struct ", "class ", "enum ", "union ")):
                # A qualified name (Fixture::Helper(...)) cannot match: DECL wants a space, '*', '&' or
                # '>' before the name.
                m = DECL.match(stripped)
            if m is not None:
                names.append((m.group(1), lineno, tuple(b for b in braces if b)) if with_namespace
                             else (m.group(1), lineno))
        # Braces: a namespace's own brace does not make the scope inside it non-file scope.
        for k, ch in enumerate(line):
            if ch == "{":
                opens = re.match(r"^\s*(?:inline\s+)?namespace\b\s*([\w:]*)[^{;]*$", line[:k])
                braces.append(opens.group(1) if opens else None)
            elif ch == "}" and braces:
                braces.pop()
    return names


def header_names(dirs):
    """{name: [(header, line, namespace)]} for the names the headers under dirs declare at namespace scope."""
    out = {}
    for d in dirs:
        for h in sorted(Path(d).rglob("*.h")):
            for name, line, ns in file_scope_names(h.read_text(encoding="utf-8"), with_namespace=True):
                out.setdefault(name, []).append((str(h), line, ns))
    return out


def _expand(ns):
    """A::B as ('A', 'B')."""
    return tuple(p for n in ns for p in n.split("::") if p)


def header_clashes(binaries, headers):
    """Test names that are also a library header's name in the same or an enclosing namespace."""
    out = []
    for binary, sources in binaries.items():
        for src in sorted(sources):
            for name, line, ns in file_scope_names(sources[src], with_namespace=True):
                for h, hline, hns in headers.get(name, []):
                    if name not in OVERLOADED and _expand(ns)[:len(_expand(hns))] == _expand(hns):
                        out.append(f"{binary}: '{name}' at file scope in {src}:{line} is also declared by {h}:{hline}"
                                   " (a batch that includes that header sees both: rename the test's)")
                        break
    return out


# Names meant to be overloaded across sources, each with why.
OVERLOADED = {
    "PrintTo": "GoogleTest's printer hook: one overload per parameter type, found by argument-dependent lookup",
}


def clashes(binaries):
    """{binary: {source: text}} -> failure lines."""
    out = []
    for binary, sources in binaries.items():
        first = {}
        for src in sorted(sources):
            seen_here = set()
            for name, line in file_scope_names(sources[src]):
                if name in seen_here or name in OVERLOADED:
                    continue  # an overload or a redeclaration within one source
                seen_here.add(name)
                if name in first and first[name][0] != src:
                    out.append(f"{binary}: '{name}' at file scope in {src}:{line} and {first[name][0]}:{first[name][1]}"
                               " (the unity build may put them in one translation unit: rename one)")
                else:
                    first.setdefault(name, (src, line))
    return out


def self_check():
    a = ("namespace kplab {\nnamespace {\n\nconst std::string kData = \"x\";\nstd::string Slurp(const std::string& p) {\n"
         "  int kLocal = 1;\n  return p;\n}\nstruct Case {\n  int kData = 2;\n};\nusing Ids = std::vector<int>;\n"
         "constexpr double kTol = 1e-9;\n\n}  // namespace\n\nTEST(A, B) { const int kInTest = 1; }\n"
         "void Fixture::Helper() {}\n}  // namespace kplab\n")
    b = ("namespace {\n// const std::string kData = \"in a comment\";\nconst char* kText = R\"(\n"
         "const std::string kTol = 1;\n)\";\nstd::vector<int> Ids(int n) { return {}; }\n"
         "std::string Slurp(const fs::path& p);\nint Fresh(int);\nint Fresh(double);\nenum class Case { kA };\n"
         "void Fixture::Helper() {}\n}  // namespace\n")
    got = clashes({"t": {"a.cc": a, "b.cc": b}})
    want = {"Slurp", "Ids", "Case"}
    found = {re.search(r"'(\w+)'", g).group(1) for g in got}
    if found != want:
        sys.exit(f"unity_names.py self-check: found {sorted(found)}, expected {sorted(want)}\n" + "\n".join(got))
    # A library header: kplab::Surfaces is seen from kplab and kplab::test; kplab::svg::Lines only from
    # kplab::svg; a member of a class and a name in a comment are not the header's.
    h = ("namespace kplab {\nstruct Surfaces {\n  int Lines;\n};\n// int Words();\nnamespace svg {\n"
         "std::vector<std::string> Lines(int n);\n}  // namespace svg\n}  // namespace kplab\n")
    headers = {}
    for name, line, ns in file_scope_names(h, with_namespace=True):
        headers.setdefault(name, []).append(("h.h", line, ns))
    c = ("namespace kplab {\nnamespace {\nint Surfaces(int x) { return x; }\nint Lines(int n);\nint Words();\n"
         "}  // namespace\n}  // namespace kplab\n")
    d = "namespace kplab::test {\nnamespace {\nint Surfaces = 1;\n}  // namespace\n}  // namespace kplab::test\n"
    e = "namespace other {\nint Surfaces = 1;\n}  // namespace other\n"
    got = header_clashes({"t": {"c.cc": c, "d.cc": d, "e.cc": e}}, headers)
    found = {(re.search(r"in (\w+\.cc)", g).group(1), re.search(r"'(\w+)'", g).group(1)) for g in got}
    if found != {("c.cc", "Surfaces"), ("d.cc", "Surfaces")}:
        sys.exit(f"unity_names.py self-check (headers): found {sorted(found)}\n" + "\n".join(got))


def main(argv):
    if not argv:
        sys.exit(__doc__)
    self_check()
    binaries, header_dirs = {}, []
    if argv[0] == "--headers":
        if len(argv) < 2:
            sys.exit("unity_names.py: --headers takes DIR,DIR,...")
        header_dirs, argv = argv[1].split(","), argv[2:]
        for d in header_dirs:
            if not any(Path(d).rglob("*.h")):
                sys.exit(f"unity_names.py: --headers {d}: no header there (expected the library's source folders)")
    if not argv:
        sys.exit(__doc__)
    for arg in argv:
        binary, _, listed = arg.partition("=")
        # CMake lists its own generated sources (the batches, the precompiled header) among a target's.
        srcs = [s for s in listed.split(",") if s.endswith((".cc", ".c", ".cpp")) and "/CMakeFiles/" not in s]
        if not srcs:
            sys.exit(f"unity_names.py: no sources for {binary} (expected BINARY=SOURCE,SOURCE,...)")
        missing = [s for s in srcs if not Path(s).is_file()]
        if missing:
            sys.exit(f"unity_names.py: {binary}: no source {missing[0]} (expected the binary's sources)")
        binaries[binary] = {s: Path(s).read_text(encoding="utf-8") for s in srcs}
    failures = clashes(binaries) + header_clashes(binaries, header_names(header_dirs))
    for f in failures:
        print(f)
    if failures:
        sys.exit(1)
    print("unity_names: " + ", ".join(f"{b} {len(s)} sources" for b, s in binaries.items()) + ": no name declared twice")


if __name__ == "__main__":
    main(sys.argv[1:])
