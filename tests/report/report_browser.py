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
import re
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


class Page:
    """One tab of the browser, opened on a file."""

    def __init__(self, browser, path, failures):
        self.browser, self.failures = browser, failures
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            browser.call(f"{domain}.enable", session=self.session)
        browser.call("Emulation.setDeviceMetricsOverride",
                     {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False}, session=self.session)
        browser.events = [m for m in browser.events if m.get("method") != "Page.loadEventFired"]
        browser.call("Page.navigate", {"url": "file://" + path}, session=self.session)
        browser.wait_event("Page.loadEventFired", timeout=120)

    def js(self, expr):
        r = self.browser.call("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=self.session,
                              timeout=120)
        if "exceptionDetails" in r:
            self.failures.append(f"evaluating {expr}: {r['exceptionDetails']}")
            return None
        return r["result"].get("value")

    def screenshot(self, path):
        """The whole page as PNG (KPLAB_REPORT_SCREENSHOTS: for a person to look at, not checked)."""
        import base64
        r = self.browser.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True},
                              session=self.session, timeout=120)
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))


def kplab_runner(kplab, db, cwd):
    def run(*args):
        r = subprocess.run([kplab, *args, "--db", db], cwd=cwd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"kplab {' '.join(args)}: {r.stderr}")
        return r.stdout
    return run


def text_cells(table_text):
    """The cells of `kplab runs table`'s text output, row by row (columns are 2+ spaces apart)."""
    rows = {}
    for line in table_text.splitlines():
        parts = re.split(r"\s{2,}", line.strip())
        if len(parts) > 1:
            rows[parts[0]] = parts[1:]
    return rows


def console_failures(browser):
    out = []
    for m in browser.events:
        method = m.get("method")
        if method == "Runtime.exceptionThrown":
            out.append(f"uncaught exception: {m['params']['exceptionDetails']}")
        elif method == "Runtime.consoleAPICalled" and m["params"]["type"] in ("error", "assert"):
            out.append(f"console error: {m['params']['args']}")
        elif method == "Log.entryAdded" and m["params"]["entry"]["level"] == "error":
            out.append(f"log error: {m['params']['entry']['text']}")
    return out


def check_static(page, failures):
    # No C++ source leaks into the page (the Documents heading once read `documents where )" +
    # Html(opt.doc_metric) + R"HTML( differs most first`), and no template placeholder is left.
    for needle in ('R"HTML(', ')HTML"', 'Html(opt', "{{"):
        if needle in page:
            failures.append(f"the report's page holds source text ({needle!r})")
    # Self-contained: no external resource (the SVG namespace URI is a name, not a fetch).
    for needle in ("<link", "<script src", 'src="http', "href=\"http", "url(http", "@import", "<iframe"):
        if needle in page:
            failures.append(f"the report loads something from elsewhere ({needle})")


def check_leaderboard(p, run, ids, metrics, failures, baseline=None):
    """Every cell holds the stored mean (data-value) and the text `runs table` prints for it (with the
    report's 1,999 resamples against a baseline)."""
    extra = ["--baseline", baseline, "--resamples", "1999"] if baseline else []
    table = json.loads(run("runs", "table", "--runs", ids, "--output", "json", "--metrics", metrics, *extra))
    text = text_cells(run("runs", "table", "--runs", ids, "--metrics", metrics, *extra))
    cells = p.js("Array.from(document.querySelectorAll('table.board td[data-value]')).map(td => td.dataset.value)")
    want = [c["mean"] for row in table["rows"] for c in row["cells"] if c]
    got = [float(x) for x in cells or []]
    if got != want:
        failures.append(f"leaderboard values {cells} != runs table {want}")
    shown = p.js("Array.from(document.querySelectorAll('table.board tbody tr')).map(tr => "
                 "Array.from(tr.cells).map(td => td.textContent))")
    for row in shown or []:
        if text.get(row[0]) != row[1:]:
            failures.append(f"leaderboard row {row} != `runs table` text {text.get(row[0])}")
    return table


