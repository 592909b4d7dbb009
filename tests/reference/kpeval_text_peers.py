#!/usr/bin/python3
"""Run KPEval's own ROUGE, METEOR and diversity metric classes on the shared catSeqTG-2RF1 outputs.

Nothing of the peers is committed: this script drives their code where it lies (--peers, default
/work/peers) and writes what they print. It is how tests/conformance/peers/kpeval_text_*.tsv were made
(`--commit`), and how every per-document value was compared with kplab (`--out DIR` keeps them all).

Peers (fetched snapshots, code unmodified):
  PEERS/KPEval                      uclanlp/KPEval @ aead599: metrics/metric.py, metric_utils.py,
                                    rouge_metric.py, meteor_metric.py, diversity_metric.py
  PEERS/kpeval-text/rouge-1.0.1     pltrdy/rouge tag 1.0.1 (the PyPI package `rouge` 1.0.1)
  PEERS/kpeval-text/py-rouge-1.1    Diego999/py-rouge (setup.py version 1.1): only for --py-rouge
  PEERS/kpeval-text/evaluate-0.4.0  huggingface/evaluate tag v0.4.0: metrics/meteor/meteor.py
  PEERS/kpeval-text/rapidfuzz-3.1.1 maxbachmann/RapidFuzz tag v3.1.1 (its pure-Python fuzz.ratio;
                                    the C++ extension is not built here, RAPIDFUZZ_IMPLEMENTATION=python)
  nltk 3.8 from Debian (python3-nltk; its meteor_score, bleu_score, wordnet reader and tokenizers are
                                    those of 3.8.1, KPEval's pin, but for copyright lines)

Stand-ins, each for an import that cannot be satisfied here (no package in Debian, no network):
  * gin: configurable classes get their parameters from configs/sample_config_kp20k.gin (parsed here);
  * evaluate / datasets: `evaluate.load('meteor')` imports evaluate 0.4.0's meteor.py and calls its own
    `_compute`, as evaluate's Metric.compute does;
  * scipy, sklearn, sentence_transformers: imported by diversity_metric.py for the embedding
    similarities only, which run with `sbert_model=None` (not this comparison's metrics);
  * the `metrics` package's __init__ imports every metric (torch, bert_score, ...): the package is
    made here from its folder, and only metric.py and the three metrics above are imported;
  * WordNet: nltk's reader reads Debian's wordnet-base (/usr/share/wordnet) through a temporary
    nltk_data folder of symbolic links, plus the `lexnames` file Debian lacks (written from Debian's
    lexnames(5WN) manual page; nltk only checks its line numbers);
  * punkt: nltk.word_tokenize needs the punkt sentence model, which Debian does not ship (nor can it be
    fetched here). sent_tokenize is replaced by kplab's documented rule (docs/text.md: a sentence ends
    after . ? ! followed by whitespace). The documents whose strings could split differently under punkt
    are counted (`punkt_sensitive`): only there can a user with punkt get another number.

Inputs, as a KPEval user builds them from the Meng-2017 line files (as import_peer_outputs.py says): the
source is the context line with `<eos>` replaced by `[sep]`; target = the keywords line; predictions =
the prediction line without its `<peos>` piece. KP20k (20,000 documents) has no text: its source is the
empty string, so every keyphrase is absent and only `all` is compared. kp20k_first1000: the first 1000
prediction lines against kp20k_test_first1000 (with text).

Usage:
  /usr/bin/python3 tests/reference/kpeval_text_peers.py --out /work/peers/kpeval-text/out  # every value
  /usr/bin/python3 tests/reference/kpeval_text_peers.py --commit   # writes tests/conformance/peers/kpeval_text_*.tsv
  /usr/bin/python3 tests/reference/kpeval_text_peers.py --commit --from /work/peers/kpeval-text/out  # from a saved --out
  /usr/bin/python3 tests/reference/kpeval_text_peers.py --py-rouge  # shows py-rouge 1.1 stopping in KPEval's code
  --only inspec,semeval  --seeds 1234   restrict the runs; --jobs N runs them in N processes.
"""
import argparse
import ast
import gzip
import importlib.util
import json
import math
import multiprocessing
import os
import re
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PEERS_OUT = os.path.join(REPO, "tests", "conformance", "peers")

