#!/usr/bin/python3
"""KPEval's MoverScoreMetric over AIPHES/emnlp19-moverscore, unmodified in logic, on CPU.

usage: run_reference.py VERSION MODEL_DIR DATASET SEED NDOCS OUT.json [--batch B] [--f64-distances]

Run with Debian's Python (python3-torch, python3-pyemd, python3-numpy, python3-nltk, python3-sklearn,
python3-boto3, python3-requests, python3-filelock, python3-sentencepiece) from a directory PEERS
($KPLAB_MOVER_PEERS, default /work/peers/mover) holding the authors' code, fetched from GitHub and
never committed here:
  PEERS/kpeval/{metrics,configs}   uclanlp/KPEval @ aead599
  PEERS/moverscore/*.py            AIPHES/emnlp19-moverscore @ 0459a3b (moverscore.py, moverscore_v2.py)
  PEERS/ppb/pytorch_pretrained_bert  huggingface pytorch-pretrained-BERT, tag v0.6.2 (b832d5b)
  PEERS/tf3/src/transformers       huggingface transformers @ aefc0c04 (master of 2020-07-16: 3.0.2 plus
                                   #5665, which moverscore_v2's AutoModel call needs; no later release
                                   could be fetched here)

VERSION 1: moverscore.py (pytorch_pretrained_bert 0.6.2) with MODEL_DIR as its MNLI checkpoint.
VERSION 2: moverscore_v2.py (transformers master@aefc0c04 (3.0.2 + #5665)) with MODEL_DIR as 'distilbert-base-uncased'.
What is changed around the authors' code, and why:
  * device: both files hard-code 'cuda'; torch's .to() maps cuda devices to the cpu (no GPU here);
  * moverscore.py reads tokenizer.model_max_length, which pytorch_pretrained_bert's BertTokenizer (the
    module it imports) lacks: set to 512, what pytorch_pretrained_bert gives bert-base-uncased;
  * KPEval's metrics/__init__.py imports every metric (rouge, bert_score, evaluate, ...): the package is
    created without it and metrics.metric + metrics.mover_score_metric imported; gin-config is not in
    Debian: a stand-in reads configs/sample_config_kp20k.gin's bindings for the classes used;
  * transformers master@aefc0c04 (3.0.2 + #5665) imports the Rust 'tokenizers' package at import (not in Debian) and resolves
    'distilbert-base-uncased' tokenizer files by URL: a stub module for the import (the slow Python
    tokenizer is used, AutoTokenizer's default in 3.x) and the vocabulary put in the cache under that URL;
    sacremoses (XLM's tokenizer, imported but unused) is not in Debian: an empty module;
  * moverscore_v2.py uses np.float, which numpy 1.24 (Debian's; KPEval pins 1.24.4) removed: the
    alias is set back to the builtin float it stood for.
--f64-distances is a diagnostic, not KPEval's computation: moverscore's distance function
(moverscore.pairwise_distances, moverscore_v2.batched_cdist_l2) is called on float64 copies of its
float32 inputs, the one change; everything else (the float32 network, idf, pyemd) as above. It shows
what the authors' code gives without torch's float32 distances (README.md, "What agrees").
Inputs as a KPEval user makes them from the Meng-2017 files: source = context line with '<eos>' ->
'[sep]'; target = keywords line; predictions = prediction line without its '<peos>' piece.
"""
import json
import os
import shutil
import sys
import types

HERE = os.environ.get("KPLAB_MOVER_PEERS", "/work/peers/mover")
KPLAB = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SHARED = os.environ.get("KPLAB_SHARED_DATA", os.path.join(KPLAB, "..", "shared", "data"))
version, model_dir, dataset, seed, ndocs, out_path = sys.argv[1:7]
version, seed, ndocs = int(version), int(seed), int(ndocs)
batch = int(sys.argv[sys.argv.index("--batch") + 1]) if "--batch" in sys.argv else None
f64_distances = "--f64-distances" in sys.argv

import torch  # noqa: E402

_tensor_to, _module_to = torch.Tensor.to, torch.nn.Module.to


def _cpu(args, kwargs):
    args = ["cpu" if isinstance(a, str) and a.startswith("cuda") else a for a in args]
    if isinstance(kwargs.get("device"), str) and kwargs["device"].startswith("cuda"):
        kwargs["device"] = "cpu"
    return args, kwargs


def tensor_to(self, *args, **kwargs):
    args, kwargs = _cpu(args, kwargs)
    return _tensor_to(self, *args, **kwargs)


def module_to(self, *args, **kwargs):
    args, kwargs = _cpu(args, kwargs)
    return _module_to(self, *args, **kwargs)


torch.Tensor.to, torch.nn.Module.to = tensor_to, module_to
torch.set_num_threads(1)

sys.path.insert(0, os.path.join(KPLAB, "tests", "data", "transformer"))
import torch_reference  # noqa: E402  (safetensors reader)

work = os.path.join(HERE, "work", f"v{version}-{os.path.basename(model_dir.rstrip('/'))}")
os.makedirs(work, exist_ok=True)


def bin_from_safetensors(src, dst_dir):
    sd = {k: torch.from_numpy(v.copy()) for k, v in torch_reference.read_safetensors(
        os.path.join(src, "model.safetensors")).items()}
    torch.save(sd, os.path.join(dst_dir, "pytorch_model.bin"))
    for f in ("config.json", "vocab.txt", "tokenizer_config.json"):
        if os.path.exists(os.path.join(src, f)):
            shutil.copy(os.path.join(src, f), dst_dir)


