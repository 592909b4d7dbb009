"""kplab.mine_pairs and its partition=(p, n) (docs/homogeneity.md, Partitioned mining), run by ctest
with the interpreter the module was built for. Owners are worked out by hand below; on KP20k the union
of the partitions is checked against the single call."""

import json
import os
import random
import subprocess
import sys
import unittest

import kplab

KP20K = os.path.join(os.environ.get("KPLAB_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                     "..", "shared", "data", "kpg_testsets_meng2017", "kp20k")

# Strings are numbered by byte order: q w x y z. Document frequencies q 1, w 2, x 3, y 3, z 2, so the
# token order (df, then id) is q w z x y, ranks 0..4. Pairs and their rarest shared token:
#   (0, 1) {x, y}: x, rank 3;  J = 2/4      (0, 3) {x, y, z}: z, rank 2;  J = 3/4
#   (1, 3) {x, y, w}: w, rank 1; J = 3/4
# Rank r belongs to partition r mod n: n = 2: (0, 3) -> 0, the others -> 1; n = 3: (0, 1) -> 0,
# (1, 3) -> 1, (0, 3) -> 2.
SETS = [["x", "y", "z"], ["x", "y", "w"], ["q"], ["x", "y", "z", "w"]]
P01, P03, P13 = (0, 1, 2, 4, 0.5), (0, 3, 3, 4, 0.75), (1, 3, 3, 4, 0.75)


class MinePairsTest(unittest.TestCase):
    def test_partitions_by_hand(self):
        pairs, stats = kplab.mine_pairs(SETS, theta=0.5)
        self.assertEqual(pairs, [P01, P03, P13])
        self.assertEqual((stats["sets"], stats["pairs"]), (4, 3))
        self.assertEqual(kplab.mine_pairs(SETS, theta=0.5, partition=(0, 1))[0], [P01, P03, P13])
        self.assertEqual(kplab.mine_pairs(SETS, theta=0.5, partition=(0, 2))[0], [P03])
        self.assertEqual(kplab.mine_pairs(SETS, theta=0.5, partition=[1, 2])[0], [P01, P13])
        self.assertEqual(kplab.mine_pairs(SETS, theta=0.5, partition=(0, 3))[0], [P01])
        self.assertEqual(kplab.mine_pairs(SETS, theta=0.5, partition=(1, 3))[0], [P13])
        self.assertEqual(kplab.mine_pairs(SETS, theta=0.5, partition=(2, 3))[0], [P03])
        # Python sets and another order of the strings: the same ids, hence the same owners.
        as_sets = [set(reversed(s)) for s in SETS]
        for n in (1, 2, 3):
            for p in range(n):
                self.assertEqual(kplab.mine_pairs(as_sets, theta=0.5, partition=(p, n)),
                                 kplab.mine_pairs(SETS, theta=0.5, partition=(p, n)))
        # Empty input and empty sets.
        self.assertEqual(kplab.mine_pairs([], partition=(1, 2)), ([], {"sets": 0, "candidates": 0, "pairs": 0}))
        self.assertEqual(kplab.mine_pairs([[], ["a"], [], ["a"]], theta=1.0, partition=(0, 2))[0], [(1, 3, 1, 1, 1.0)])
        self.assertEqual(kplab.mine_pairs([[], ["a"], [], ["a"]], theta=1.0, partition=(1, 2))[0], [])

    def test_bad_arguments(self):
        rng = "(expected a pair (p, n) of ints with 0 <= p < n <= 4294967295)"
        cases = [
            ((2, 2), "mine_pairs: partition (2, 2) is out of range " + rng),
            ((-1, 2), "mine_pairs: partition (-1, 2) is out of range " + rng),
            ((0, 0), "mine_pairs: partition (0, 0) is out of range " + rng),
            ((0, 2 ** 32), "mine_pairs: partition (0, 4294967296) is out of range " + rng),
            ((0, 2 ** 70), "mine_pairs: partition (0, 1180591620717411303424) is out of range " + rng),
            ((True, 2), "mine_pairs: partition[0] is a bool " + rng),
            ((0, 2.0), "mine_pairs: partition[1] is a float " + rng),
            ((0,), "mine_pairs: partition has 1 items " + rng),
            ("0/2", "mine_pairs: partition is a str " + rng),
        ]
        for partition, message in cases:
            with self.subTest(partition=partition):
                with self.assertRaises(kplab.InputError) as cm:
                    kplab.mine_pairs(SETS, partition=partition)
                self.assertEqual(str(cm.exception), message)
        bad_input = [
            (dict(gold=SETS, theta=0.0), "mine_pairs: pair mining: theta must be in (0, 1] (got 0)"),
            (dict(gold=SETS, theta=float("nan")), "mine_pairs: pair mining: theta must be in (0, 1] (got nan)"),
            (dict(gold=42), "mine_pairs: gold is a int (expected a list of sets of strings, one per document, "
                            "or a dataset path)"),
            (dict(gold=["ab"]), "mine_pairs: gold[0]: a str (expected a list or set of strings)"),
            (dict(gold=[["a"], [1]]), "mine_pairs: gold[1]: a int (expected a string)"),
            (dict(gold=SETS, dataset_format="meng"),
             "mine_pairs: dataset_format given with in-memory sets (expected a dataset path)"),
            (dict(gold=KP20K, profile="nope"), None),
            (dict(gold="/nonexistent/kp20k"), None),
        ]
        for kwargs, message in bad_input:
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(kplab.InputError) as cm:
                    kplab.mine_pairs(**kwargs)
                if message is not None:
                    self.assertEqual(str(cm.exception), message)
                else:
                    self.assertTrue(str(cm.exception), "an error says what is wrong")

    def test_workers_with_different_hash_seeds_agree(self):
        # Each partition mined in its own process with its own PYTHONHASHSEED and the documents given as
        # Python sets (whose iteration order follows the hash seed): the union is the single result.
        r = random.Random(17)
        vocab = ["k%d" % i for i in range(30)]
        gold = [sorted(set(r.choice(vocab) for _ in range(r.randint(0, 6)))) for _ in range(300)]
        whole, _ = kplab.mine_pairs(gold, theta=0.4)
        self.assertGreater(len(whole), 10)
        code = ("import json, sys, kplab\n"
                "gold, p, n = json.loads(sys.stdin.read())\n"
                "print(json.dumps(kplab.mine_pairs([set(g) for g in gold], theta=0.4, partition=(p, n))[0]))\n")
        n = 3
        union = []
        for p in range(n):
            env = dict(os.environ, PYTHONHASHSEED=str(101 + p))
            out = subprocess.run([sys.executable, "-c", code], input=json.dumps([gold, p, n]), env=env,
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr)
            union += [tuple(x) for x in json.loads(out.stdout)]
        self.assertEqual(len(union), len(set((a, b) for a, b, *_ in union)), "a pair in two partitions")
        self.assertEqual(sorted(union), whole)

    @unittest.skipUnless(os.path.isdir(KP20K), "no ../shared/data")
    def test_kp20k_union_of_partitions_is_the_whole(self):
        # Through the binding, each key kind with one split; every split of 1, 2, 3 and 7 of both kinds is
        # the core's test (HomogPartition.Kp20kUnionEqualsWhole), on the same data.
        for stem, splits in ((False, (3,)), (True, (2,))):
            whole, whole_stats = kplab.mine_pairs(KP20K, theta=0.5, stem=stem)
            if not stem:
                self.assertEqual(len(whole), 549)  # docs/homogeneity.md, tests/data/homog/peer_pairs.py
            for n in splits:
                union, candidates, keys = [], 0, set()
                for p in range(n):
                    part, stats = kplab.mine_pairs(KP20K, theta=0.5, stem=stem, partition=(p, n))
                    self.assertEqual(stats["pairs"], len(part))
                    self.assertEqual(stats["sets"], whole_stats["sets"])
                    candidates += stats["candidates"]
                    for pair in part:
                        self.assertNotIn(pair[:2], keys, "pair %r in two partitions of %d" % (pair[:2], n))
                        keys.add(pair[:2])
                    union += part
                union.sort()
                self.assertEqual(union, whole, "stem=%s, %d partitions" % (stem, n))
                self.assertEqual(candidates, whole_stats["candidates"])


if __name__ == "__main__":
    unittest.main()