MENG = "kpg_testsets_meng2017"
# name -> (dataset path, format, keywords, context or None, prediction dir, max_docs)
RUNS = {
    "inspec": (MENG + "/inspec", "meng", "word_inspec_testing_allkeywords.txt",
               "word_inspec_testing_context.txt", "inspec", 0),
    "krapivin": (MENG + "/krapivin", "meng", "word_krapivin_testing_allkeywords.txt",
                 "word_krapivin_testing_context.txt", "krapivin", 0),
    "semeval": (MENG + "/semeval", "meng", "word_semeval_testing_allkeywords.txt",
                "word_semeval_testing_context.txt", "semeval", 0),
    "kp20k": (MENG + "/kp20k", "meng", "word_kp20k_testing_allkeywords.txt", None, "kp20k", 0),
    "kp20k_first1000": ("kp20k_test_first1000", "one2set", "test_trg.txt", "test_src.txt", "kp20k", 1000),
}
SEEDS = (1234, 5678, 9527)


# ---------------------------------------------------------------------------------------------------
# Stand-ins for imports that cannot be satisfied
# ---------------------------------------------------------------------------------------------------
def install_gin(config_path):
    """gin.configurable over the bindings `Class.param = literal` of a .gin file."""
    bindings = {}
    with open(config_path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line or line.startswith("import ") or "=" not in line:
                continue
            lhs, rhs = line.split("=", 1)
            cls, param = lhs.strip().split(".")
            bindings.setdefault(cls, {})[param] = ast.literal_eval(rhs.strip())

    def configurable(cls):
        init, conf = cls.__init__, bindings.get(cls.__name__, {})

        def wrapped(self, *args, **kwargs):
            for k, v in conf.items():
                kwargs.setdefault(k, v)
            init(self, *args, **kwargs)

        cls.__init__ = wrapped
        return cls

    gin = types.ModuleType("gin")
    gin.configurable = configurable
    sys.modules["gin"] = gin


def install_stub(name, **attrs):
    mod = types.ModuleType(name)
    for k, v in attrs.items():
        setattr(mod, k, v)
    sys.modules[name] = mod
    return mod


def install_embedding_stubs():
    class Unavailable:
        def __init__(self, *a, **k):
            raise RuntimeError("not available in this comparison (sbert_model=None)")

    install_stub("scipy")
    install_stub("scipy.sparse", csr_matrix=Unavailable)
    sys.modules["scipy"].sparse = sys.modules["scipy.sparse"]
    install_stub("sklearn")
    install_stub("sklearn.metrics")
    install_stub("sklearn.metrics.pairwise", cosine_similarity=Unavailable)
    install_stub("sentence_transformers", SentenceTransformer=Unavailable)


def install_evaluate(evaluate_root):
    """evaluate.load('meteor') -> evaluate 0.4.0's own Meteor metric script."""
    import importlib.metadata
    from packaging import version

    class Features(dict):
        pass

    def value(*a, **k):
        return ("Value", a, k)

    def sequence(*a, **k):
        return ("Sequence", a, k)

    datasets = install_stub("datasets", Features=Features, Value=value, Sequence=sequence)
    datasets.config = install_stub("datasets.config", importlib_metadata=importlib.metadata, version=version)

    class Metric:
        def compute(self, **kwargs):  # evaluate.Metric.compute: the inputs and kwargs reach _compute
            return self._compute(**kwargs)

    class MetricInfo:
        def __init__(self, **kwargs):
            self.__dict__.update(kwargs)

    def add_start_docstrings(*docstr):
        return lambda fn: fn

    evaluate = install_stub("evaluate", Metric=Metric, MetricInfo=MetricInfo)
    evaluate.utils = install_stub("evaluate.utils")
    evaluate.utils.file_utils = install_stub("evaluate.utils.file_utils", add_start_docstrings=add_start_docstrings)

    def load(name):
        assert name == "meteor"
        path = os.path.join(evaluate_root, "metrics", "meteor", "meteor.py")
        spec = importlib.util.spec_from_file_location("evaluate_meteor_script", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod.Meteor()

    evaluate.load = load


def kplab_sentences(text):
    """kplab's documented sentence rule (docs/text.md), standing in for punkt."""
    out, start = [], 0
    for i, ch in enumerate(text):
        if ch in ".?!" and i + 1 < len(text) and text[i + 1].isspace():
            out.append(text[start:i + 1])
            start = i + 1
    out.append(text[start:])
    return [s.strip() for s in out if s.strip()]


PUNKT_SENSITIVE = re.compile(r"[.?!](\s|[?!)\";}\]*:@'({\[])")


def install_nltk_data(tmp):
    """An nltk_data folder whose corpora/wordnet is Debian's wordnet-base plus a lexnames file."""
    src = "/usr/share/wordnet"
    if not os.path.exists(os.path.join(src, "data.noun")):
        sys.exit("Debian's WordNet is missing: apt-get install wordnet-base")
    dst = os.path.join(tmp, "corpora", "wordnet")
    os.makedirs(dst)
    for f in os.listdir(src):
        os.symlink(os.path.join(src, f), os.path.join(dst, f))
    cats = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
    with gzip.open("/usr/share/man/man5/lexnames.5WN.gz", "rt") as man, open(os.path.join(dst, "lexnames"), "w") as out:
        for line in man:
            m = re.match(r"^(\d\d)\t(\w+)\.(\w+)\s", line)
            if m:
                out.write("%s\t%s.%s\t%d\n" % (m.group(1), m.group(2), m.group(3), cats[m.group(2)]))
    import nltk
    nltk.data.path.insert(0, tmp)
    import nltk.tokenize
    nltk.tokenize.sent_tokenize = lambda text, language="english": kplab_sentences(text)


def load_peers(peers, tmp):
    kpeval = os.path.join(peers, "KPEval")
    text = os.path.join(peers, "kpeval-text")
    install_gin(os.path.join(kpeval, "configs", "sample_config_kp20k.gin"))
    install_embedding_stubs()
    install_evaluate(os.path.join(text, "evaluate-0.4.0"))
    install_nltk_data(tmp)
    os.environ["RAPIDFUZZ_IMPLEMENTATION"] = "python"
    sys.path.insert(0, os.path.join(text, "rapidfuzz-3.1.1", "src"))
    sys.path.insert(0, os.path.join(text, "rouge-1.0.1"))
    pkg = types.ModuleType("metrics")  # the package, without its __init__'s imports of every metric
    pkg.__path__ = [os.path.join(kpeval, "metrics")]
    sys.modules["metrics"] = pkg
    import metrics.metric
    pkg.KeyphraseMetric = metrics.metric.KeyphraseMetric
    import metrics.rouge_metric
    import metrics.meteor_metric
    import metrics.diversity_metric
    return metrics


# ---------------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------------
def read_lines(path, n=0):
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    return lines[:n] if n else lines


def inputs(shared, name, seed):
    path, fmt, kw, ctx, pred_dir, max_docs = RUNS[name]
    refs = [line.strip() for line in read_lines(os.path.join(shared, path, kw), max_docs)]
    preds = read_lines(os.path.join(shared, "predictions", "catSeqTG-2RF1", pred_dir, "seed%d.txt" % seed), max_docs)
    preds = [";".join(p for p in line.strip().split(";") if p.strip().lower() != "<peos>") for line in preds]
    if ctx:
        srcs = [line.strip().replace("<eos>", "[sep]") for line in read_lines(os.path.join(shared, path, ctx), max_docs)]
    else:
        srcs = [""] * len(refs)
    assert len(refs) == len(preds) == len(srcs), name
    return srcs, refs, preds


# ---------------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------------
# KPEval field -> kplab column (docs/metrics.md)
def kplab_column(field):
    m = re.fullmatch(r"(present|absent|all)_rouge-(1|2|l)_(p|r|f)", field)
    if m:
        s, n, stat = m.groups()
        return "%s.rouge%s_%s" % (s, n, {"p": "p", "r": "r", "f": "f1"}[stat])
    m = re.fullmatch(r"(present|absent|all)_kp_meteor", field)
    if m:
        return "%s.meteor" % m.group(1)
    return {"self_bleu": "all.self_bleu", "self_edit_distance": "all.self_edit_distance"}.get(field)


def run_one(job):
    peers, shared, name, seed = job
    with tempfile.TemporaryDirectory() as tmp:
        metrics = load_peers(peers, tmp)
        srcs, refs, preds = inputs(shared, name, seed)
        out, seconds = {}, {}
        for label, cls, kwargs in (("rouge", metrics.rouge_metric.RougeMetric, {}),
                                   ("meteor", metrics.meteor_metric.MeteorMetric, {}),
                                   ("diversity", metrics.diversity_metric.DiversityMetric, {"sbert_model": None})):
            metric = cls(**kwargs)
            devnull = open(os.devnull, "w")
            # rouge_metric.py prints every present pair; tqdm draws progress bars on stderr
            saved = sys.stdout, sys.stderr
            sys.stdout = sys.stderr = devnull
            t = time.process_time()
            try:
                per_doc, _ = metric.evaluate(preds, refs, srcs)
            finally:
                sys.stdout, sys.stderr = saved
                devnull.close()
            seconds[label] = time.process_time() - t
            for field, values in per_doc.items():
                col = kplab_column(field)
                if col:
                    out[col] = [float(v) for v in values]
        # Where punkt may split a string differently from the stand-in: any prediction or reference piece
        # with . ? ! before whitespace or a closing mark (the strings METEOR and Self-BLEU tokenize).
        sensitive = [i for i, (r, p) in enumerate(zip(refs, preds))
                     if PUNKT_SENSITIVE.search(r.replace(";", " ; ")) or PUNKT_SENSITIVE.search(p.replace(";", " ; "))]
        return name, seed, out, seconds, len(refs), sensitive


def py_rouge_demo(peers, shared):
    """KPEval's RougeMetric over py-rouge 1.1 (the version its requirements.txt pins) stops on its own
    `assert len(pkp_scores) == 1`: py-rouge's get_scores returns a dict of metrics, not a list of one."""
    with tempfile.TemporaryDirectory() as tmp:
        sys.path.insert(0, os.path.join(peers, "kpeval-text", "py-rouge-1.1"))
        metrics = load_peers(peers, tmp)
        sys.path.remove(os.path.join(peers, "kpeval-text", "rouge-1.0.1"))
        for m in [k for k in sys.modules if k == "rouge" or k.startswith("rouge.")]:
            del sys.modules[m]
        import importlib
        import rouge as rouge_mod
        print("rouge module:", rouge_mod.__file__)
        print("py-rouge Rouge().get_scores('a b c', 'a b d') ->", rouge_mod.Rouge().get_scores("a b c", "a b d"))
        importlib.reload(metrics.rouge_metric)
        srcs, refs, preds = inputs(shared, "semeval", 1234)
        metric = metrics.rouge_metric.RougeMetric()
        try:
            metric.evaluate(preds[:3], refs[:3], srcs[:3])
        except AssertionError:
            import traceback
            traceback.print_exc()
            print("py-rouge 1.1: KPEval's RougeMetric stops on an assertion (as said above)")
            return 0
        print("py-rouge 1.1 ran: unexpected")
        return 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peers", default="/work/peers")
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(REPO), "shared", "data"))
    ap.add_argument("--out", help="write every per-document value here (one JSON per run)")
    ap.add_argument("--commit", action="store_true", help="write tests/conformance/peers/kpeval_text_*.tsv")
    ap.add_argument("--from", dest="from_dir", help="with --commit: take the runs from a --out DIR instead of running them")
    ap.add_argument("--only", help="comma-separated runs among " + ", ".join(RUNS))
    ap.add_argument("--seeds", help="comma-separated seeds (default 1234,5678,9527)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--py-rouge", action="store_true")
    args = ap.parse_args()
    if not os.path.isdir(args.shared):
        sys.exit("%s: no shared data (--shared DIR)" % args.shared)
    if args.py_rouge:
        return py_rouge_demo(args.peers, args.shared)
    names = args.only.split(",") if args.only else list(RUNS)
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else list(SEEDS)
    if args.from_dir:
        results = []
        for n in names:
            for sd in seeds:
                with open(os.path.join(args.from_dir, "%s__seed%d.json" % (n, sd))) as f:
                    d = json.load(f)
                results.append((n, sd, d["columns"], d["seconds"], d["n_docs"], d["punkt_sensitive"]))
    else:
        jobs = [(args.peers, args.shared, n, s) for n in names for s in seeds]
        with multiprocessing.Pool(args.jobs, maxtasksperchild=1) as pool:  # one process a run: fresh imports
            results = pool.map(run_one, jobs, chunksize=1)
    if args.out and not args.from_dir:
        os.makedirs(args.out, exist_ok=True)
        for name, seed, out, seconds, n_docs, sensitive in results:
            with open(os.path.join(args.out, "%s__seed%d.json" % (name, seed)), "w") as f:
                json.dump({"n_docs": n_docs, "seconds": seconds, "punkt_sensitive": sensitive, "columns": out}, f)
    for name, seed, out, seconds, n_docs, sensitive in results:
        print("%s seed%d: %d docs, %d punkt-sensitive; cpu s %s" % (
            name, seed, n_docs, len(sensitive), {k: round(v, 2) for k, v in seconds.items()}))
    if args.commit:
        write_committed(results)
    return 0