def tiny_report(kplab, source, tmp, browser, failures):
    """Two runs of examples/tiny: the shipped predictions, and a copy whose first document predicts one
    phrase only (its system name would switch the HTML parser's script state)."""
    db = os.path.join(tmp, "runs.db")
    tiny = os.path.join(source, "examples", "tiny")
    other = os.path.join(tmp, "other.txt")
    with open(os.path.join(tiny, "predictions.txt")) as f:
        lines = f.read().splitlines()
    with open(other, "w") as f:
        f.write("\n".join(["scheduler"] + lines[1:]) + "\n")
    run = kplab_runner(kplab, db, source)
    run("eval", "--dataset", tiny, "--predictions", os.path.join(tiny, "predictions.txt"), "--system", "shipped")
    run("eval", "--dataset", tiny, "--predictions", other, "--system", "<!--<script>other")
    # Only a regular file is replaced: a symbolic link (or a device, a FIFO) given as -o is refused and
    # left as it was.
    os.symlink(os.path.join(tmp, "elsewhere.html"), os.path.join(tmp, "link.html"))
    r = subprocess.run([kplab, "report", "1", "2", "-o", os.path.join(tmp, "link.html"), "--db", db], cwd=source,
                       capture_output=True, text=True)
    if r.returncode != 1 or "not a regular file" not in r.stderr or not os.path.islink(os.path.join(tmp, "link.html")):
        failures.append(f"a symbolic link as -o: exit {r.returncode}, {r.stderr!r}")
    html = os.path.join(tmp, "report.html")
    run("report", "1", "2", "-o", html)
    with open(html) as f:
        page = f.read()
    check_static(page, failures)
    if "where all.f1@5 differs most first.</p>" not in page:
        failures.append("the Documents heading does not name the default per-document metric all.f1@5")
    p = Page(browser, html, failures)
    check_leaderboard(p, run, "1,2", "all.f1@5.macro_hm,all.f1@M.macro_hm,present.f1@M.macro_hm,absent.r@10.macro",
                      failures)
    options = p.js("Array.from(document.querySelectorAll('section.dataset .runB option')).map(o => o.textContent)")
    if options != ["run 1: shipped", "run 2: <!--<script>other"]:
        failures.append(f"run selector {options}")
    rows = p.js("Array.from(document.querySelectorAll('.doclist tbody tr')).map(tr => tr.dataset.doc)")
    if not rows or len(rows) != 5 or rows[0] != "1":
        failures.append(f"document list {rows} (expected 5 documents, the differing document '1' first)")
    # The list shows each document's title (the text before <eos> in tiny_context.txt) and its number of
    # references (tiny_allkeywords.txt).
    with open(os.path.join(tiny, "tiny_context.txt")) as f:
        titles = [line.split(" <eos>")[0].strip() for line in f]
    with open(os.path.join(tiny, "tiny_allkeywords.txt")) as f:
        nrefs = [str(len([k for k in line.strip().split(";") if k])) for line in f]
    first = p.js("Array.from(document.querySelector('.doclist tbody tr').cells).map(td => td.textContent)")
    if not first or first[:2] != [titles[0], nrefs[0]]:
        failures.append(f"first document row {first} (expected title {titles[0]!r} and {nrefs[0]} references)")
    p.js("document.querySelector('.doclist tbody tr').dispatchEvent(new MouseEvent('click', {bubbles: true}))")
    title = p.js("document.querySelector('.doc-title') && document.querySelector('.doc-title').textContent")
    refs = p.js("document.querySelectorAll('.refs li').length")
    marked = p.js("document.querySelectorAll('.text span.ref').length")
    preds_b = p.js("document.querySelectorAll('ol.preds[data-run=\"2\"] li').length")
    if title != titles[0] or refs != 5 or not marked or preds_b != 1:
        failures.append(f"after the click: title {title!r}, {refs} references, {marked} highlighted tokens, "
                        f"{preds_b} predictions of run 2 (expected {titles[0]!r}, 5, > 0, 1)")
    # A legend names every colour and outline: the text's three marks and each figure's colours.
    legend = p.js("Array.from(document.querySelectorAll('.text-legend span')).map(s => s.className)")
    if not legend or not {"ref", "pred-match", "pred-miss"} <= set(legend):
        failures.append(f"the text legend shows {legend} (expected the classes ref, pred-match, pred-miss)")
    check_figures(p, ["tiny"], failures)


