"""Tests of the Python module `kplab` (host/python/kplab_py.cc), run by ctest with Debian's python3 and
PYTHONPATH set to the module's build directory. Expected values are hand calculations written out in
the comments, never values copied from kplab's output."""

import importlib.util
import math
import os
import subprocess
import sys
import tempfile
import unittest

import kplab

try:
    import numpy as np
except ImportError:  # the module works without numpy; the numpy cases are skipped
    np = None

SOURCE_DIR = os.environ.get("KPLAB_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))

# Two raw-text documents (title + text), references as plain lists.
DOCS = [
    {"id": "a", "title": "Graph neural networks for traffic",
     "text": "We train graph neural networks for traffic speed prediction from road sensors.",
     "keyphrases": ["graph neural network", "traffic speed prediction", "road sensor"]},
    {"id": "b", "title": "Evaluating keyphrase extraction",
     "text": "We study the evaluation of keyphrase extraction.",
     "keyphrases": ["keyphrase extraction", "evaluation"]},
]
PREDS = [
    ["graph neural networks", "traffic forecasting", "road sensors", "deep learning"],
    ["evaluation", "metrics"],
]
# Matching is by Porter stem key: "graph neural networks" -> "graph neural network" and "road sensors"
# -> "road sensor" match references of document a; "evaluation" matches in document b.
#   a: 2 hits, 4 predictions, 3 references: P@M = 1/2, R@M = 2/3, F1 = 2(1/2)(2/3)/(1/2 + 2/3) = 4/7
#   b: 1 hit, 2 predictions, 2 references:  P@M = 1/2, R@M = 1/2, F1 = 1/2
# micro: P = 3/6, R = 3/5, F1 = 2(1/2)(3/5)/(1/2 + 3/5) = 6/11
# macro_hm: mean P = 1/2, mean R = (2/3 + 1/2)/2 = 7/12, F1 = 2(1/2)(7/12)/(1/2 + 7/12) = 7/13
# macro_doc: (4/7 + 1/2)/2 = 15/28
F1_DOC = [4 / 7, 1 / 2]
F1_MICRO, F1_MACRO_HM, F1_MACRO_DOC = 6 / 11, 7 / 13, 15 / 28

# Hand-made 3-d vectors with known cosines: apple and banana are orthogonal; cherry is at 45 degrees to
# both (cos 1/sqrt 2); date is at 60 degrees to apple (cos 1/2) and orthogonal to banana.
VECTORS = {
    "apple": [1.0, 0.0, 0.0],
    "banana": [0.0, 1.0, 0.0],
    "cherry": [1.0, 1.0, 0.0],
    "date": [1.0, 0.0, math.sqrt(3.0)],
}
SEM_DOCS = [
    {"id": "s1", "text": "apple banana cherry date", "keyphrases": ["apple", "banana"]},
    {"id": "s2", "text": "apple cherry", "keyphrases": ["apple"]},
]
SEM_PREDS = [["cherry", "date"], ["apple", "cherry"]]
# SemR-p (docs/metrics.md; k = 3, R = number of references, min(k, R) largest cosines):
#   s1: R = 2; cherry: mean(1/sqrt2, 1/sqrt2) = 0.70710678; date: mean(1/2, 0) = 0.25
#       SemR-p = (0.70710678 + 0.25) / 2 = 0.47855339
#       SemR-p-Div: best one-to-one assignment: cherry-banana (1/sqrt2) + date-apple (1/2) = 1.20710678,
#       / 2 = 0.60355339
#   s2: R = 1; the top-1 prediction "apple" matches a reference exactly: 1
#   aggregate (macro mean): (0.47855339 + 1) / 2 = 0.73927670
SEMRP_DOC = [(1 / math.sqrt(2) + 0.25) / 2, 1.0]
SEMRP_DIV_S1 = (1 / math.sqrt(2) + 0.5) / 2
# SemP/SemR (KPEval; threshold 0), document s1: SemP = mean over predictions of the best cosine to a
# reference = (1/sqrt2 + 1/2)/2; SemR = mean over references of the best cosine to a prediction =
# (max(1/sqrt2, 1/2) + max(1/sqrt2, 0))/2 = 1/sqrt2; SemF1 = 2PR/(P+R).
SEMP_S1 = (1 / math.sqrt(2) + 0.5) / 2
SEMR_S1 = 1 / math.sqrt(2)
SEMF1_S1 = 2 * SEMP_S1 * SEMR_S1 / (SEMP_S1 + SEMR_S1)


class Counter:
    """A plain-callable embedder over VECTORS that counts its calls and the phrases it was given."""

    def __init__(self, as_numpy=False, fortran=False):
        self.calls = 0
        self.phrases = []
        self.as_numpy = as_numpy
        self.fortran = fortran

    def __call__(self, phrases):
        self.calls += 1
        self.phrases.extend(phrases)
        rows = [VECTORS.get(p) for p in phrases]
        if not self.as_numpy:
            return rows  # None = no vector
        arr = np.array([r if r is not None else [0.0, 0.0, 0.0] for r in rows], dtype=np.float64)
        return np.asfortranarray(arr) if self.fortran else arr


def values(column):
    return [float(x) for x in column]


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name
        self.db = os.path.join(self.tmp, "runs.db")
        # No installed model is used: every semantic test registers its own embedder.
        os.environ["KPLAB_MODELS"] = os.path.join(self.tmp, "models")

    def tearDown(self):
        for e in kplab.embedders():
            kplab.unregister_embedder(e["name"])
        self._tmp.cleanup()


class EvaluateTest(TempDirTest):
    def test_exact_metrics_by_hand(self):
        r = kplab.evaluate(DOCS, PREDS, metrics=["exact"])
        agg = r["aggregates"]
        self.assertAlmostEqual(agg["all.f1@M.micro"], F1_MICRO, places=12)
        self.assertAlmostEqual(agg["all.f1@M.macro_hm"], F1_MACRO_HM, places=12)
        self.assertAlmostEqual(agg["all.f1@M.macro_doc"], F1_MACRO_DOC, places=12)
        for got, want in zip(values(r["per_document"]["all.f1@M"]), F1_DOC):
            self.assertAlmostEqual(got, want, places=12)
        self.assertEqual(r["doc_ids"], ["a", "b"])
        self.assertEqual(r["n_docs"], 2)
        self.assertIsNone(r["run_id"])  # not stored unless store= is given
        self.assertEqual(r["profile"], "kplab")

    def test_prediction_shapes_agree(self):
        base = kplab.evaluate(DOCS, PREDS, metrics="exact")["aggregates"]
        by_id = kplab.evaluate(DOCS, {"b": PREDS[1], "a": PREDS[0]}, metrics="exact")["aggregates"]
        lines = kplab.evaluate(DOCS, [";".join(p) for p in PREDS], metrics="exact")["aggregates"]
        scored = kplab.evaluate(DOCS, [[(p, 1.0 / (i + 1)) for i, p in enumerate(ps)] for ps in PREDS],
                                metrics="exact")["aggregates"]
        refs_joined = [dict(d, keyphrases=";".join(d["keyphrases"])) for d in DOCS]
        joined = kplab.evaluate(refs_joined, PREDS, metrics="exact")["aggregates"]
        for other in (by_id, lines, scored, joined):
            self.assertEqual(other["all.f1@M.micro"], base["all.f1@M.micro"])
            self.assertEqual(other["all.f1@5.macro_hm"], base["all.f1@5.macro_hm"])

    def test_kpeval_source_and_token_lists(self):
        # KPEval JSONL shape: pre-tokenized "title [sep] abstract" with "target"; DeepKPG / Hugging Face
        # shape: "document" as a token list with extractive/abstractive keyphrases. Document a's text
        # contains "graph neural networks" and "road sensors"; "traffic speed prediction" too.
        kpeval_docs = [{"id": "a", "source": "graph neural networks [sep] we use road sensors for traffic "
                        "speed prediction .", "target": DOCS[0]["keyphrases"]}]
        r = kplab.evaluate(kpeval_docs, [PREDS[0]], metrics="exact", profile="kpeval")
        # 2 hits of 4 predictions, 3 references: F1@M = 4/7; all three references are present.
        self.assertAlmostEqual(values(r["per_document"]["all.f1@M"])[0], 4 / 7, places=12)
        deepkpg = [{"id": "a", "document": "we use road sensors for traffic speed prediction".split(),
                    "extractive_keyphrases": ["traffic speed prediction", "road sensor"],
                    "abstractive_keyphrases": ["graph neural network"]}]
        r2 = kplab.evaluate(deepkpg, [PREDS[0]], metrics="exact")
        self.assertAlmostEqual(values(r2["per_document"]["all.f1@M"])[0], 4 / 7, places=12)
        # Present references: "traffic speed prediction" and "road sensor" are in the text, "graph neural
        # network" is not. Present predictions: only "road sensors", which matches: present R@M = 1/2.
        self.assertAlmostEqual(values(r2["per_document"]["present.r@M"])[0], 1 / 2, places=12)

    def test_text_overlap_metrics(self):
        # Document b: predictions evaluation, metrics; references keyphrase extraction, evaluation.
        # ROUGE-1 (kplab): 1 shared token of 2 and of 3 -> P 1/2, R 1/3, F1 2(1/6)/(5/6) = 2/5.
        # METEOR without synonyms: one exact match, one chunk: P 1/2, R 1/3,
        #   Fmean = (1/6) / (0.9/2 + 0.1/3), penalty 0.5 (1/1)^3 = 0.5.
        # Self edit distance of the stems evalu / metric: LCS "e" = 1, d = 5 + 6 - 2 = 9 -> 9/11 each.
        r = kplab.evaluate(DOCS, PREDS, metrics=["rouge", "meteor", "diversity"],
                           params={"meteor.synonyms": False, "diversity.embeddings": False})
        self.assertAlmostEqual(values(r["per_document"]["all.rouge1_p"])[1], 1 / 2, places=12)
        self.assertAlmostEqual(values(r["per_document"]["all.rouge1_f1"])[1], 2 / 5, places=12)
        self.assertAlmostEqual(values(r["per_document"]["all.meteor"])[1],
                               0.5 * (1 / 6) / (0.9 / 2 + 0.1 / 3), places=12)
        self.assertAlmostEqual(values(r["per_document"]["all.self_edit_distance"])[1], 9 / 11, places=12)
        self.assertEqual(values(r["per_document"]["all.self_bleu"])[1], 0)

    def test_params_and_profile(self):
        r = kplab.evaluate(DOCS, PREDS, metrics=["rank"], params={"rank.alpha": 0.7})
        self.assertIn("all.map@M", r["aggregates"])
        self.assertIn("kpeval", kplab.profiles())

    def test_profile_knobs_travel_in_the_profile_name(self):
        # max_pieces=1 keeps each list's first prediction: a "graph neural networks" (a hit), b
        # "evaluation" (a hit). micro P = 2/2, R = 2/5, F1 = 2(1)(2/5)/(1 + 2/5) = 4/7.
        r = kplab.evaluate(DOCS, PREDS, metrics=["exact"], profile="kplab+max_pieces=1")
        self.assertAlmostEqual(r["aggregates"]["all.f1@M.micro"], 4 / 7, places=12)
        self.assertEqual(r["profile"], "kplab+max_pieces=1")
        with self.assertRaisesRegex(kplab.InputError, r"unknown knob 'max_piece' \(did you mean 'max_pieces'\?"):
            kplab.evaluate(DOCS, PREDS, metrics=["exact"], profile="kplab+max_piece=1")
        with self.assertRaisesRegex(kplab.InputError, r"knob peos must be piece, piece_in_lines, first_token or keep"):
            kplab.evaluate(DOCS, PREDS, metrics=["exact"], profile="kplab+peos=no")

    def test_utility_with_a_query_file(self):
        # Three documents; BM25 idf of a word in 1 of 3 documents is ln(2.5) - ln(1.5) > 0. Query 1
        # "traffic" is in document a only, query 2 "keyphrase" in b only: each finds its document first.
        # Query 3's word is in none: all three tie at 0, and kplab's rule gives recall@1 = 1/3.
        docs = DOCS + [{"id": "c", "title": "Protein folding", "text": "Folding of proteins.",
                        "keyphrases": ["protein folding"]}]
        queries = os.path.join(self.tmp, "q.txt")
        with open(queries, "w") as f:
            f.write("traffic\nkeyphrase\nxyzzy\n")
        r = kplab.evaluate(docs, PREDS + [["folding"]], metrics=["utility"], params={"utility.queries": queries})
        got = values(r["per_document"]["sparse_recall@1"])
        self.assertEqual(got[:2], [1.0, 1.0])
        self.assertAlmostEqual(got[2], 1 / 3, places=15)
        self.assertAlmostEqual(r["aggregates"]["sparse_recall@1"], (2 + 1 / 3) / 3, places=15)
        with self.assertRaisesRegex(kplab.Error, r"q\.txt: 4 queries for 3 documents"):  # names the file
            with open(queries, "a") as f:
                f.write("one more\n")
            kplab.evaluate(docs, PREDS + [["folding"]], metrics=["utility"], params={"utility.queries": queries})

    def test_refs_stemmed(self):
        # A reference released Porter-stemmed ("databas", as Meng-2017's SemEval gold): nltk stems it
        # again to "databa", so the prediction "database" (stem "databas") only matches it as given.
        docs = [{"id": "d1", "title": "a database", "text": "x", "keyphrases": ["databas"]}]
        plain = kplab.evaluate(docs, [["database"]], metrics=["exact"])
        given = kplab.evaluate(docs, [["database"]], metrics=["exact"], refs_stemmed=True)
        self.assertEqual(plain["aggregates"]["all.p@M.macro"], 0.0)
        self.assertEqual(given["aggregates"]["all.p@M.macro"], 1.0)

    def test_dataset_options_are_strict_and_take_source(self):
        # The dataset options of every front-end (docs/formats.md): an unknown keyword is refused,
        # naming the valid ones (pybind11 lists the signature); source= is --source.
        with self.assertRaises(TypeError) as cm:
            kplab.evaluate(DOCS, PREDS, refs_stemed=True)
        self.assertIn("refs_stemmed", str(cm.exception))
        self.assertIn("source", str(cm.exception))
        with tempfile.TemporaryDirectory() as d:
            m = os.path.join(d, "m")
            os.mkdir(m)
            with open(os.path.join(m, "x_context.txt"), "w") as f:
                f.write("nothing here . <eos> nothing\n")
            with open(os.path.join(m, "x_allkeywords.txt"), "w") as f:
                f.write("neural networks\n")
            src = os.path.join(d, "src.txt")
            with open(src, "w") as f:
                f.write("neural networks <eos> we study neural networks\n")
            plain = kplab.evaluate(m, [["neural networks"]], metrics=["exact"])
            given = kplab.evaluate(m, [["neural networks"]], metrics=["exact"], source=src)
            # The reference is absent from the file's own text, present in the --source text.
            self.assertEqual(plain["aggregates"]["present.r@M.macro"], 0.0)
            self.assertEqual(given["aggregates"]["present.r@M.macro"], 1.0)
            with self.assertRaisesRegex(kplab.InputError, r"source: given with in-memory documents"):
                kplab.evaluate(DOCS, PREDS, source=src)

    def test_peos_in_a_line_is_a_marker(self):
        # A ';'-joined prediction line drops its '<peos>' marker under kpeval (users convert line files
        # and drop it); a list is the user's data and stays verbatim: one more (wrong) prediction.
        docs = [{"id": "d1", "title": "neural networks", "text": "x", "keyphrases": ["neural networks"]}]
        line = kplab.evaluate(docs, ["neural networks;<peos>"], metrics=["exact"], profile="kpeval")
        listed = kplab.evaluate(docs, [["neural networks", "<peos>"]], metrics=["exact"], profile="kpeval")
        self.assertEqual(line["aggregates"]["all.p@M.macro"], 1.0)
        self.assertEqual(listed["aggregates"]["all.p@M.macro"], 0.5)

    def test_errors_name_the_record(self):
        bad = [DOCS[0], {"id": "x", "text": "no references here"}]
        with self.assertRaisesRegex(kplab.InputError, r"documents\[1\]: no reference keyphrases"):
            kplab.evaluate(bad, PREDS)
        with self.assertRaisesRegex(ValueError, r'documents\[1\]: second document with id "a"'):
            kplab.evaluate([DOCS[0], dict(DOCS[1], id="a")], PREDS)
        with self.assertRaisesRegex(kplab.InputError, r"1 prediction lists for 2 documents"):
            kplab.evaluate(DOCS, PREDS[:1])
        with self.assertRaisesRegex(kplab.InputError, r'predictions\["zz"\]: unknown document id "zz"'):
            kplab.evaluate(DOCS, {"a": PREDS[0], "zz": PREDS[1]})
        with self.assertRaisesRegex(kplab.InputError, r"predictions\[0\]\[1\]: a int"):
            kplab.evaluate(DOCS, [["x", 3], ["y"]])
        with self.assertRaisesRegex(kplab.InputError, r"documents: an empty list"):
            kplab.evaluate([], [])
        with self.assertRaisesRegex(kplab.InputError, r"documents\[0\]: reference 0 is an empty list"):
            kplab.evaluate([{"text": "x", "keyphrases": [[]]}], [["x"]])
        with self.assertRaisesRegex(kplab.InputError, r"unknown profile 'nope'"):
            kplab.evaluate(DOCS, PREDS, profile="nope")
        with self.assertRaisesRegex(kplab.Error, r"unknown metric 'nope'"):
            kplab.evaluate(DOCS, PREDS, metrics=["nope"])
        with self.assertRaisesRegex(kplab.InputError, r"invalid UTF-8"):
            kplab.evaluate([dict(DOCS[0], text="caf\udce9")], [PREDS[0]])

    def test_script_error_is_reported_with_file_line(self):
        plugdir = os.path.join(self.tmp, "plugins")
        os.mkdir(plugdir)
        with open(os.path.join(plugdir, "boom.lua"), "w") as f:
            f.write('-- kplab-api: 1\nreturn kp.metric {\n  name = "boom", version = "1",\n'
                    '  score = function(doc, p, ctx)\n    error("kaput")\n  end,\n}\n')
        with self.assertRaisesRegex(kplab.ScriptError, r"boom\.lua:5: kaput"):
            kplab.evaluate(DOCS, PREDS, metrics=["boom"], plugins=[plugdir], store=self.db)
        runs = kplab.Store(self.db).runs()
        self.assertEqual([r["status"] for r in runs], ["failed"])

    def test_nested_plugin_values_are_bounded(self):
        # docs/plugins.md, Limits (nesting): the same walks as the command line, so the same bound; a
        # constant nested 10,000 deep is refused, not a crash of the interpreter.
        plugdir = os.path.join(self.tmp, "plugins")
        os.mkdir(plugdir)
        for depth in (1, 50, 200, 201, 10000):
            name = "deep%d" % depth
            with open(os.path.join(plugdir, name + ".lua"), "w") as f:
                f.write("-- kplab-api: 2\n"
                        "local DEEP = {} do local c = DEEP for _ = 2, %d do local n = {} c.k = n c = n end end\n"
                        "return kp.metric { name = '%s', version = '1', columns = function(c) c:column('x', 'mean') end,\n"
                        "  score = function(_, _, _, out) out.x = DEEP and 1 end }\n" % (depth, name))
            if depth <= 200:
                r = kplab.evaluate(DOCS, PREDS, metrics=[name], plugins=[plugdir])
                self.assertEqual(r["aggregates"]["x"], 1.0)
            else:
                with self.assertRaisesRegex(kplab.ScriptError, r"upvalue 'DEEP' is nested more than 200 levels deep"):
                    kplab.evaluate(DOCS, PREDS, metrics=[name], plugins=[plugdir])


    def test_state_across_documents_fails_unless_verify_docs_is_0(self):
        # An API 1 plugin counting documents: "b" is the second document scored in one lane (2) but the
        # first when scored alone (1), so the run fails naming it; verify_docs=0 lets the counts through,
        # (1 + 2) / 2 = 1.5 (docs/plugins.md, "What a plugin may keep").
        plugdir = os.path.join(self.tmp, "plugins")
        os.mkdir(plugdir)
        with open(os.path.join(plugdir, "counter.lua"), "w") as f:
            f.write('-- kplab-api: 1\nlocal n = 0\nreturn kp.metric { name = "counter", version = "1",\n'
                    '  score = function(doc, p, ctx) n = n + 1 return { ["all.x"] = n } end }\n')
        with self.assertRaisesRegex(
                kplab.ScriptError, r"plugin 'counter' carried state across documents \(document 'b', column "
                                   r"'all.x': 2 in the run, 1 alone\)"):
            kplab.evaluate(DOCS, PREDS, metrics=["counter"], plugins=[plugdir], threads=1)
        r = kplab.evaluate(DOCS, PREDS, metrics=["counter"], plugins=[plugdir], threads=1, verify_docs=0)
        self.assertEqual(r["aggregates"]["all.x"], 1.5)
        for bad in (-1, 1000001, 2.0, True, "3"):
            with self.assertRaisesRegex(kplab.InputError, r"verify_docs: .* \(expected an int from 0 to 1000000\)"):
                kplab.evaluate(DOCS, PREDS, metrics=["exact"], verify_docs=bad)
        with self.assertRaisesRegex(kplab.InputError, r"random_seed: -1 \(expected an int from 0 to "):
            kplab.evaluate(DOCS, PREDS, metrics=["exact"], random_seed=-1)


class StoreTest(TempDirTest):
    def test_store_round_trip(self):
        r = kplab.evaluate(DOCS, PREDS, metrics=["exact"], store=self.db, system="sys1")
        self.assertIsInstance(r["run_id"], int)
        with kplab.Store(self.db) as store:
            runs = store.runs()
            self.assertEqual(len(runs), 1)
            self.assertEqual(runs[0]["run_id"], r["run_id"])
            self.assertEqual(runs[0]["system"], "sys1")
            self.assertEqual(runs[0]["n_docs"], 2)
            got = store.run(r["run_id"])
            self.assertAlmostEqual(got["aggregates"]["all.f1@M.micro"], F1_MICRO, places=12)
            for a, b in zip(values(got["per_document"]["all.f1@M"]), F1_DOC):
                self.assertAlmostEqual(a, b, places=12)
            self.assertEqual(got["doc_ids"], ["a", "b"])
            # The same records give the same dataset hash in a second run.
            r2 = kplab.evaluate(DOCS, PREDS, metrics=["exact"], store=store)
            self.assertEqual(store.run(r2["run_id"])["dataset_hash"], got["dataset_hash"])
            store.delete(r["run_id"])
            self.assertEqual([x["run_id"] for x in store.runs()], [r2["run_id"]])
            with self.assertRaises(kplab.StoreError):
                store.run(r["run_id"])

    def test_table(self):
        # Seven documents with one reference each; system "base" predicts a wrong phrase everywhere,
        # "good" the reference under two seeds: all.p@M.macro is 0 for base and 1 for both seeds of good
        # (mean 1, sd 0, n 2), and good differs from base (every document moves the same way).
        docs = [{"id": f"d{i}", "title": f"topic {i}", "text": "x", "keyphrases": [f"alpha{i} beta"]}
                for i in range(7)]
        kplab.evaluate(docs, [["gamma delta"]] * 7, metrics=["exact"], store=self.db, system="base")
        for seed in (1, 2):
            kplab.evaluate(docs, [[f"alpha{i} beta"] for i in range(7)], metrics=["exact"], store=self.db,
                           system="good", seed=seed)
        with kplab.Store(self.db) as store:
            self.assertEqual(sorted(r["seed"] for r in store.runs() if r["system"] == "good"), [1, 2])
            rows = store.table("all.p@M.macro", baseline="base", resamples=2000, as_frame=False)
            by = {r["system"]: r for r in rows}
            self.assertEqual((by["base"]["mean"], by["base"]["n"]), (0.0, 1))
            self.assertEqual((by["good"]["mean"], by["good"]["sd"], by["good"]["n"]), (1.0, 0.0, 2))
            self.assertTrue(by["good"]["best"])
            self.assertLess(by["good"]["p"], 0.05)  # 2 / 2^7 = 0.016 in expectation
            self.assertTrue(by["good"]["significant"])
            self.assertIsNone(by["base"]["p"])
            with self.assertRaises(kplab.InputError):
                store.table("all.nothing*")
            with self.assertRaises(kplab.InputError):
                kplab.evaluate(docs, [["x"]] * 7, metrics=["exact"], seed="1")

    def test_table_text_is_the_commands(self):
        # With format, table() returns `kplab runs table`'s text for the same options, byte for byte;
        # the options are set by the command's own setters, so misuse is refused with its messages.
        binary = os.environ.get("KPLAB_BINARY")
        if not binary:
            self.skipTest("KPLAB_BINARY not set (run through ctest)")
        docs = [{"id": f"d{i}", "title": f"topic {i}", "text": "x", "keyphrases": [f"alpha{i} beta"]}
                for i in range(7)]
        kplab.evaluate(docs, [["gamma delta"]] * 7, metrics=["exact"], store=self.db, system="base")
        kplab.evaluate(docs, [[f"alpha{i} beta"] for i in range(5)] + [["x"]] * 2, metrics=["exact"],
                       store=self.db, system="good")
        cases = [
            (dict(format="latex", labels={"all.p@M.macro": "P@M"}, layout="metrics", fit=True, float="table*",
                  caption="Two systems"),
             ["--output", "latex", "--label", "all.p@M.macro=P@M", "--layout", "metrics", "--fit", "--float",
              "table*", "--caption", "Two systems"]),
            (dict(format="markdown", decimals=3, fraction=True), ["--output", "markdown", "--decimals", "3",
                                                                 "--fraction"]),
            (dict(format="csv"), ["--output", "csv"]),
        ]
        with kplab.Store(self.db) as store:
            for kw, args in cases:
                text = store.table("all.p@M.macro,all.r@M.macro", baseline="base", resamples=500, **kw)
                cli = subprocess.run([binary, "runs", "table", "--db", self.db, "--metrics",
                                      "all.p@M.macro,all.r@M.macro", "--baseline", "base", "--resamples", "500"]
                                     + args, capture_output=True, text=True)
                self.assertEqual(cli.returncode, 0, cli.stderr)
                self.assertEqual(text, cli.stdout, kw)
            misuse = [
                (dict(layout="metrics"), "table: layout shapes the text: add format"),
                (dict(format="latex", layout="columns"), "layout"),
                (dict(format="latex", labels={"all.nothing": "X"}), "all.nothing"),
                (dict(format="table", caption="C"), "caption"),
                (dict(format="html"), "format must be table, markdown, latex, csv or json (got 'html')"),
                (dict(format="latex", decimals=12), "decimals must be an integer from 0 to 9"),
                (dict(format="latex", fit="yes"), "fit must be a bool"),
            ]
            for kw, message in misuse:
                with self.assertRaises(kplab.UsageError, msg=kw) as e:
                    store.table("all.p@M.macro", **kw)
                self.assertIn(message, str(e.exception), kw)

    def test_compare(self):
        # Seven documents with one reference each. Run A predicts a wrong phrase everywhere, run B the
        # reference: per document all.p@M goes 0 -> 1, so the paired difference is exactly 1 on each,
        # every bootstrap mean is 1 (CI [1, 1]), and only the two all-same-sign flips of seven reach
        # |mean| >= 1: the randomization p is about 2/2^7 = 0.016.
        docs = [{"id": f"d{i}", "title": f"topic {i}", "text": "x", "keyphrases": [f"alpha{i} beta"]}
                for i in range(7)]
        a = kplab.evaluate(docs, [["gamma delta"]] * 7, metrics=["exact"], store=self.db)["run_id"]
        b = kplab.evaluate(docs, [[f"alpha{i} beta"] for i in range(7)], metrics=["exact"],
                           store=self.db)["run_id"]
        with kplab.Store(self.db) as store:
            c = store.compare(a, b, resamples=2000, seed=7)
            self.assertEqual((c["a"], c["b"], c["shared_docs"]), (a, b, 7))
            row = c["metrics"]["all.p@M.macro"]
            self.assertTrue(row["paired"])
            self.assertEqual(row["n"], 7)
            self.assertEqual((row["a"], row["b"], row["mean_diff"]), (0.0, 1.0, 1.0))
            self.assertEqual(row["ci"], (1.0, 1.0))
            self.assertLess(row["p"], 0.05)
            self.assertGreaterEqual(row["p_holm"], row["p"])
            self.assertEqual(row["test"], "per_document")
            # A micro average is corpus-level: Σ hits / Σ predictions re-computed over documents swapped
            # between the runs (every stored run keeps its slots). By hand: 0/7 and 7/7, B - A = 1; only
            # the 2 of 2^7 swap patterns that swap none or all reach |1|, so p is about 1/64 < 0.05.
            micro = c["metrics"]["all.p@M.micro"]
            self.assertTrue(micro["paired"])
            self.assertEqual(micro["test"], "resampled")
            self.assertEqual((micro["a"], micro["b"], micro["mean_diff"]), (0.0, 1.0, 1.0))
            self.assertLess(micro["p"], 0.05)
            with self.assertRaises(kplab.StoreError):
                store.compare(a, 999)
            with self.assertRaises(kplab.InputError):
                store.compare(a, b, resamples=-1)
            # The selected metrics only; duplicate columns (p@M = p@O = r@M here: one prediction, one
            # reference per document) are one test in Holm's family.
            c = store.compare(a, b, metrics="all.p@M.macro,all.r@M.macro,all.p@5.macro")
            self.assertEqual(sorted(c["metrics"]), ["all.p@5.macro", "all.p@M.macro", "all.r@M.macro"])
            self.assertEqual(c["family"], 2)
            self.assertEqual(c["metrics"]["all.r@M.macro"]["same_as"], "all.p@M.macro")
            with self.assertRaises(kplab.InputError):
                store.compare(a, b, metrics="nosuch.*")

    def test_bad_store_path(self):
        with self.assertRaises(kplab.StoreError):
            kplab.Store(os.path.join(self.tmp, "no", "such", "dir", "x.db"))


class ShardTest(TempDirTest):
    """evaluate(..., shard=(i, n)) and merge() (docs/store.md, Shards): the merged run's aggregates and
    per-document values equal the single-process run's exactly (==, not almost)."""

    def setUp(self):
        super().setUp()
        self.ds = os.path.join(SOURCE_DIR, "examples", "tiny")
        self.preds = os.path.join(self.ds, "predictions.txt")

    def test_three_shards_in_two_stores_equal_the_whole_run(self):
        whole = kplab.evaluate(self.ds, self.preds, metrics=["exact", "rank", "rprec"], system="s")
        stores = [os.path.join(self.tmp, "a.db"), os.path.join(self.tmp, "b.db")]
        for i in (2, 0, 1):  # out of order, shard 1 alone in b.db
            r = kplab.evaluate(self.ds, self.preds, metrics=["exact", "rank", "rprec"], system="s",
                               shard=(i, 3), store=stores[1 if i == 1 else 0])
            # tiny has 5 documents: shards [0, 1), [1, 3), [3, 5)
            self.assertEqual(r["shard"], {"index": i, "count": 3, "begin": [0, 1, 3][i], "end": [1, 3, 5][i]})
        merged = kplab.merge(list(reversed(stores)), out=os.path.join(self.tmp, "out.db"))
        self.assertIsNone(merged["shard"])
        self.assertEqual(len(merged["shards"]), 3)
        self.assertEqual(set(merged["aggregates"]), set(whole["aggregates"]))
        for name, value in whole["aggregates"].items():
            got = merged["aggregates"][name]
            self.assertTrue(got == value or (math.isnan(got) and math.isnan(value)), (name, got, value))
        for name, column in whole["per_document"].items():
            a, b = values(column), values(merged["per_document"][name])
            self.assertEqual([x if x == x else None for x in a], [x if x == x else None for x in b], name)
        with kplab.Store(os.path.join(self.tmp, "out.db")) as store:
            self.assertEqual(store.run(merged["run_id"])["aggregates"], merged["aggregates"])

    def test_bad_shards_are_refused(self):
        for bad in [(3, 3), (-1, 2), (0, 0), (1,), "0/2", (0.0, 2), (True, 2), (0, 2**63), (-2**63 - 1, 2),
                    (0, 2**100)]:
            with self.assertRaises(kplab.InputError) as cm:
                kplab.evaluate(self.ds, self.preds, shard=bad, store=self.db)
            self.assertIn("expected a tuple (i, n) of ints with 0 <= i < n", str(cm.exception))
        with self.assertRaises(kplab.InputError) as cm:
            kplab.evaluate(self.ds, self.preds, shard=(0, 2))
        self.assertEqual(str(cm.exception),
                         "shard: a shard is a partial run kept for kplab.merge (expected store=PATH or a Store)")
        kplab.evaluate(self.ds, self.preds, shard=(0, 2), store=self.db)
        out = os.path.join(self.tmp, "out.db")
        with self.assertRaises(kplab.InputError) as cm:
            kplab.merge(self.db, out=out)
        self.assertTrue(str(cm.exception).startswith("missing shard: documents 3-5 "), str(cm.exception))
        self.assertTrue(str(cm.exception).endswith(" are in no shard given (shard 1/2)"), str(cm.exception))
        self.assertFalse(os.path.exists(out))  # nothing written, not even created


class ArgumentTest(TempDirTest):
    """Arguments that used to be accepted silently or fail with pybind11's cast error: each is InputError
    naming the argument and what was expected."""

    def test_threads_out_of_range(self):
        for bad in (-1, 65, 2**63, 2**100):
            with self.assertRaises(kplab.InputError) as cm:
                kplab.evaluate(DOCS, PREDS, metrics="exact", threads=bad)
            self.assertEqual(str(cm.exception),
                             "threads: %d (expected 0 for one per core, or 1 to 64)" % bad)
        for bad in (1.5, "2", True):
            with self.assertRaises(kplab.InputError) as cm:
                kplab.evaluate(DOCS, PREDS, metrics="exact", threads=bad)
            self.assertEqual(str(cm.exception),
                             "threads: %r (expected 0 for one per core, or 1 to 64)" % (bad,))
        self.assertAlmostEqual(kplab.evaluate(DOCS, PREDS, metrics="exact", threads=64)["aggregates"]["all.f1@M.micro"],
                               F1_MICRO, places=12)

    def test_seed_beyond_64_bits(self):
        with self.assertRaises(kplab.InputError) as cm:
            kplab.evaluate(DOCS, PREDS, metrics="exact", seed=2**63)
        self.assertEqual(str(cm.exception), "seed: 9223372036854775808 (expected an int of at most 64 bits)")

    def test_nested_parameter_values_are_refused_with_the_expected_type(self):
        # [[1]] used to be flattened to ks = 1 and run.
        with self.assertRaises(kplab.InputError) as cm:
            kplab.evaluate(DOCS, PREDS, metrics="exact", params={"exact": {"ks": [[1]]}})
        self.assertEqual(str(cm.exception),
                         "plugin 'exact': parameter 'ks': '[[1]]' is not a cut-off (expected integers from 1 to "
                         "100000, M or O, comma-separated, e.g. 1,3,5,10,M,O)")
        with self.assertRaises(kplab.InputError) as cm:
            kplab.evaluate(DOCS, PREDS, metrics="exact", params={"exact": {"ks": {"a": 1}}})
        self.assertIn("plugin 'exact': parameter 'ks': '{'a': 1}'", str(cm.exception))
        # A flat list is still a cut-off list.
        r = kplab.evaluate(DOCS, PREDS, metrics="exact", params={"exact": {"ks": [1, "M"]}})
        self.assertIn("all.f1@1.micro", r["aggregates"])

    def test_keyboard_interrupt_in_an_embedder_propagates(self):
        def interrupted(phrases):
            raise KeyboardInterrupt
        kplab.register_embedder("ctrl_c", interrupted, dims=3, version="1")
        with self.assertRaises(KeyboardInterrupt):
            kplab.evaluate(SEM_DOCS, SEM_PREDS, metrics=["semrp"], model="ctrl_c", cache=self.db)
        # Not left pending: the next call runs normally.
        self.assertAlmostEqual(kplab.evaluate(DOCS, PREDS, metrics="exact")["aggregates"]["all.f1@M.micro"],
                               F1_MICRO, places=12)
        # Other exceptions are the embedder's failure: a ScriptError (EmbedderTest.test_a_failing_embedder...).
        def failing(phrases):
            raise RuntimeError("no vectors today")
        kplab.register_embedder("failing", failing, dims=3, version="1")
        with self.assertRaises(kplab.ScriptError) as cm:
            kplab.evaluate(SEM_DOCS, SEM_PREDS, metrics=["semrp"], model="failing", cache=self.db)
        self.assertIn("embedder 'failing' raised RuntimeError: no vectors today", str(cm.exception))


class EmbedderTest(TempDirTest):
    def check_semrp(self, r):
        semrp = values(r["per_document"]["all.semrp"])
        for got, want in zip(semrp, SEMRP_DOC):
            self.assertAlmostEqual(got, want, places=6)  # float32 vectors
        self.assertAlmostEqual(values(r["per_document"]["all.semrp_div"])[0], SEMRP_DIV_S1, places=6)
        self.assertAlmostEqual(r["aggregates"]["all.semrp"], sum(SEMRP_DOC) / 2, places=6)

    def test_semrp_and_cache_hits(self):
        fn = Counter()
        kplab.register_embedder("toy", fn, dims=3, version="1")
        r = kplab.evaluate(SEM_DOCS, SEM_PREDS, metrics=["semrp", "semantic"], model="toy", cache=self.db)
        self.check_semrp(r)
        self.assertAlmostEqual(values(r["per_document"]["all.semp"])[0], SEMP_S1, places=6)
        self.assertAlmostEqual(values(r["per_document"]["all.semr"])[0], SEMR_S1, places=6)
        self.assertAlmostEqual(values(r["per_document"]["all.semf1"])[0], SEMF1_S1, places=6)
        self.assertEqual(fn.calls, 1)  # four distinct phrases, one batch
        self.assertEqual(sorted(fn.phrases), ["apple", "banana", "cherry", "date"])
        self.assertEqual(r["embeddings"]["embedded"], 4)
        self.assertEqual(r["embeddings"]["model"], "toy")
        # Second evaluation: every phrase comes from the phrase cache, the callable is not called.
        r2 = kplab.evaluate(SEM_DOCS, SEM_PREDS, metrics=["semrp"], model="toy", cache=self.db)
        self.assertEqual(fn.calls, 1)
        self.assertEqual(r2["embeddings"]["hits"], 4)
        self.check_semrp(r2)
        # A new version is a new fingerprint: embedded again.
        kplab.register_embedder("toy", fn, dims=3, version="2")
        r3 = kplab.evaluate(SEM_DOCS, SEM_PREDS, metrics=["semrp"], model="toy", cache=self.db)
        self.assertEqual(fn.calls, 2)
        self.assertNotEqual(r3["embeddings"]["fingerprint"], r["embeddings"]["fingerprint"])
        # The run record keeps the fingerprint.
        stored = kplab.evaluate(SEM_DOCS, SEM_PREDS, metrics=["semrp"], model="toy", store=self.db)
        self.assertEqual(kplab.Store(self.db).run(stored["run_id"])["embedder_fingerprint"],
                         r3["embeddings"]["fingerprint"])

    @unittest.skipIf(np is None, "numpy is not installed")
    def test_numpy_float64_fortran_order_and_dims_probe(self):
        fn = Counter(as_numpy=True, fortran=True)
        kplab.register_embedder("toy_np", fn)  # dims probed with one phrase
        self.assertEqual(fn.calls, 1)
        self.assertEqual([e["dims"] for e in kplab.embedders() if e["name"] == "toy_np"], [3])
        r = kplab.evaluate(SEM_DOCS, SEM_PREDS, metrics=["semrp"], model="toy_np", cache=self.db)
        self.check_semrp(r)
        self.assertIsInstance(r["per_document"]["all.semrp"], np.ndarray)
        self.assertEqual(r["per_document"]["all.semrp"].dtype, np.float64)

    def test_phrase_without_vector_has_cosine_zero(self):
        # "date" has no vector (None row): its cosines are 0, so s1's SemR-p is (1/sqrt2 + 0)/2.
        table = dict(VECTORS)
        del table["date"]
        kplab.register_embedder("toy_gap", lambda ps: [table.get(p) for p in ps], dims=3)
        r = kplab.evaluate(SEM_DOCS, SEM_PREDS, metrics=["semrp"], model="toy_gap", cache=self.db)
        self.assertAlmostEqual(values(r["per_document"]["all.semrp"])[0], (1 / math.sqrt(2)) / 2, places=6)
        self.assertEqual(r["embeddings"]["no_vector"], 1)

    def test_embedder_errors(self):
        kplab.register_embedder("short", lambda ps: [[1.0, 2.0]] * len(ps), dims=3)
        with self.assertRaisesRegex(kplab.Error, r"embedder 'short': row 0 has 2 numbers \(expected 3\)"):
            kplab.evaluate(SEM_DOCS, SEM_PREDS, metrics=["semrp"], model="short", cache=self.db)

        def boom(ps):
            raise RuntimeError("model exploded")
        kplab.register_embedder("boom", boom, dims=3)
        with self.assertRaisesRegex(kplab.Error, r"embedder 'boom' raised RuntimeError: model exploded"):
            kplab.evaluate(SEM_DOCS, SEM_PREDS, metrics=["semrp"], model="boom", cache=self.db)
        with self.assertRaises(TypeError):
            kplab.register_embedder("x", 42, dims=3)
        if np is not None:
            kplab.register_embedder("shape", lambda ps: np.zeros((len(ps), 2)), dims=3)
            with self.assertRaisesRegex(kplab.Error, r"shape \(4, 2\) for 4 phrases \(expected \(4, 3\)\)"):
                kplab.evaluate(SEM_DOCS, SEM_PREDS, metrics=["semrp"], model="shape", cache=self.db)
        # Nothing was cached for the failing models, and a later good run still works.
        kplab.register_embedder("toy", Counter(), dims=3)
        self.check_semrp(kplab.evaluate(SEM_DOCS, SEM_PREDS, metrics=["semrp"], model="toy", cache=self.db))

    def test_a_failing_embedder_is_a_script_error(self):
        # An embedder is the user's code, as a metric plugin is: when it raises or returns what is not a
        # vector per phrase, the script failed, not the documents or predictions, so the error's kind is
        # script (kplab.ScriptError, exit 3 on the command line), never kplab.InputError. Its kind comes
        # through the phrase cache's embedding chunks, on kplab's threads too (design note 52).
        def boom(ps):
            raise RuntimeError("model exploded")
        kplab.register_embedder("boom", boom, dims=3)
        # 400 distinct phrases: the chunk is embedded in slices on 4 threads, each slice's call raising.
        many = [{"id": f"m{i}", "text": f"word{i} apple", "keyphrases": [f"word{i}"]} for i in range(400)]
        many_preds = [[f"word{i}", "apple"] for i in range(400)]
        for docs, preds, threads in ((SEM_DOCS, SEM_PREDS, 1), (many, many_preds, 4)):
            with self.assertRaises(kplab.ScriptError) as cm:
                kplab.evaluate(docs, preds, metrics=["semrp"], model="boom", cache=self.db, threads=threads)
            self.assertNotIsInstance(cm.exception, kplab.InputError)
            self.assertEqual(type(cm.exception), kplab.ScriptError)  # not even its LimitError subclass
            self.assertIn("embedder 'boom' raised RuntimeError: model exploded", str(cm.exception))
        # A value that is not finite is what the callable returned: its failure too, named by row and item.
        table = dict(VECTORS, banana=[0.0, float("nan"), 0.0])
        kplab.register_embedder("nan", lambda ps: [table[p] for p in ps], dims=3)
        with self.assertRaisesRegex(kplab.ScriptError, r"embedder 'nan': row 1 item 1 is nan \(expected a finite "
                                                       r"number\)"):
            kplab.evaluate(SEM_DOCS, SEM_PREDS, metrics=["semrp"], model="nan", cache=self.db)
        table["banana"] = [float("inf"), 1.0, 0.0]
        with self.assertRaisesRegex(kplab.ScriptError, r"embedder 'nan': row 1 item 0 is inf"):
            kplab.evaluate(SEM_DOCS, SEM_PREDS, metrics=["semrp"], model="nan", cache=self.db)
        # A good embedder still gives SemR-p afterwards.
        kplab.register_embedder("toy", Counter(), dims=3)
        self.check_semrp(kplab.evaluate(SEM_DOCS, SEM_PREDS, metrics=["semrp"], model="toy", cache=self.db))

    def test_threads(self):
        # Several scoring lanes and Python callbacks from kplab's threads: same numbers.
        fn = Counter()
        kplab.register_embedder("toy", fn, dims=3)
        docs = SEM_DOCS * 50
        docs = [dict(d, id=str(i)) for i, d in enumerate(docs)]
        # All four lanes, though 100 documents are one lane's work by their cost (KPLAB_LANES, docs/cli.md).
        os.environ["KPLAB_LANES"] = "max"
        try:
            r = kplab.evaluate(docs, SEM_PREDS * 50, metrics=["semrp"], model="toy", cache=self.db, threads=4)
        finally:
            del os.environ["KPLAB_LANES"]
        self.assertAlmostEqual(r["aggregates"]["all.semrp"], sum(SEMRP_DOC) / 2, places=6)


class ExampleTest(unittest.TestCase):
    def test_example_runs(self):
        example = os.path.join(SOURCE_DIR, "examples", "python", "kpeval_loop.py")
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, KPLAB_DB=os.path.join(tmp, "kplab.db"))
            out = subprocess.run([sys.executable, example, "--toy-embedder"], env=env, cwd=tmp,
                                 capture_output=True, text=True, timeout=300)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("all.f1@5.macro_hm", out.stdout)
            # The example's hand-written loop stems with nltk when it is installed (found, not imported:
            # importing nltk costs this process a second of CPU).
            if importlib.util.find_spec("nltk") is not None:
                self.assertIn("loop and kplab agree", out.stdout)
            else:
                self.assertIn("hand-written loop skipped", out.stdout)