# Every 20th document of the runs of up to 1000 documents, every 200th of KP20k: the per-document sample
# committed with the aggregates (the comparison of every value is run with --out).
def sampled(name, i):
    return i % (200 if name == "kp20k" else 20) == 0


def write_committed(results):
    """Aggregates in full precision; sampled per-document values one row per document, 12 significant
    digits (the test compares to 1e-9)."""
    prov = "KPEval@aead599+rouge1.0.1+nltk3.8"
    agg_path = os.path.join(PEERS_OUT, "kpeval_text_aggregates.tsv")
    doc_path = os.path.join(PEERS_OUT, "kpeval_text_documents.tsv")
    results = sorted(results, key=lambda r: (list(RUNS).index(r[0]), r[1]))
    columns = sorted(results[0][2])
    with open(agg_path, "w") as agg, open(doc_path, "w") as docs:
        agg.write("peer\tdataset\tdataset_path\tdataset_format\tpredictions\toptions\tmetric\tvalue\tn_docs\n")
        docs.write("dataset\tseed\tdoc\t" + "\t".join(columns) + "\n")
        for name, seed, out, _, n_docs, _ in results:
            path, fmt, _, ctx, pred_dir, max_docs = RUNS[name]
            opts = ["max_docs=%d" % max_docs] if max_docs else []
            if not ctx:
                opts.append("no-text")
            pred = "predictions/catSeqTG-2RF1/%s/seed%d.txt" % (pred_dir, seed)
            # Without text KPEval puts every keyphrase in absent; kplab reports `all` only ("" below).
            kept = [c for c in columns if ctx or c.startswith("all.")]
            for col in kept:
                values = out[col]
                agg.write("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%r\t%d\n" % (
                    prov, name, path, fmt, pred, ",".join(opts) or "-", col, math.fsum(values) / len(values),
                    len(values)))
            for i in range(n_docs):
                if sampled(name, i):
                    cells = ["%.12g" % out[c][i] if c in kept else "" for c in columns]
                    docs.write("%s\t%d\t%d\t%s\n" % (name, seed, i, "\t".join(cells)))


if __name__ == "__main__":
    sys.exit(main())
