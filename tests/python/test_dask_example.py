"""examples/dask/shards.py driven as its README says, on local worker processes: a 4-shard KP20k
evaluation merged with kplab.merge must equal the single-process run on every aggregate, bit for bit.
Through Dask's process scheduler when Dask is installed (scripts/setup.sh --extra dask), else through
the standard library's ProcessPoolExecutor: the same example functions, the scheduler injected. Plus the
hostile cases: a failing worker makes the example exit 1 with the error; 3 of 4 shards do not merge."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ.get("KPLAB_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLE = os.path.join(SOURCE, "examples", "dask")
sys.path.insert(0, EXAMPLE)

import kplab  # noqa: E402
import schedulers  # noqa: E402
import shards  # noqa: E402

DATA = os.path.join(SOURCE, "..", "shared", "data")
KP20K = os.path.join(DATA, "kpg_testsets_meng2017", "kp20k")
PRED = os.path.join(DATA, "predictions", "catSeqTG-2RF1", "kp20k", "seed1234.txt")
N_DOCS = 20000


def bits(x):
    return "nan" if x != x else float(x).hex()


@unittest.skipUnless(os.path.isdir(KP20K) and os.path.isfile(PRED), "shared KP20k data not found")
class DaskExampleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="kplab-dask-test-")
        cls.scheduler = "processes" if schedulers.dask_available() else "pool"
        print(f"\nscheduler: {schedulers.describe(cls.scheduler, 4)}", file=sys.stderr, flush=True)
        with schedulers.open_scheduler(cls.scheduler, 4) as run_map:
            cls.parts, cls.merged = shards.sharded_evaluation(run_map, 4, KP20K, PRED, cls.dir,
                                                              system="catSeqTG-2RF1", seed=1234)
        cls.single = shards.single_evaluation(KP20K, PRED, cls.dir, system="catSeqTG-2RF1", seed=1234)
        print(f"shards ran on worker pids {sorted({p['pid'] for p in cls.parts})}", file=sys.stderr, flush=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_four_shards_on_workers_equal_single_run(self):
        # Shard i of 4 over 20,000 documents is [5000 i, 5000 (i + 1)), scored on a worker process.
        self.assertEqual([(p["shard"], p["begin"], p["end"]) for p in self.parts],
                         [(0, 0, 5000), (1, 5000, 10000), (2, 10000, 15000), (3, 15000, 20000)])
        self.assertTrue(all(p["pid"] != os.getpid() for p in self.parts), self.parts)
        self.assertEqual([p["store"] for p in self.parts], [os.path.join(self.dir, f"part{i}.db") for i in range(4)])

        m, s = self.merged, self.single
        self.assertEqual((m["n_docs"], s["n_docs"]), (N_DOCS, N_DOCS))
        self.assertEqual(m["dataset_hash"], s["dataset_hash"])
        self.assertEqual(m["store"], os.path.join(self.dir, "merged.db"))
        self.assertGreater(len(s["aggregates"]), 40)  # exact, rank and rprec: P/R/F1 at 5/10/M/O, MAP, nDCG...
        self.assertEqual(sorted(m["aggregates"]), sorted(s["aggregates"]))
        for k, v in s["aggregates"].items():
            self.assertEqual(bits(m["aggregates"][k]), bits(v), k)
        # As stored: the merged store read back, not only what merge returned.
        with kplab.Store(m["store"]) as st:
            stored = st.run(m["run_id"])["aggregates"]
        self.assertEqual({k: bits(v) for k, v in stored.items()}, {k: bits(v) for k, v in s["aggregates"].items()})
        for k, col in s["per_document"].items():
            self.assertEqual([bits(x) for x in m["per_document"][k]], [bits(x) for x in col], k)
        self.assertEqual(shards.differences(m, s), [])

        # The shards really are partial: shard 0's F1@5 is the mean over its 5,000 documents only, and the
        # mean of the four shards' macro F1@5 (equal sizes) is the whole run's up to rounding.
        per_shard = []
        for p in self.parts:
            with kplab.Store(p["store"]) as st:
                run = st.run(p["run_id"])
            per_shard.append(run["aggregates"]["all.f1@5.macro_doc"])
        f1 = list(s["per_document"]["all.f1@5"])
        self.assertAlmostEqual(per_shard[0], sum(f1[:5000]) / 5000, places=12)
        self.assertNotEqual(bits(per_shard[0]), bits(s["aggregates"]["all.f1@5.macro_doc"]))
        self.assertAlmostEqual(sum(per_shard) / 4, s["aggregates"]["all.f1@5.macro_doc"], places=12)

    def test_three_of_four_shards_do_not_merge(self):
        for left_out, first, last in ((3, 15001, 20000), (1, 5001, 10000)):
            out = os.path.join(self.dir, f"without{left_out}.db")
            stores = [p["store"] for p in self.parts if p["shard"] != left_out]
            with self.assertRaises(kplab.InputError) as cm:
                shards.merge_shards(stores, out)
            self.assertEqual(str(cm.exception), f"missing shard: documents {first}-{last} ('{first}' to "
                                                f"'{last}') are in no shard given (shard {left_out}/4)")
            self.assertFalse(os.path.exists(out))

    def test_bad_shard_index_fails_on_the_worker(self):
        with schedulers.open_scheduler("pool", 2) as run_map:
            with self.assertRaises(RuntimeError) as cm:
                run_map(shards.evaluate_shard, [(4, 4, KP20K, PRED, self.dir)])
        self.assertEqual(str(cm.exception), "shard 4/4: kplab.InputError: shard: (4, 4) (expected a tuple (i, n) "
                                            "of ints with 0 <= i < n)")

    def test_failing_worker_makes_the_example_exit_1(self):
        work = os.path.join(self.dir, "failing")
        missing = os.path.join(self.dir, "no-such-predictions.txt")
        p = subprocess.run([sys.executable, os.path.join(EXAMPLE, "shards.py"), "--scheduler", "pool",
                            "--dataset", KP20K, "--predictions", missing, "--workdir", work],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(p.stderr, f"shards.py: RuntimeError: shard 0/4: kplab.InputError: {missing}: no such "
                                   "file (expected a UTF-8 text file)\n")
        self.assertEqual(sorted(os.listdir(work)), [])  # no shard stored, nothing merged


@unittest.skipUnless(os.path.isdir(os.path.join(DATA, "predictions")), "shared predictions not found")
class DaskSweepTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kplab-dask-sweep-test-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def sweep(self, *args):
        return subprocess.run([sys.executable, os.path.join(EXAMPLE, "sweep.py"), "--scheduler", "pool",
                               "--workers", "2", "--dataset-name", "semeval", *args],
                              capture_output=True, text=True, timeout=300)

    def test_semeval_sweep_one_store_per_task(self):
        work = os.path.join(self.dir, "w")
        p = self.sweep("--workdir", work)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # The shared data holds 4 single-seed systems and catSeqTG-2RF1 with 3 seeds for SemEval.
        expected = ["catSeq-GAN-noseed.db", "catSeq-RL-noseed.db", "catSeq-noseed.db", "catSeq-run2-noseed.db",
                    "catSeqTG-2RF1-1234.db", "catSeqTG-2RF1-5678.db", "catSeqTG-2RF1-9527.db"]
        self.assertEqual(sorted(f for f in os.listdir(work) if f.endswith(".db")), expected)
        f1 = []
        for seed in (1234, 5678, 9527):
            with kplab.Store(os.path.join(work, f"catSeqTG-2RF1-{seed}.db")) as st:
                (run,) = st.runs()
                self.assertEqual((run["system"], run["seed"], run["n_docs"]), ("catSeqTG-2RF1", seed, 100))
                f1.append(st.run(run["run_id"])["aggregates"]["all.f1@5.macro_doc"])
        mean = sum(f1) / 3
        sd = (sum((x - mean) ** 2 for x in f1) / 2) ** 0.5
        self.assertIn(f"catSeqTG-2RF1     mean  {f'{mean:.4f} ± {sd:.4f}':>22}", p.stdout)

    def test_failing_task_makes_the_sweep_exit_1(self):
        root = os.path.join(self.dir, "preds")
        os.makedirs(os.path.join(root, "bad", "semeval"))
        bad = os.path.join(root, "bad", "semeval", "predictions.txt")
        with open(bad, "w") as f:
            f.write("a;b\n")
        p = self.sweep("--predictions-root", root, "--workdir", os.path.join(self.dir, "w"))
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        dataset = os.path.abspath(os.path.join(DATA, "kpg_testsets_meng2017", "semeval"))
        self.assertEqual(p.stderr, f"sweep.py: RuntimeError: bad ({bad}): kplab.InputError: {bad}:1: only 1 line "
                                   f"(expected 100 lines, one per document of {dataset})\n")


if __name__ == "__main__":
    unittest.main()
