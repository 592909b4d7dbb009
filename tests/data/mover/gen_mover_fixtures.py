#!/usr/bin/python3
"""Writes the random-weight MoverScore models: a BERT in MoverScore v1's MNLI checkpoint layout and
a DistilBERT in Hugging Face's layout (moverscore_v2's distilbert-base-uncased).

    /usr/bin/python3 tests/data/mover/gen_mover_fixtures.py            # the tiny test fixtures, here
    /usr/bin/python3 tests/data/mover/gen_mover_fixtures.py --base OUT # base-size ones, for benchmarks

Needs numpy (Debian python3-numpy). Deterministic: two runs give byte-identical files.

Vocabulary: bert-base-uncased's WordPiece vocabulary (the Model2Vec fixture's tokenizer.json in
../shared/models, which is bert-base-uncased's without its [unused*] entries), so texts split into the
same tokens as with the real checkpoints. The tiny fixtures keep only the pieces that the keyphrases of
the documents the tests score split into (TEST_DOCS below, all predictions and references of
catSeqTG-2RF1's three seeds) plus specials, punctuation and digits: WordPiece's greedy longest match
over a subset that holds every piece the full vocabulary chose gives the same pieces, so those texts
tokenize exactly as with the full vocabulary (ids renumbered), at a fraction of the size.

bert-mnli-tiny/ (MoverScore v1, moverscore.py: pytorch_pretrained_bert's BertForSequenceClassification
with 3 labels, saved as it saves: config.json without model_type, vocab.txt, the weights under "bert."
with the pooler and the classifier head): hidden 16, 6 layers (v1 pools the last five), 2 heads, FFN
32, 512 positions. distilbert-tiny/ (v2: DistilBertForMaskedLM's "distilbert." weights, config.json
with DistilBertConfig's keys, tokenizer.json, vocab.txt, tokenizer_config.json): dim 16, 6 layers, 2
heads, hidden_dim 32, 512 positions. Weights N(0, sigma) from numpy's PCG64 (seeds below); kplab reads
model.safetensors; the reference run converts it to pytorch_model.bin (tests/data/mover/README.md).

--base OUT writes OUT/bert-mnli-base and OUT/distilbert-base-uncased at the real sizes (BERT-base: 768,
12 layers, 12 heads, 3072; DistilBERT: 768, 6 layers, 12 heads, 3072) with the full vocabulary.
"""
import argparse
import json
import os
import re
import sys
import unicodedata

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "tests", "data", "transformer"))
import torch_reference as ref  # noqa: E402  (its safetensors writer)

