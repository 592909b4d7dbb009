"""The Python module's run store under attack (docs/python.md, "Threads and object lifetimes"; docs/store.md,
"Reading a store back" and "Store paths"): a Store closed from another thread during a call, one Store
shared by threads, the documented comma-separated patterns, every entry point that takes a store path
given a FIFO, and stores changed behind kplab's back. Run by ctest (`python_store_safety`) with the
module on PYTHONPATH, and by scripts/sanitize.sh under ASan, where a use after free is a finding."""

import inspect
import os
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import unittest
import warnings

import kplab

SOURCE_DIR = os.environ.get("KPLAB_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
TINY = os.path.join(SOURCE_DIR, "examples", "tiny")
TINY_PREDS = os.path.join(TINY, "predictions.txt")


class Base(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name
        os.environ["KPLAB_MODELS"] = os.path.join(self.tmp, "models")

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp, name)


class LifetimeTest(Base):
    """A call keeps the store's connection for itself: close() from another thread waits for it, and
    later calls raise StoreError; nothing aborts (it did: an SQLiteCpp assertion when the connection
    was closed under a compare)."""

    def setUp(self):
        super().setUp()
        self.db = self.path("runs.db")
        for system in ("a", "b"):
            kplab.evaluate(TINY, TINY_PREDS, metrics=["exact", "rank"], system=system, store=self.db)

    def race(self, call, tries=25):
        closed = f"{self.db}: the store is closed"
        rng = random.Random(7)
        for _ in range(tries):
            store = kplab.Store(self.db)
            outcome = []
            started = threading.Event()

            def work():
                started.set()
                try:
                    for _ in range(50):
                        call(store)
                    outcome.append("done")
                except kplab.StoreError as e:
                    outcome.append(str(e))
                except BaseException as e:  # anything else is the bug
                    outcome.append(f"{type(e).__name__}: {e}")

            t = threading.Thread(target=work)
            t.start()
            started.wait()
            threading.Event().wait(rng.uniform(0, 0.02))
            store.close()
            t.join(60)
            self.assertFalse(t.is_alive())
            self.assertIn(outcome[0], ("done", closed))
            with self.assertRaises(kplab.StoreError) as cm:
                call(store)
            self.assertEqual(str(cm.exception), closed)

    def test_close_during_compare(self):
        self.race(lambda s: s.compare(1, 2, resamples=200))

    def test_close_during_table(self):
        self.race(lambda s: s.table("all.p@5*,all.mrr", baseline="a", resamples=200, as_frame=False))

    def test_close_during_run_and_runs(self):
        self.race(lambda s: (s.run(1), s.runs()))

    def test_close_during_evaluate_into_the_store(self):
        self.race(lambda s: kplab.evaluate(TINY, TINY_PREDS, metrics=["exact"], store=s), tries=5)

    def test_embedder_unregistered_during_evaluate(self):
        # The run holds the embedder it started with: unregistering it from another thread mid-run
        # leaves the run's copy alive (the embedder's callable is dropped with the GIL when the run
        # ends), and the run gives the numbers of an undisturbed one.
        vectors = {"apple": [1.0, 0.0], "banana": [0.0, 1.0]}
        entered = threading.Event()

        def embed(batch):
            entered.set()
            threading.Event().wait(0.05)
            return [vectors.get(p.split()[-1], [1.0, 1.0]) for p in batch]

        docs = [{"id": "1", "text": "apple banana", "keyphrases": ["apple", "banana"]}]
        preds = [["banana", "apple pie"]]
        kplab.register_embedder("slow", embed, dims=2, version="1")
        want = kplab.evaluate(docs, preds, metrics=["semrp"], model="slow", cache=self.path("c1.db"))
        entered.clear()  # set again by the run below, once it is embedding
        got = []
        t = threading.Thread(target=lambda: got.append(
            kplab.evaluate(docs, preds, metrics=["semrp"], model="slow", cache=self.path("c2.db"))))
        t.start()
        entered.wait(10)
        kplab.unregister_embedder("slow")
        t.join(60)
        self.assertEqual(len(got), 1)
        self.assertEqual(got[0]["aggregates"], want["aggregates"])

    def test_threads_share_one_store(self):
        # Calls on one Store from several threads take turns on its connection: the same answers as
        # one thread (before, two compares at once failed with "cannot start a transaction within a
        # transaction").
        store = kplab.Store(self.db)
        want = store.compare(1, 2, resamples=300)
        got, errors = [], []

        def work():
            try:
                for _ in range(3):
                    got.append(store.compare(1, 2, resamples=300))
                    kplab.evaluate(TINY, TINY_PREDS, metrics=["exact"], system="c", store=store)
            except BaseException as e:
                errors.append(repr(e))

        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(got), 9)
        for g in got:
            self.assertEqual(g, want)
        self.assertEqual(len(store.runs()), 2 + 9)
        store.close()


