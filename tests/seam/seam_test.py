"""The same bad requests through all five front-ends of the evaluate-and-store seam (host/engine/eval_store.h):
`kplab eval`, the C ABI (kplab_load_ex + kplab_evaluate_ex, through ctypes), kplab.evaluate in Python,
kp.evaluate under `kplab run`, and kp.evaluate from the stock lua5.4 with require "kplab". Each must fail
with the same message; the kind is checked where the front-end carries one (the CLI's exit code, the C ABI's
kplab_error_kind(), the Python exception class) against the table in host/engine/exit_code.h, written out
here; and where the CLI records a failed run, every front-end records one, alike.

Usage: seam_test.py KPLAB LIBKPLAB_C LUA LUA_MODULE_DIR SOURCE_DIR   (the Python module on PYTHONPATH)
"""
import ctypes
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import unittest

import kplab

KPLAB, LIBC, LUA, LUA_MODDIR, SRC = sys.argv[1:6]
TINY = os.path.join(SRC, "examples", "tiny")
PREDS = os.path.join(TINY, "predictions.txt")
PLUGINS = os.path.join(SRC, "tests", "seam", "plugins")
SCRIPT = os.path.join(SRC, "tests", "seam", "evaluate.lua")
# The test plugins reach every front-end the same way (the C ABI has no plugin-directory argument).
os.environ["KPLAB_PLUGIN_PATH"] = PLUGINS

# host/engine/exit_code.h's table, written out: kind -> (exit code, Python class).
FORMS = {
    "usage": (1, "UsageError"),
    "input": (2, "InputError"),
    "script": (3, "ScriptError"),
    "limit": (3, "LimitError"),
    "store": (4, "StoreError"),
    "internal": (5, "InternalError"),
}


class Case:
    """One request. params: (metric, name, value) triples, given once each unless repeated."""

    def __init__(self, name, kind, metrics="exact", params=(), profile="kplab", dataset=TINY, preds=PREDS,
                 recorded=False, lua=True):
        self.name, self.kind, self.metrics, self.params = name, kind, metrics, list(params)
        self.profile, self.dataset, self.preds, self.recorded, self.lua = profile, dataset, preds, recorded, lua


CASES = [
    Case("unknown metric", "usage", metrics="exactt"),
    Case("bad parameter value", "usage", params=[("exact", "ks", "0")]),
    Case("unknown parameter", "usage", params=[("exact", "nosuch", "1")]),
    # Lua tables cannot name a key twice: kp.evaluate cannot express it.
    Case("repeated parameter", "usage", params=[("exact", "ks", "5"), ("exact", "ks", "10")], lua=False),
    Case("unknown profile", "usage", profile="kplabb"),
    Case("missing predictions file", "input", preds=os.path.join(TINY, "no-such-predictions.txt")),
    Case("limit reached while scoring", "script", metrics="spin", recorded=True),
    Case("plugin error while scoring", "script", metrics="fails", recorded=True),
]


def failed_runs(db):
    if not os.path.exists(db):
        return []
    with sqlite3.connect(db) as c:
        return c.execute("SELECT id, status, error FROM runs ORDER BY id").fetchall()


