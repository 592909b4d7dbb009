#!/usr/bin/python3
"""KPEval's BertScoreMetric over Tiiiger/bert_score, unmodified in logic, on CPU.

usage: run_kpeval_bertscore.py MODEL_DIR LAYER DATASET SEED NDOCS OUT.json [--idf]

Run with Debian's Python (python3-torch, python3-numpy, python3-nltk, python3-pandas,
python3-matplotlib, python3-packaging, python3-requests, python3-filelock, python3-sentencepiece) from a
directory PEERS ($KPLAB_BERTSCORE_PEERS, default /work/peers/bertscore) holding the authors' code, fetched
from GitHub and never committed here:
  PEERS/bert_score                  Tiiiger/bert_score @ f3f3269 (0.3.13, KPEval's pin)
and, as for tests/data/mover/run_reference.py, from $KPLAB_MOVER_PEERS (default /work/peers/mover):
  kpeval/{metrics,configs}          uclanlp/KPEval @ aead599
  tf3/src/transformers              huggingface transformers @ aefc0c04 (3.0.2 + #5665)

MODEL_DIR: a random-weight BERT in kplab's fixture layout (model.safetensors, config.json, vocab.txt),
e.g. tests/data/mover/bert-mnli-tiny; it is written as pytorch_model.bin into a work directory, which
bert_score is given as model_type. LAYER: bert_score's num_layers (KPEval's configuration says 8, for
bert-base-uncased's 12 layers; the tiny models have 6). --idf: idf=True (KPEval's configuration says
False). The rest of KPEval's configuration (configs/sample_config_kp20k.gin) is used as is:
batch_size 128, no rescaling.
What is changed around the authors' code, and why:
  * KPEval's metrics/__init__.py imports every metric: the package is created without it and
    metrics.metric + metrics.bert_score_metric imported; gin-config is not in Debian: a stand-in reads
    configs/sample_config_kp20k.gin's bindings (model_type and num_layers overridden as said above);
  * transformers 3.0.2 imports the Rust 'tokenizers' package (not in Debian): a stub module (bert_score
    asks for the slow Python tokenizer, use_fast=False); sacremoses, imported but unused: an empty module.
Inputs as a KPEval user makes them from the Meng-2017 files: source = context line with '<eos>' ->
'[sep]'; target = keywords line; predictions = prediction line without its '<peos>' piece.

kpeval_bertscore.tsv was made with (bert_score printed its hash as
"bert-mnli-tiny_L4_no-idf_version=0.3.12(hug_trans=3.0.2)": f3f3269 raised the version in setup.py only):
  T=tests/data/bertscore
  /usr/bin/python3 $T/run_kpeval_bertscore.py tests/data/mover/bert-mnli-tiny 4 inspec 1234 40 OUT/l4.json
  /usr/bin/python3 $T/run_kpeval_bertscore.py tests/data/mover/bert-mnli-tiny 4 inspec 1234 40 OUT/l4_idf.json --idf
  /usr/bin/python3 $T/import_kpeval.py inspec 1234 4 OUT/l4.json OUT/l4_idf.json > $T/kpeval_bertscore.tsv
"""
import json
import os
import shutil
import sys
import types

PEERS = os.environ.get("KPLAB_BERTSCORE_PEERS", "/work/peers/bertscore")
MOVER = os.environ.get("KPLAB_MOVER_PEERS", "/work/peers/mover")
KPLAB = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SHARED = os.environ.get("KPLAB_SHARED_DATA", os.path.join(KPLAB, "..", "shared", "data"))
model_dir, layer, dataset, seed, ndocs, out_path = sys.argv[1:7]
layer, seed, ndocs = int(layer), int(seed), int(ndocs)
out_path = os.path.abspath(out_path)

import torch  # noqa: E402

torch.set_num_threads(1)
sys.path.insert(0, os.path.join(KPLAB, "tests", "data", "transformer"))
import torch_reference  # noqa: E402  (safetensors reader)

work = os.path.join(PEERS, "work", os.path.basename(model_dir.rstrip("/")))
os.makedirs(work, exist_ok=True)
sd = {k: torch.from_numpy(v.copy()) for k, v in torch_reference.read_safetensors(
    os.path.join(model_dir, "model.safetensors")).items()}
torch.save(sd, os.path.join(work, "pytorch_model.bin"))
for f in ("config.json", "vocab.txt", "tokenizer_config.json"):
    if os.path.exists(os.path.join(model_dir, f)):
        shutil.copy(os.path.join(model_dir, f), work)

sys.path.insert(0, os.path.join(MOVER, "tf3", "src"))
for sub in ("", ".decoders", ".implementations", ".models", ".normalizers", ".pre_tokenizers", ".processors"):
    m = types.ModuleType("tokenizers" + sub)
    m.__getattr__ = lambda name: type(name, (), {})
    m.__path__ = []
    sys.modules["tokenizers" + sub] = m
sys.modules["sacremoses"] = types.ModuleType("sacremoses")
sys.path.insert(0, PEERS)

BINDINGS = {}
with open(os.path.join(MOVER, "kpeval", "configs", "sample_config_kp20k.gin")) as f:
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
        for k, v in BINDINGS.get(cls.__name__, {}).items():
            kwargs.setdefault(k, v)
        return init(self, *args, **kwargs)

    cls.__init__ = wrapped
    return cls


gin.configurable = configurable
sys.modules["gin"] = gin
metrics = types.ModuleType("metrics")
metrics.__path__ = [os.path.join(MOVER, "kpeval", "metrics")]
sys.modules["metrics"] = metrics
import metrics.metric  # noqa: E402
metrics.KeyphraseMetric = metrics.metric.KeyphraseMetric
from metrics.bert_score_metric import BertScoreMetric  # noqa: E402

metric = BertScoreMetric(model_type=work, num_layers=layer, idf="--idf" in sys.argv[7:])

MENG = os.path.join(SHARED, "kpg_testsets_meng2017")
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
               "config": {"model_type": os.path.basename(model_dir.rstrip("/")), "num_layers": metric.num_layers,
                          "idf": metric.idf, "batch_size": metric.batch_size}}, f, indent=1)
print(out_path, agg)
