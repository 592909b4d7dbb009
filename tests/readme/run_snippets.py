#!/usr/bin/env python3
"""Runs the README's marked snippets, so that every documented way of use is exercised by the tests.

A snippet is a fenced code block preceded (on the line before the fence) by a marker
    <!-- snippet: NAME [file=FILE] [expect=REGEX] -->
Snippets run in README order in one scratch directory, which holds symlinks to the checkout's
examples/, scripts/ and plugins/ so that commands written "from the repository root" work as written:
  - ```sh``` blocks run with bash -euo pipefail;
  - a block with file=FILE is written to FILE (a C or C++ source, a Lua script, a CMakeLists.txt, ...)
    and not run; a later sh block compiles or runs it;
  - ```python``` blocks run with /usr/bin/python3, ```lua``` blocks with `kplab run`;
    (a REPL session is a file= block piped into `kplab repl` by the next sh block);
  - expect=REGEX (URL-style %20 for spaces) must match the snippet's standard output.

The build tree is installed first into a temporary prefix (`cmake --install`), and the environment
points at it the way a default /usr/local install would be found: PATH, LUA_CPATH, PYTHONPATH,
CMAKE_PREFIX_PATH, LD_LIBRARY_PATH, and the compilers' C_INCLUDE_PATH, CPLUS_INCLUDE_PATH and
LIBRARY_PATH. KPLAB_DB points into the scratch directory.

usage: run_snippets.py --source DIR --build DIR [--require name,name,...] [--keep]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

MARKER = re.compile(r"^<!--\s*snippet:\s*(\S+)(.*?)-->\s*$")
FENCE = re.compile(r"^```(\w*)\s*$")


def parse(readme):
    lines = open(readme, encoding="utf-8").read().split("\n")
    snippets = []
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if not m:
            i += 1
            continue
        name, rest = m.group(1), m.group(2)
        attrs = dict(kv.split("=", 1) for kv in rest.split() if "=" in kv)
        if i + 1 >= len(lines) or not FENCE.match(lines[i + 1]):
            sys.exit(f"{readme}:{i + 1}: snippet marker '{name}' must be followed by a ``` fence")
        lang = FENCE.match(lines[i + 1]).group(1)
        j = i + 2
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        if j >= len(lines):
            sys.exit(f"{readme}:{i + 2}: snippet '{name}': unterminated ``` fence")
        snippets.append({"name": name, "lang": lang, "attrs": attrs, "line": i + 1,
                         "text": "\n".join(lines[i + 2:j]) + "\n"})
        i = j + 1
    return snippets


def python_dir(prefix):
    """The directory the install put the Python module in (lib/python3.X/dist-packages for Debian)."""
    for root, _, files in os.walk(prefix):
        if any(f.startswith("kplab.cpython") and f.endswith(".so") for f in files):
            return root
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--readme")
    ap.add_argument("--require", default="")
    ap.add_argument("--only", default="")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    source = os.path.abspath(a.source)
    build = os.path.abspath(a.build)
    readme = a.readme or os.path.join(source, "README.md")
    snippets = parse(readme)
    names = [s["name"] for s in snippets]
    missing = [r for r in a.require.split(",") if r and r not in names]
    if missing:
        sys.exit(f"{readme}: no snippet named {', '.join(missing)} (found: {', '.join(names)})")
    if a.only:
        keep = set(a.only.split(","))
        snippets = [s for s in snippets if s["name"] in keep]

    scratch = tempfile.mkdtemp(prefix="kplab-readme-")
    prefix = os.path.join(scratch, "prefix")
    work = os.path.join(scratch, "work")
    os.makedirs(work)
    # examples/ is copied: scripts may read the working directory only, and a symbolic link out of it
    # does not count as inside (docs/scripts.md).
    shutil.copytree(os.path.join(source, "examples"), os.path.join(work, "examples"))
    for d in ("scripts", "plugins"):
        os.symlink(os.path.join(source, d), os.path.join(work, d))
    r = subprocess.run(["cmake", "--install", build, "--prefix", prefix], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"cmake --install {build} failed:\n{r.stdout}{r.stderr}")

    env = dict(os.environ)
    env["PATH"] = os.path.join(prefix, "bin") + os.pathsep + env.get("PATH", "")
    env["LUA_CPATH"] = os.path.join(prefix, "lib", "lua", "5.4", "?.so") + ";;"
    env["PYTHONPATH"] = python_dir(prefix)
    env["CMAKE_PREFIX_PATH"] = prefix
    libdirs = [os.path.join(prefix, d) for d in ("lib", "lib64", "lib/x86_64-linux-gnu")]
    env["LD_LIBRARY_PATH"] = os.pathsep.join(libdirs + [env.get("LD_LIBRARY_PATH", "")])
    # The C and C++ compilers' default search paths, as /usr/local/include and /usr/local/lib are.
    for var in ("C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH"):
        env[var] = os.pathsep.join([os.path.join(prefix, "include"), env.get(var, "")])
    env["LIBRARY_PATH"] = os.pathsep.join(libdirs + [env.get("LIBRARY_PATH", "")])
    env["KPLAB_DB"] = os.path.join(work, "kplab.db")

    failures = 0
    for s in snippets:
        where = f"{readme}:{s['line']} snippet '{s['name']}'"
        if "file" in s["attrs"]:
            path = os.path.join(work, s["attrs"]["file"])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(s["text"])
            print(f"[wrote] {where} -> {s['attrs']['file']}")
            continue
        if s["lang"] in ("sh", "bash", "console"):
            cmd = ["bash", "-euo", "pipefail", "-c", s["text"]]
        elif s["lang"] == "python":
            cmd = ["/usr/bin/python3", "-c", s["text"]]
        elif s["lang"] == "lua":
            path = os.path.join(work, f"snippet_{s['name']}.lua")
            with open(path, "w", encoding="utf-8") as f:
                f.write(s["text"])
            cmd = ["kplab", "run", path]
        else:
            print(f"{where}: cannot run a '{s['lang']}' block without file=", file=sys.stderr)
            failures += 1
            continue
        r = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=600)
        ok = r.returncode == 0
        expect = s["attrs"].get("expect")
        if ok and expect:
            pattern = urllib.parse.unquote(expect)
            if not re.search(pattern, r.stdout, re.M):
                ok = False
                print(f"{where}: output does not match /{pattern}/", file=sys.stderr)
        print(f"[{'ok' if ok else 'FAIL'}] {where}")
        if not ok:
            failures += 1
            print(f"--- exit {r.returncode}\n--- stdout\n{r.stdout}--- stderr\n{r.stderr}", file=sys.stderr)
    if a.keep:
        print(f"scratch kept: {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        sys.exit(f"{failures} README snippet(s) failed")


if __name__ == "__main__":
    main()
