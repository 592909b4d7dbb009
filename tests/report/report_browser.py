#!/usr/bin/env python3
"""`kplab report` in a real browser: headless Chromium (Debian's) driven over the DevTools protocol
(--remote-debugging-pipe, no driver, no network). Stores two runs of examples/tiny (the shipped
predictions, and a copy whose first document predicts one phrase only), writes the report, opens it
and checks: no console error or uncaught exception; every leaderboard cell holds the value
`kplab runs table --output json` gives; the document list has the five documents, the one where the
runs differ first; clicking it shows that document with its five references and highlighted text.
Usage: report_browser.py KPLAB_BINARY SOURCE_DIR. Exit 77 (skipped) without chromium.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


class Chromium:
    def __init__(self, profile):
        exe = shutil.which("chromium")
        if not exe:
            print("chromium not found: skipped", file=sys.stderr)
            sys.exit(77)
        to_r, to_w = os.pipe()      # we write commands, chromium reads fd 3
        from_r, from_w = os.pipe()  # chromium writes fd 4, we read
        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-pipe",
             f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=lambda: (os.dup2(to_r, 3), os.dup2(from_w, 4)))
        os.close(to_r)
        os.close(from_w)
        self.w, self.r = to_w, from_r
        self.buf = b""
        self.next_id = 0
        self.events = []

    def _read(self, deadline):
        while b"\0" not in self.buf:
            if time.time() > deadline:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self.r, 65536)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, name, timeout=30):
        deadline = time.time() + timeout
        for m in self.events:
            if m.get("method") == name:
                return m
        while True:
            m = self._read(deadline)
            self.events.append(m)
            if m.get("method") == name:
                return m

    def close(self):
        self.proc.kill()
        self.proc.wait()


def main():
    kplab, source = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="kplab_report_")
    db = os.path.join(tmp, "runs.db")
    tiny = os.path.join(source, "examples", "tiny")
    other = os.path.join(tmp, "other.txt")
    with open(os.path.join(tiny, "predictions.txt")) as f:
        lines = f.read().splitlines()
    with open(other, "w") as f:
        f.write("\n".join(["scheduler"] + lines[1:]) + "\n")

    def run(*args):
        r = subprocess.run([kplab, *args, "--db", db], cwd=source, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"kplab {' '.join(args)}: {r.stderr}")
        return r.stdout

    run("eval", "--dataset", tiny, "--predictions", os.path.join(tiny, "predictions.txt"), "--system", "shipped")
    # A name that would switch the HTML parser's script state ("<!--<script>") must not break the page.
    run("eval", "--dataset", tiny, "--predictions", other, "--system", "<!--<script>other")
    # Only a regular file is replaced: a symbolic link (or a device, a FIFO) given as -o is refused and
    # left as it was.
    os.symlink(os.path.join(tmp, "elsewhere.html"), os.path.join(tmp, "link.html"))
    r = subprocess.run([kplab, "report", "1", "2", "-o", os.path.join(tmp, "link.html"), "--db", db], cwd=source,
                       capture_output=True, text=True)
    if r.returncode != 1 or "not a regular file" not in r.stderr or not os.path.islink(os.path.join(tmp, "link.html")):
        sys.exit(f"FAIL: a symbolic link as -o: exit {r.returncode}, {r.stderr!r}")
    html = os.path.join(tmp, "report.html")
    run("report", "1", "2", "-o", html)
    table = json.loads(run("runs", "table", "--runs", "1,2", "--output", "json", "--metrics",
                           "all.f1@5.macro_hm,all.f1@M.macro_hm,present.f1@M.macro_hm,absent.r@10.macro"))
    with open(html) as f:
        page = f.read()
    # No C++ source leaks into the page (the Documents heading once read `documents where )" +
    # Html(opt.doc_metric) + R"HTML( differs most first`); the heading names the metric instead.
    for needle in ('R"HTML(', ')HTML"', 'Html(opt'):
        if needle in page:
            sys.exit(f"FAIL: the report's page holds C++ source text ({needle!r})")
    if "documents where all.f1@5 differs most first.</p>" not in page:
        sys.exit("FAIL: the Documents heading does not name the default per-document metric all.f1@5")
    # Self-contained: no external resource (the SVG namespace URI is a name, not a fetch).
    for needle in ("<link", "<script src", 'src="http', "href=\"http", "url(http", "@import", "<iframe"):
        if needle in page:
            sys.exit(f"FAIL: the report loads something from elsewhere ({needle})")

    browser = Chromium(os.path.join(tmp, "profile"))
    failures = []
    try:
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            browser.call(f"{domain}.enable", session=session)
        browser.call("Page.navigate", {"url": "file://" + html}, session=session)
        browser.wait_event("Page.loadEventFired")

        def js(expr):
            r = browser.call("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=session)
            if "exceptionDetails" in r:
                failures.append(f"evaluating {expr}: {r['exceptionDetails']}")
                return None
            return r["result"].get("value")

        cells = js("Array.from(document.querySelectorAll('table.board td[data-value]')).map(td => td.dataset.value)")
        want = [str(c["mean"]) if c else None for row in table["rows"] for c in row["cells"]]
        got = [float(x) for x in cells or []]
        if len(got) != len([w for w in want if w is not None]) or any(
                abs(g - float(w)) > 0 for g, w in zip(got, [w for w in want if w is not None])):
            failures.append(f"leaderboard values {cells} != runs table {want}")
        options = js("Array.from(document.querySelectorAll('#runB option')).map(o => o.textContent)")
        if options != ["run 1: shipped", "run 2: <!--<script>other"]:
            failures.append(f"run selector {options}")
        rows = js("Array.from(document.querySelectorAll('#doclist tbody tr')).map(tr => tr.dataset.doc)")
        if not rows or len(rows) != 5 or rows[0] != "1":
            failures.append(f"document list {rows} (expected 5 documents, the differing document '1' first)")
        js("document.querySelector('#doclist tbody tr').dispatchEvent(new MouseEvent('click', {bubbles: true}))")
        title = js("document.getElementById('doc-title') && document.getElementById('doc-title').textContent")
        refs = js("document.querySelectorAll('#refs li').length")
        marked = js("document.querySelectorAll('.text span.ref').length")
        preds_b = js("document.querySelectorAll('ol.preds[data-run=\"2\"] li').length")
        if title != "document 1" or refs != 5 or not marked or preds_b != 1:
            failures.append(f"after the click: title {title!r}, {refs} references, {marked} highlighted tokens, "
                            f"{preds_b} predictions of run 2 (expected 'document 1', 5, > 0, 1)")
        time.sleep(0.2)
        for m in browser.events:
            method = m.get("method")
            if method == "Runtime.exceptionThrown":
                failures.append(f"uncaught exception: {m['params']['exceptionDetails']}")
            elif method == "Runtime.consoleAPICalled" and m["params"]["type"] in ("error", "assert"):
                failures.append(f"console error: {m['params']['args']}")
            elif method == "Log.entryAdded" and m["params"]["entry"]["level"] == "error":
                failures.append(f"log error: {m['params']['entry']['text']}")
    finally:
        browser.close()
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    print(f"report checked in {shutil.which('chromium')}: {len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