class FormatsTest(unittest.TestCase):
    """The dataset and prediction formats of docs/formats.md read by path, with the CLI's names and
    options: the same files give exactly the aggregates `kplab eval --output json` prints."""

    F = os.path.join(SOURCE_DIR, "tests", "data", "formats")

    def cli(self, *args):
        binary = os.environ.get("KPLAB_BINARY")
        if not binary:
            self.skipTest("KPLAB_BINARY not set (run through ctest)")
        out = subprocess.run([binary, "eval", "--no-store", "--output", "json", "--system", "s"] + list(args),
                             capture_output=True, text=True, cwd=SOURCE_DIR)
        self.assertEqual(out.returncode, 0, out.stderr)
        import json
        return json.loads(out.stdout)["aggregates"]

    def same(self, py, cli):
        self.assertEqual(sorted(py), sorted(cli))
        for k, v in cli.items():
            if v is None:
                self.assertTrue(math.isnan(py[k]), k)
            else:
                self.assertEqual(py[k], v, k)

    def test_midas_with_hf_predictions(self):
        ds = os.path.join(self.F, "midas", "tiny_splits.jsonl")
        preds = os.path.join(self.F, "hf_predictions.jsonl")
        r = kplab.evaluate(ds, preds, split="test", dataset_format="midas", predictions_format="hf")
        self.same(r["aggregates"], self.cli("--dataset", ds, "--split", "test", "--predictions", preds))
        # ... which are examples/tiny's numbers in its own format.
        tiny = os.path.join(SOURCE_DIR, "examples", "tiny")
        self.same(r["aggregates"], self.cli("--dataset", tiny, "--predictions", os.path.join(tiny, "predictions.txt")))
        self.assertEqual(len(r["per_document"]["all.f1@M"]), 5)

    def test_deepkpg_with_opennmt_kpg_and_pke_references(self):
        import pathlib
        ds = pathlib.Path(self.F) / "deepkpg"  # a PathLike is a path too
        preds = os.path.join(self.F, "opennmt_kpg_predictions.jsonl")
        r = kplab.evaluate(ds, preds)
        self.same(r["aggregates"], self.cli("--dataset", str(ds), "--predictions", preds))
        text = os.path.join(self.F, "pke", "Test")
        refs = os.path.join(self.F, "pke", "tiny.uncontr.json")
        tiny_preds = os.path.join(SOURCE_DIR, "examples", "tiny", "predictions.txt")
        r = kplab.evaluate(text, tiny_preds, references=refs)
        self.same(r["aggregates"], self.cli("--dataset", text, "--references", refs, "--predictions", tiny_preds))

    def test_errors_are_the_cli_messages(self):
        ds = os.path.join(self.F, "midas", "tiny_splits.jsonl")
        preds = os.path.join(self.F, "hf_predictions.jsonl")
        with self.assertRaises(kplab.InputError) as e:
            kplab.evaluate(ds, preds)
        self.assertEqual(str(e.exception), ds + ": records of 2 splits: test, train (expected one split; choose one "
                         "with --split NAME (Python split=NAME) rather than mixing them)")
        with self.assertRaises(kplab.InputError) as e:
            kplab.evaluate(ds, preds, split="dev")
        self.assertEqual(str(e.exception),
                         ds + ': no record of split "dev" (expected one of the splits in the file: test, train)')
        with self.assertRaises(kplab.InputError) as e:
            kplab.evaluate(DOCS, PREDS, split="test")
        self.assertEqual(str(e.exception),
                         "split: given with in-memory documents (expected documents as a dataset path)")
        with self.assertRaises(kplab.InputError) as e:
            kplab.evaluate(ds, PREDS, split="test", predictions_format="hf")
        self.assertEqual(str(e.exception),
                         "predictions_format: given with in-memory predictions (expected predictions as a file path)")


if __name__ == "__main__":
    unittest.main()