if version == 1:
    sys.path.insert(0, os.path.join(HERE, "ppb"))
    os.environ["MOVERSCORE"] = work
    bin_from_safetensors(model_dir, work)
    open(os.path.join(work, "MNLI_BERT.zip"), "wb").close()  # "already downloaded"
else:
    sys.path.insert(0, os.path.join(HERE, "tf3", "src"))
    # Any name imported from the stub is an empty class: only the fast tokenizers use them.
    for sub in ("", ".decoders", ".implementations", ".models", ".normalizers", ".pre_tokenizers", ".processors"):
        m = types.ModuleType("tokenizers" + sub)
        m.__getattr__ = lambda name: type(name, (), {})
        m.__path__ = []
        sys.modules["tokenizers" + sub] = m
    # sacremoses (XLM's tokenizer, imported by transformers' __init__) is not in Debian either.
    sys.modules["sacremoses"] = types.ModuleType("sacremoses")
    d = os.path.join(work, "distilbert-base-uncased")
    os.makedirs(d, exist_ok=True)
    bin_from_safetensors(model_dir, d)
    cache = os.path.join(work, "cache")
    os.makedirs(cache, exist_ok=True)
    os.environ["TRANSFORMERS_CACHE"] = cache
    from transformers.file_utils import url_to_filename  # noqa: E402
    from transformers.tokenization_distilbert import PRETRAINED_VOCAB_FILES_MAP  # noqa: E402
    url = PRETRAINED_VOCAB_FILES_MAP["vocab_file"]["distilbert-base-uncased"]
    shutil.copy(os.path.join(d, "vocab.txt"), os.path.join(cache, url_to_filename(url)))
    os.chdir(work)
    # moverscore_v2 uses np.float, removed in numpy 1.24 (Debian's, and KPEval's pin 1.24.4): the alias
    # numpy deprecated, which was the builtin float.
    import numpy
    numpy.float = float

sys.path.insert(0, os.path.join(HERE, "moverscore"))
if version == 1:
    import moverscore  # noqa: E402
    moverscore.tokenizer.model_max_length = 512
    moverscore.device = "cpu"

# gin stand-in: the .gin file's "Class.param = value" bindings, applied as keyword defaults.
BINDINGS = {}
with open(os.path.join(HERE, "kpeval", "configs", "sample_config_kp20k.gin")) as f:
    for line in f:
        line = line.split("#")[0].strip()
        if "=" in line and not line.startswith("import"):
            key, value = (x.strip() for x in line.split("=", 1))
            cls, param = key.split(".")
            try:
                BINDINGS.setdefault(cls, {})[param] = eval(value)
            except Exception:
                BINDINGS.setdefault(cls, {})[param] = value.strip("'\"")
gin = types.ModuleType("gin")


def configurable(cls):
    init = cls.__init__

    def wrapped(self, *args, **kwargs):
        for klass in type(self).__mro__:
            for k, v in BINDINGS.get(klass.__name__, {}).items():
                if klass is cls:
                    kwargs.setdefault(k, v)
        return init(self, *args, **kwargs)

    cls.__init__ = wrapped
    return cls


gin.configurable = configurable
sys.modules["gin"] = gin
metrics = types.ModuleType("metrics")
metrics.__path__ = [os.path.join(HERE, "kpeval", "metrics")]
sys.modules["metrics"] = metrics
import metrics.metric  # noqa: E402
metrics.KeyphraseMetric = metrics.metric.KeyphraseMetric
from metrics.mover_score_metric import MoverScoreMetric  # noqa: E402

if f64_distances:
    if version == 1:
        import moverscore as ms  # noqa: E402
        _pd = ms.pairwise_distances
        ms.pairwise_distances = lambda x, y=None: _pd(x.double(), y.double())
    else:
        import moverscore_v2 as ms  # noqa: E402
        _cd = ms.batched_cdist_l2
        ms.batched_cdist_l2 = lambda x1, x2: _cd(x1.double(), x2.double())

kwargs = {"version": version}
if batch:
    kwargs["batch_size"] = batch
metric = MoverScoreMetric(**kwargs)

MENG = os.path.join(SHARED, "kpg_testsets_meng2017")
if dataset == "kp20k":
    src_f = os.path.join(SHARED, "kp20k_test_first1000", "test_src.txt")
    trg_f = os.path.join(SHARED, "kp20k_test_first1000", "test_trg.txt")
else:
    src_f = os.path.join(MENG, dataset, f"word_{dataset}_testing_context.txt")
    trg_f = os.path.join(MENG, dataset, f"word_{dataset}_testing_allkeywords.txt")
pred_f = os.path.join(SHARED, "predictions", "catSeqTG-2RF1", dataset, f"seed{seed}.txt")


def first(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for _, line in zip(range(ndocs), f)]


inputs = [x.replace("<eos>", "[sep]").strip() for x in first(src_f)]
refs = [x.strip() for x in first(trg_f)]
preds = [";".join(p for p in x.strip().split(";") if p.strip() != "<peos>") for x in first(pred_f)]
per_doc, agg = metric.evaluate(preds, refs, inputs)
with open(out_path, "w") as f:
    json.dump({"per_doc": {k: [float(x) for x in v] for k, v in per_doc.items()},
               "aggregate": {k: float(v) for k, v in agg.items()},
               "config": {"version": version, "batch_size": metric.batch_size, "n_gram": metric.n_gram,
                          "remove_subwords": metric.remove_subwords, "stop_words": len(metric.stop_words)}},
              f, indent=1)
print(out_path, agg)