class PatternsTest(Base):
    """Store.table / Store.compare take metrics as one ','-separated string (the documented call):
    each pattern is its own string (it was a view into a destroyed temporary: an empty or garbled
    InputError)."""

    def test_comma_separated_patterns(self):
        db = self.path("runs.db")
        kplab.evaluate(TINY, TINY_PREDS, metrics=["exact"], system="a", store=db)
        with kplab.Store(db) as s:
            rows = s.table(" all.f1@5.macro_hm , all.p@5.micro", as_frame=False)
            self.assertEqual(sorted({r["metric"] for r in rows}), ["all.f1@5.macro_hm", "all.p@5.micro"])
            long_name = "a_pattern_long_enough_to_live_on_the_heap_*"
            with self.assertRaises(kplab.InputError) as cm:
                s.table("all.p@5.micro," + long_name, as_frame=False)
            self.assertEqual(str(cm.exception),
                             f"--metrics pattern '{long_name}' matches no aggregate of the selected runs")
            kplab.evaluate(TINY, TINY_PREDS, metrics=["exact"], system="b", store=db)
            c = s.compare(1, 2, metrics="all.p@5.macro, all.r@5.macro")
            self.assertEqual(sorted(c["metrics"]), ["all.p@5.macro", "all.r@5.macro"])


class StorePathsTest(Base):
    """Every entry point of the module that takes a store path refuses a FIFO with the importers'
    message (it blocked for ever). The entry points are found by their parameters, so a new one fails
    here until it has a case."""

    CASES = {
        ("Store", "path"): "kplab.Store(FIFO)",
        ("evaluate", "store"): "kplab.evaluate(TINY, PREDS, metrics=['exact'], store=FIFO)",
        ("evaluate", "cache"): "kplab.evaluate(TINY, PREDS, metrics=['semrp'], model='tiny', cache=FIFO)",
        ("merge", "stores"): "kplab.merge([FIFO], out=OUT)",
        ("merge", "out"): "kplab.merge([GOOD0, GOOD1], out=FIFO)",
        ("Store", "KPLAB_DB"): "kplab.Store()",
    }
    STORE_PARAMS = {"path", "store", "stores", "out", "cache", "db"}

    def entry_points(self):
        found = set()
        for name, obj in inspect.getmembers(kplab):
            doc = getattr(obj, "__doc__", "") or ""
            if inspect.isclass(obj):
                doc = getattr(obj.__init__, "__doc__", "") or ""
            first = doc.split("\n")[0]
            for param in re.findall(r"(\w+): ", first):
                if param in self.STORE_PARAMS:
                    found.add((name, param))
        return found

    def test_every_store_path_refuses_a_fifo(self):
        found = self.entry_points()
        self.assertGreaterEqual(len(found), 5)
        for key in found:
            self.assertIn(key, self.CASES, f"{key[0]}({key[1]}=...) takes a store path and has no FIFO case here")
        fifo = self.path("fifo.db")
        os.mkfifo(fifo)
        good = [self.path("g0.db"), self.path("g1.db")]
        for i, g in enumerate(good):
            kplab.evaluate(TINY, TINY_PREDS, metrics=["exact"], shard=(i, 2), store=g)
        env = dict(os.environ, KPLAB_DB=fifo)
        if os.environ.get("KPLAB_BINARY"):  # the tiny word-vector model, for the phrase cache's case
            subprocess.run([os.environ["KPLAB_BINARY"], "model", "import", "tiny",
                            os.path.join(SOURCE_DIR, "tests", "data", "embed", "tiny.txt"), "--backend", "wordvec"],
                           check=True, capture_output=True)
        want = f"{fifo}: a FIFO, not a regular file (expected a kplab database)"
        for key, call in self.CASES.items():
            if key[1] == "cache" and not os.environ.get("KPLAB_BINARY"):
                continue  # needs the tiny model, imported with the kplab executable
            code = (f"import kplab\nFIFO, OUT, TINY, PREDS = {fifo!r}, {self.path('out.db')!r}, {TINY!r}, "
                    f"{TINY_PREDS!r}\nGOOD0, GOOD1 = {good[0]!r}, {good[1]!r}\n"
                    f"try:\n    {call}\n    print('ACCEPTED')\nexcept kplab.StoreError as e:\n    print('REFUSED', e)\n")
            p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, f"{call}: {p.stderr}")
            self.assertEqual(p.stdout.strip(), "REFUSED " + want, call)