SHARED = os.environ.get("KPLAB_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))
VOCAB_FROM = os.path.join(SHARED, "..", "models", "model2vec-fixtures", "test-model-float32", "tokenizer.json")
# (prediction dataset dir, keywords file, first documents): the documents tests/host/mover_test.cc scores.
TEST_DOCS = [
    ("inspec", "kpg_testsets_meng2017/inspec/word_inspec_testing_allkeywords.txt", 40),
    ("krapivin", "kpg_testsets_meng2017/krapivin/word_krapivin_testing_allkeywords.txt", 40),
    ("semeval", "kpg_testsets_meng2017/semeval/word_semeval_testing_allkeywords.txt", 40),
    ("kp20k", "kp20k_test_first1000/test_trg.txt", 40),
]
SEEDS = (1234, 5678, 9527)
PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"


def basic_words(text):
    """BERT's BasicTokenizer (lower-case, accents stripped, split on whitespace and punctuation)."""
    text = unicodedata.normalize("NFD", text.lower())
    text = "".join(c for c in text if unicodedata.category(c) != "Mn")
    out = []
    for chunk in text.split():
        cur = ""
        for ch in chunk:
            if unicodedata.category(ch).startswith("P") or (ch.isascii() and not ch.isalnum()):
                if cur:
                    out.append(cur)
                out.append(ch)
                cur = ""
            else:
                cur += ch
        if cur:
            out.append(cur)
    return out


def wordpiece(word, vocab):
    if len(word) > 100:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            sub = word[start:end] if start == 0 else "##" + word[start:end]
            if sub in vocab:
                break
            end -= 1
        if end == start:
            return ["[UNK]"]
        pieces.append(sub)
        start = end
    return pieces


def full_vocab():
    with open(VOCAB_FROM) as f:
        tok = json.load(f)
    vocab = tok["model"]["vocab"]
    return [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]


def test_vocab(order):
    full = set(order)
    keep = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"} | set(PUNCT) | set("0123456789")
    for ds, kw_file, n in TEST_DOCS:
        files = [os.path.join(SHARED, kw_file)]
        files += [os.path.join(SHARED, "predictions", "catSeqTG-2RF1", ds, f"seed{s}.txt") for s in SEEDS]
        for path in files:
            with open(path, encoding="utf-8") as f:
                for _, line in zip(range(n), f):
                    for w in basic_words(line):
                        keep.update(wordpiece(w, full))
    return [t for t in order if t in keep]


def bert_config(v, h, layers, heads, inter):
    # pytorch_pretrained_bert's BertConfig.to_json_string (no model_type).
    return {"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
            "hidden_size": h, "initializer_range": 0.02, "intermediate_size": inter,
            "max_position_embeddings": 512, "num_attention_heads": heads, "num_hidden_layers": layers,
            "type_vocab_size": 2, "vocab_size": v}


def distil_config(v, h, layers, heads, inter):
    return {"activation": "gelu", "architectures": ["DistilBertForMaskedLM"], "attention_dropout": 0.1,
            "dim": h, "dropout": 0.1, "hidden_dim": inter, "initializer_range": 0.02,
            "max_position_embeddings": 512, "model_type": "distilbert", "n_heads": heads,
            "n_layers": layers, "pad_token_id": 0, "qa_dropout": 0.1, "seq_classif_dropout": 0.2,
            "sinusoidal_pos_embds": False, "tie_weights_": True, "vocab_size": v}


def shapes(arch, cfg):
    if arch == "bert":
        h, f, L, p = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], "bert."
        s = {p + "embeddings.word_embeddings.weight": ((cfg["vocab_size"], h), "emb"),
             p + "embeddings.position_embeddings.weight": ((512, h), "emb"),
             p + "embeddings.token_type_embeddings.weight": ((2, h), "emb"),
             p + "embeddings.LayerNorm.weight": ((h,), "ln_w"), p + "embeddings.LayerNorm.bias": ((h,), "ln_b"),
             p + "pooler.dense.weight": ((h, h), "w"), p + "pooler.dense.bias": ((h,), "b"),
             "classifier.weight": ((3, h), "w"), "classifier.bias": ((3,), "b")}
        names = ["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                 "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"]
        layer = p + "encoder.layer.{}."
    else:
        h, f, L, p = cfg["dim"], cfg["hidden_dim"], cfg["n_layers"], "distilbert."
        s = {p + "embeddings.word_embeddings.weight": ((cfg["vocab_size"], h), "emb"),
             p + "embeddings.position_embeddings.weight": ((512, h), "emb"),
             p + "embeddings.LayerNorm.weight": ((h,), "ln_w"), p + "embeddings.LayerNorm.bias": ((h,), "ln_b")}
        names = ["attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin", "sa_layer_norm",
                 "ffn.lin1", "ffn.lin2", "output_layer_norm"]
        layer = p + "transformer.layer.{}."
    q, k, v, o, ln1, inter, out, ln2 = names
    for i in range(L):
        b = layer.format(i)
        for name in (q, k, v, o):
            s[b + name + ".weight"] = ((h, h), "w")
            s[b + name + ".bias"] = ((h,), "b")
        s[b + inter + ".weight"] = ((f, h), "w")
        s[b + inter + ".bias"] = ((f,), "b")
        s[b + out + ".weight"] = ((h, f), "w_out")
        s[b + out + ".bias"] = ((h,), "b")
        for name in (ln1, ln2):
            s[b + name + ".weight"] = ((h,), "ln_w")
            s[b + name + ".bias"] = ((h,), "ln_b")
    return s


TINY_STD = {"emb": 0.5, "w": 0.3, "w_out": 0.25, "b": 0.1, "ln_w": 0.1, "ln_b": 0.1}
BASE_STD = {"emb": 0.02, "w": 0.02, "w_out": 0.02, "b": 0.02, "ln_w": 0.02, "ln_b": 0.02}


def weights(arch, cfg, seed, std):
    rng = np.random.Generator(np.random.PCG64(seed))
    out = {}
    for name, (shape, kind) in sorted(shapes(arch, cfg).items()):
        x = rng.standard_normal(shape, dtype=np.float32) * np.float32(std[kind])
        if kind == "ln_w":
            x += np.float32(1.0)
        out[name] = x.astype(np.float32)
    return out


def tokenizer_json(vocab):
    ids = {t: i for i, t in enumerate(vocab)}
    added = [{"id": ids[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")]
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                           "strip_accents": None, "lowercase": True},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": {"type": "TemplateProcessing",
                               "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                                          {"Sequence": {"id": "A", "type_id": 0}},
                                          {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                               "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                                        {"Sequence": {"id": "A", "type_id": 0}},
                                        {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                                        {"Sequence": {"id": "B", "type_id": 1}},
                                        {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
                               "special_tokens": {
                                   "[CLS]": {"id": "[CLS]", "ids": [ids["[CLS]"]], "tokens": ["[CLS]"]},
                                   "[SEP]": {"id": "[SEP]", "ids": [ids["[SEP]"]], "tokens": ["[SEP]"]}}},
            "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": 100, "vocab": ids}}


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")


def write_model(out, arch, vocab, sizes, seed, std):
    os.makedirs(out, exist_ok=True)
    cfg = (bert_config if arch == "bert" else distil_config)(len(vocab), *sizes)
    write_json(os.path.join(out, "config.json"), cfg)
    with open(os.path.join(out, "vocab.txt"), "w") as f:
        f.write("".join(t + "\n" for t in vocab))
    if arch == "distilbert":
        write_json(os.path.join(out, "tokenizer.json"), tokenizer_json(vocab))
        write_json(os.path.join(out, "tokenizer_config.json"), {"do_lower_case": True, "model_max_length": 512})
    ref.write_safetensors(os.path.join(out, "model.safetensors"), weights(arch, cfg, seed, std))
    print(f"wrote {out} ({arch}, vocab {len(vocab)})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", help="write base-size models into this directory (outside the repository)")
    args = ap.parse_args()
    order = full_vocab()
    if args.base:
        write_model(os.path.join(args.base, "bert-mnli-base"), "bert", order, (768, 12, 12, 3072), 31, BASE_STD)
        write_model(os.path.join(args.base, "distilbert-base-uncased"), "distilbert", order, (768, 6, 12, 3072), 32,
                    BASE_STD)
        return
    vocab = test_vocab(order)
    write_model(os.path.join(HERE, "bert-mnli-tiny"), "bert", vocab, (16, 6, 2, 32), 31, TINY_STD)
    write_model(os.path.join(HERE, "distilbert-tiny"), "distilbert", vocab, (16, 6, 2, 32), 32, TINY_STD)


if __name__ == "__main__":
    main()