def check_figures(p, datasets, failures):
    """Each dataset's section names it in every figure; each box colour is in the figure's legend."""
    got = p.js("Array.from(document.querySelectorAll('section.dataset')).map(s => ({"
               "heading: s.querySelector('h2').textContent,"
               "figures: Array.from(s.querySelectorAll('figure')).map(f => ({"
               "  title: f.querySelector('svg').textContent, caption: f.querySelector('figcaption').textContent,"
               "  boxes: Array.from(f.querySelectorAll('g.group')).map(g => g.getAttribute('stroke')),"
               "  swatches: Array.from(f.querySelectorAll('.swatch')).map(w => w.style.background)}))}))")
    if not got or [s["heading"] for s in got] != [f"Dataset: {d}" for d in datasets]:
        failures.append(f"dataset sections {got and [s['heading'] for s in got]} (expected {datasets})")
        return
    for section, name in zip(got, datasets):
        if len(section["figures"]) != 2:
            failures.append(f"{name}: {len(section['figures'])} figures (expected a box plot and a heat map)")
        for fig in section["figures"]:
            if name not in fig["title"] or name not in fig["caption"]:
                failures.append(f"{name}: a figure does not name its dataset ({fig['title'][:80]!r})")
            if not fig["swatches"]:
                failures.append(f"{name}: a figure without a colour legend ({fig['title'][:80]!r})")
            swatches = {rgb_hex(c) for c in fig["swatches"]}
            for colour in fig["boxes"]:
                if colour.lower() not in swatches:
                    failures.append(f"{name}: box colour {colour} is not in its legend {sorted(swatches)}")


def rgb_hex(css):
    m = re.match(r"rgb\((\d+), (\d+), (\d+)\)", css)
    return "#%02x%02x%02x" % tuple(int(x) for x in m.groups()) if m else css.lower()


# The references of each line as the default profile scores them (docs/profiles.md): lower-cased, split
# on spaces, deduplicated by their tuple of NLTK Porter stems (first wins). NLTK is Debian's python3-nltk
# (a test package of scripts/setup.sh), run by /usr/bin/python3 when this interpreter lacks it.
STEM_COUNTS = r"""
import sys
from nltk.stem.porter import PorterStemmer
stem = PorterStemmer().stem
for line in sys.stdin.read().splitlines():
    keys = {tuple(stem(w) for w in k.strip().lower().split()) for k in line.split(";") if k.strip()}
    print(len(keys))
"""