class TamperedStoreTest(Base):
    """Stores changed behind kplab's back are refused by name through the module, as through the CLI
    (tests/core/store_readback_test.cc has the full list of checks)."""

    def shards(self):
        stores = [self.path("s0.db"), self.path("s1.db")]
        for i, s in enumerate(stores):
            kplab.evaluate(TINY, TINY_PREDS, metrics=["exact"], system="x", shard=(i, 2), store=s)
        return stores

    def sql(self, db, statement, *args):
        con = sqlite3.connect(db)
        con.execute(statement, args)
        con.commit()
        con.close()

    def test_warnings_show_stored_text_escaped(self):
        # A warning is text the module shows on stderr itself (Python's warning display writes it as
        # given): what it quotes from a store is escaped, as on the command line (docs/design-notes.md,
        # note 63). It was raw: an ESC sequence in a profile name drove the terminal.
        db = self.path("w.db")
        kplab.evaluate(TINY, TINY_PREDS, metrics=["exact"], system="a", store=db)
        kplab.evaluate(TINY, TINY_PREDS, metrics=["exact"], system="b", profile="kpeval", store=db)
        self.sql(db, "UPDATE runs SET profile = ? WHERE id = 2", "kpeval\x1b[31m\r\u202e")
        store = kplab.Store(db)
        for call in (lambda: store.compare(1, 2), lambda: store.table("all.p@5.macro")):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                call()
            texts = [str(w.message) for w in caught]
            self.assertTrue(any("kpeval\\x1b[31m\\r\\u202e" in t for t in texts), texts)
            for t in texts:
                self.assertIsNone(re.search("[\x00-\x1f\x7f-\x9f\u202e]", t), t)

    def test_merge_of_a_shard_whose_range_overflows(self):
        # 5 * (2^61 - 1) / 2^61 wraps in 64 bits to -3: the range [-3, -3) passed the old check and the
        # merge read out of bounds (a segfault of kplab.merge).
        s0, s1 = self.shards()
        self.sql(s1, "UPDATE runs SET shard_index = ?, shard_count = ?, doc_begin = -3, doc_end = -3",
                 2**61 - 1, 2**61)
        with self.assertRaises(kplab.StoreError) as cm:
            kplab.merge([s0, s1], out=self.path("out.db"))
        self.assertEqual(str(cm.exception),
                         f"{s1}: run 1: shard 2305843009213693951/2305843009213693952 of 5 documents (expected at "
                         "most one shard per document)")
        self.assertFalse(os.path.exists(self.path("out.db")))

    def test_merge_of_a_shard_whose_slots_were_deleted(self):
        # The present subset's slots deleted from one shard: its documents' values were NaN in the merge
        # (p@5 0.60 where the run has 0.48). Refused: the shard's score columns are no longer its slots.
        s0, s1 = self.shards()
        self.sql(s1, "DELETE FROM run_slots WHERE subset = 'present'")
        with self.assertRaises(kplab.StoreError) as cm:
            kplab.merge([s0, s1], out=self.path("out.db"))
        self.assertEqual(str(cm.exception),
                         f"{s1}: run 1: score column 'present.p@5' is no slot the run stores (its slots were "
                         "changed or deleted)")

    def test_run_whose_count_disagrees_with_its_documents(self):
        db = self.path("runs.db")
        kplab.evaluate(TINY, TINY_PREDS, metrics=["exact"], store=db)
        self.sql(db, "UPDATE scores SET n = 3, values_f64le = substr(values_f64le, 1, 24) WHERE idx = 0")
        with kplab.Store(db) as s:
            with self.assertRaises(kplab.StoreError) as cm:
                s.run(1)
            self.assertEqual(str(cm.exception), f"{db}: run 1: scores of 'all.p@5' hold 3 values, the run has 5 "
                                                "documents")
        self.sql(db, "UPDATE scores SET n = 5, values_f64le = zeroblob(40) WHERE idx = 0")
        self.sql(db, "UPDATE runs SET params_json = 'nope'")
        with kplab.Store(db) as s:
            with self.assertRaises(kplab.StoreError) as cm:  # was json.JSONDecodeError
                s.run(1)
            self.assertEqual(str(cm.exception), f"{db}: run 1: runs.params_json is not a JSON object")


if __name__ == "__main__":
    unittest.main()