class Seam(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.lib = ctypes.CDLL(LIBC)
        self.lib.kplab_load_ex.restype = ctypes.c_void_p
        self.lib.kplab_load_ex.argtypes = [ctypes.c_char_p] * 4 + [ctypes.POINTER(ctypes.c_char_p)]
        self.lib.kplab_store_open.restype = ctypes.c_void_p
        self.lib.kplab_store_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
        self.lib.kplab_store_close.argtypes = [ctypes.c_void_p]
        self.lib.kplab_data_free.argtypes = [ctypes.c_void_p]
        self.lib.kplab_evaluate_ex.restype = ctypes.c_void_p
        self.lib.kplab_evaluate_ex.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                               ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
        self.lib.kplab_free.argtypes = [ctypes.c_void_p]
        self.lib.kplab_error_kind.restype = ctypes.c_int

    def db(self, case, frontend):
        d = os.path.join(self.tmp.name, re.sub(r"\W", "_", case.name), frontend)
        os.makedirs(d, exist_ok=True)
        return os.path.join(d, "runs.db")

    # Each returns (kind or None, message), the message with the store's path written DB.

    def cli(self, case, db):
        args = [KPLAB, "eval", "--dataset", case.dataset, "--predictions", case.preds, "--metrics", case.metrics,
                "--profile", case.profile, "--db", db, "--threads", "1"]
        for m, n, v in case.params:
            args += ["--param", f"{m}.{n}={v}"]
        p = subprocess.run(args, capture_output=True, text=True, timeout=120)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        kind = [k for k, (code, _) in FORMS.items() if code == p.returncode]
        # Every report is "kplab: MESSAGE" (a traceback's lines follow unprefixed).
        message = re.sub(r"^kplab: ", "", p.stderr, flags=re.M).rstrip("\n")
        # An argument the command line itself refuses gets its pointer to the help.
        message = message.removesuffix(" (see 'kplab help')")
        return kind, message.replace(db, "DB")

    def capi(self, case, db):
        err = ctypes.c_char_p()
        store = self.lib.kplab_store_open(db.encode(), ctypes.byref(err))
        self.assertTrue(store, err.value)
        try:
            data = self.lib.kplab_load_ex(case.dataset.encode(), case.preds.encode(), case.profile.encode(), None,
                                          ctypes.byref(err))
            if data:
                params = ";".join(f"{m}.{n}={v}" for m, n, v in case.params).encode()
                out = self.lib.kplab_evaluate_ex(data, case.metrics.encode(), params, None, store, b"threads=1",
                                                 ctypes.byref(err))
                self.lib.kplab_data_free(data)
                self.assertFalse(out, "evaluated")
            code = self.lib.kplab_error_kind()
            return [k for k, (c, _) in FORMS.items() if c == code], err.value.decode().replace(db, "DB")
        finally:
            self.lib.kplab_store_close(store)

    def python(self, case, db):
        params = {}
        for m, n, v in case.params:
            # The nested and the dotted form of one parameter: a repeat, as --param twice.
            if f"{m}" in params:
                params[f"{m}.{n}"] = v
            else:
                params[m] = {n: v}
        try:
            kplab.evaluate(case.dataset, case.preds, metrics=case.metrics, profile=case.profile, params=params,
                           store=db, threads=1)
        except kplab.Error as e:
            kinds = [k for k, (_, cls) in FORMS.items() if type(e).__name__ == cls]
            return kinds, str(e).replace(db, "DB")
        self.fail("evaluated")

    def lua(self, case, db, host):
        m, n, v = case.params[0] if case.params else ("", "", "")
        script_args = [case.dataset, case.preds, case.profile, case.metrics, db] + ([m, n, v] if m else [])
        if host:
            cmd = [KPLAB, "run", "--allow-read", SRC, "--allow-write", os.path.dirname(db), SCRIPT] + script_args
            env = os.environ
        else:
            cmd = [LUA, SCRIPT] + script_args
            env = dict(os.environ, LUA_CPATH=os.path.join(LUA_MODDIR, "?.so"))
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.startswith("error "), p.stdout)
        # Lua's form: "FUNCTION: MESSAGE" (kp.load or kp.evaluate), no kind.
        message = re.sub(r"^(kp\.load|kp\.evaluate): ", "", p.stdout[len("error "):].rstrip("\n"))
        return None, message.replace(db, "DB")

    def test_same_failure_everywhere(self):
        for case in CASES:
            with self.subTest(case.name):
                got = {"cli": self.cli(case, self.db(case, "cli")), "c": self.capi(case, self.db(case, "c")),
                       "python": self.python(case, self.db(case, "python"))}
                if case.lua:
                    got["kp.evaluate"] = self.lua(case, self.db(case, "kp.evaluate"), host=True)
                    got["lua module"] = self.lua(case, self.db(case, "lua module"), host=False)
                code, cls = FORMS[case.kind]
                self.assertIn(case.kind, got["cli"][0], f"exit code for {case.kind}")
                self.assertIn(case.kind, got["c"][0], f"kplab_error_kind for {case.kind}")
                self.assertEqual(got["python"][0], [case.kind], f"Python class for {case.kind}")
                messages = {fe: m for fe, (_, m) in got.items()}
                self.assertEqual(len(set(messages.values())), 1, messages)
                if case.kind == "usage":
                    self.assertNotIn("\n", messages["cli"])
                runs = {fe: failed_runs(self.db(case, fe)) for fe in got}
                for fe, rows in runs.items():
                    if case.recorded:
                        self.assertEqual(len(rows), 1, (fe, rows))
                        self.assertEqual(rows[0][1], "failed", fe)
                        self.assertTrue(messages[fe].endswith("\nrun 1 recorded as failed in DB"), (fe, messages[fe]))
                    else:
                        self.assertEqual(rows, [], fe)
                # The recorded error text is the same too (file:line and traceback of the plugin).
                self.assertEqual(len({tuple((r[1], r[2]) for r in rows) for rows in runs.values()}), 1, runs)

    def test_messages_are_the_cores(self):
        # Hand-written expectations for the parameter rules every front-end now shares.
        _, m = self.cli(CASES[3], self.db(CASES[3], "cli2"))
        self.assertEqual(m, "parameter exact.ks is given twice (expected one value per parameter)")
        _, m = self.cli(CASES[0], self.db(CASES[0], "cli2"))
        self.assertTrue(m.startswith("unknown metric 'exactt' (did you mean 'exact'?"), m)
        p = subprocess.run([KPLAB, "eval", "--dataset", TINY, "--predictions", PREDS, "--no-store", "--param",
                            "exactks=5"], capture_output=True, text=True, timeout=60)
        self.assertEqual((p.returncode, p.stderr), (1, "kplab: parameter must be METRIC.NAME=VALUE (got 'exactks=5') (see 'kplab help')\n"))
        err = ctypes.c_char_p()
        data = self.lib.kplab_load_ex(TINY.encode(), PREDS.encode(), None, None, ctypes.byref(err))
        self.assertTrue(data, err.value)
        out = self.lib.kplab_evaluate_ex(data, b"exact", b"exactks=5", None, None, None, ctypes.byref(err))
        self.lib.kplab_data_free(data)
        self.assertFalse(out)
        self.assertEqual(err.value.decode(), "parameter must be METRIC.NAME=VALUE (got 'exactks=5')")
        self.assertEqual(self.lib.kplab_error_kind(), 1)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