def distinct_by_stems(lines):
    for exe in (sys.executable, "/usr/bin/python3"):
        r = subprocess.run([exe, "-c", STEM_COUNTS], input="\n".join(lines) + "\n", capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.split()
    print("nltk not found: reference counts of the real data not checked", file=sys.stderr)
    return None


def real_report(kplab, source, tmp, browser, failures, shots):
    """Runs of real systems on two datasets of ../shared/data: the sections, and the runs compared by
    default worked out here from `runs table`'s means by the rule docs/report.md states."""
    data = os.path.join(source, "..", "shared", "data")
    if not os.path.isdir(data):
        print("../shared/data absent: the real-data report is not checked", file=sys.stderr)
        return
    db = os.path.join(tmp, "real.db")
    run = kplab_runner(kplab, db, source)
    preds = os.path.join(data, "predictions")
    plan = [("inspec", "catSeqTG-2RF1", "seed1234.txt", 1234), ("inspec", "catSeqTG-2RF1", "seed5678.txt", 5678),
            ("inspec", "catSeqTG-2RF1", "seed9527.txt", 9527), ("inspec", "catSeq", "predictions.txt", None),
            ("inspec", "catSeq-RL", "predictions.txt", None), ("inspec", "catSeq-run2", "predictions.txt", None),
            ("krapivin", "catSeq", "predictions.txt", None), ("krapivin", "catSeq-RL", "predictions.txt", None),
            ("krapivin", "catSeqTG-2RF1", "seed1234.txt", 1234)]
    for ds, system, file, seed in plan:
        args = ["eval", "--dataset", os.path.join(data, "kpg_testsets_meng2017", ds), "--predictions",
                os.path.join(preds, system, ds, file), "--system", system]
        run(*args, *(["--seed", str(seed)] if seed else []))
    ids = ",".join(str(i) for i in range(1, len(plan) + 1))
    headline = "all.f1@5.macro_hm"
    table = json.loads(run("runs", "table", "--runs", ids, "--output", "json", "--metrics", headline))
    means = {}  # (system, dataset) -> mean over its runs
    for row in table["rows"]:
        for col, cell in zip(table["columns"], row["cells"]):
            if cell:
                means[(row["system"], col["dataset"])] = cell["mean"]

    def expected(ds, baseline):
        """(A, B) by docs/report.md: A the baseline's first run on ds (else ds's first run); B the first run
        of the best other system by the headline mean, ties to the system given first."""
        on = [(i + 1, system) for i, (d, system, _, _) in enumerate(plan) if d == ds]
        a = next((i for i, s in on if s == baseline), on[0][0])
        base = dict(on)[a]
        firsts = [(i, s) for i, s in on if s != base and i == next(j for j, t in on if t == s)]
        best = max(firsts, key=lambda x: (means[(x[1], ds)], -x[0]))
        return a, best[0]

    for baseline in (None, "catSeq"):
        html = os.path.join(tmp, f"real-{baseline or 'none'}.html")
        run("report", *ids.split(","), "-o", html, *(["--baseline", baseline] if baseline else []))
        with open(html) as f:
            check_static(f.read(), failures)
        p = Page(browser, html, failures)
        if shots:
            p.screenshot(os.path.join(shots, f"real-{baseline or 'none'}-top.png"))
        chosen = p.js("Array.from(document.querySelectorAll('section.dataset')).map(s => "
                      "[Number(s.querySelector('.runA').value), Number(s.querySelector('.runB').value)])")
        want = [list(expected(ds, baseline)) for ds in ("inspec", "krapivin")]
        if chosen != want:
            failures.append(f"--baseline {baseline}: runs compared by default {chosen} (expected {want}: "
                            f"headline means {means})")
        check_leaderboard(p, run, ids, "all.f1@5.macro_hm,all.f1@M.macro_hm,present.f1@M.macro_hm,absent.r@10.macro",
                          failures, baseline)
        check_figures(p, ["inspec", "krapivin"], failures)
        if shots:
            p.js("document.querySelector('.doclist tbody tr').dispatchEvent(new MouseEvent('click', {bubbles: true}))")
            p.screenshot(os.path.join(shots, f"real-{baseline or 'none'}-clicked.png"))
    # Titles and reference counts of the first dataset's documents from the dataset's own files (a
    # reference line's distinct phrases).
    base = os.path.join(data, "kpg_testsets_meng2017", "inspec")
    with open(os.path.join(base, "word_inspec_testing_context.txt")) as f:
        titles = [line.split(" <eos>")[0].strip() for line in f]
    with open(os.path.join(base, "word_inspec_testing_allkeywords.txt")) as f:
        nrefs = distinct_by_stems(f.read().splitlines())
    rows = p.js("Array.from(document.querySelectorAll('section.dataset')[0].querySelectorAll('.doclist tbody tr'))"
                ".map(tr => [Number(tr.dataset.doc), tr.cells[0].textContent, tr.cells[1].textContent])")
    if not rows or len(rows) != 200:
        failures.append(f"inspec: {len(rows or [])} rows in the document list (expected the 200 that differ most)")
    for doc, title, nref in rows or []:
        if nrefs is None:
            nref = None
        if [title, nref] != [titles[doc - 1], nrefs[doc - 1] if nrefs else None]:
            failures.append(f"inspec document {doc}: {title!r} with {nref} references (expected {titles[doc - 1]!r} "
                            f"with {nrefs[doc - 1] if nrefs else '?'})")
            break


def main():
    kplab, source = sys.argv[1], sys.argv[2]
    shots = os.environ.get("KPLAB_REPORT_SCREENSHOTS")
    tmp = tempfile.mkdtemp(prefix="kplab_report_")
    failures = []
    browser = Chromium(os.path.join(tmp, "profile"))
    try:
        tiny_report(kplab, source, tmp, browser, failures)
        real_report(kplab, source, tmp, browser, failures, shots)
        time.sleep(0.2)
        failures += console_failures(browser)
    finally:
        browser.close()
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    print(f"report checked in {shutil.which('chromium')}: {len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
