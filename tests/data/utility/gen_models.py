#!/usr/bin/python3
"""Writes the two random-weight models the utility metric's dense tests use, and their peer copies.

No checkpoint can be downloaded here, so the bi-encoder and the cross-encoder that KPEval's retrieval
metric would load (sentence-transformers/all-mpnet-base-v2, cross-encoder/ms-marco-MiniLM-L-6-v2) are
stood in for by random BERT networks of the same kinds, written with the vocabulary, tokenizer and
helpers of tests/data/transformer/gen_fixtures.py (our own ~300-entry WordPiece vocabulary: words it
lacks are spelt with the single-letter pieces, so every text tokenizes):

  bi-encoder/     a sentence-transformers snapshot: BertModel (hidden 32, 2 layers, 4 heads, FFN 64,
                  512 positions), mean pooling, no Normalize
  cross-encoder/  a Hugging Face BertForSequenceClassification (the same sizes) with num_labels 1, as
                  sentence-transformers' CrossEncoder saves one: "bert."-prefixed encoder, pooler,
                  classifier

Run from the repository root with Debian's Python (python3-torch, python3-numpy):

    /usr/bin/python3 tests/data/utility/gen_models.py [--peer-out DIR]

Deterministic (fixed seeds): two runs give byte-identical files. --peer-out also writes, outside the
repository, copies that transformers 4.30 can load without the `safetensors` and `tokenizers`
packages (which Debian lacks): pytorch_model.bin (the same tensors, torch.save), vocab.txt for the
slow BertTokenizer, and a tokenizer_config.json without "tokenizer_class" (AutoTokenizer would ask for
the fast class). tests/reference/utility_peer.py runs KPEval on those copies.
"""
import argparse
import os
import shutil
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, "..", "transformer"))
import gen_fixtures as fx  # noqa: E402
import torch_reference as ref  # noqa: E402



def bert_config(**extra):
    cfg = {
        "architectures": ["BertModel"],
        "attention_probs_dropout_prob": 0.1,
        "classifier_dropout": None,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": 32,
        "initializer_range": 0.02,
        "intermediate_size": 64,
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": 512,
        "model_type": "bert",
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "torch_dtype": "float32",
        "transformers_version": "4.30.2",
        "type_vocab_size": 2,
        "use_cache": True,
        "vocab_size": len(fx.BERT_VOCAB),
    }
    cfg.update(extra)
    return cfg


def write_vocab_txt(path):
    by_id = sorted(fx.BERT_VOCAB.items(), key=lambda kv: kv[1])
    assert [i for _, i in by_id] == list(range(len(by_id)))
    with open(path, "w") as f:
        f.write("".join(tok + "\n" for tok, _ in by_id))


def bi_encoder(out):
    cfg = bert_config()
    weights = fx.random_weights(cfg, seed=31001, std=fx.TINY_STD)
    fx.write_snapshot(out, cfg, weights, fx.bert_tokenizer_json(fx.BERT_VOCAB), fx.BERT_TOKENIZER_CONFIG,
                      pooling="mean", normalize=False, max_seq_length=512, fresh=True)
    # The files as sentence-transformers 2.2.2 (KPEval's pin) writes them: its Pooling takes only these.
    fx.write_json(os.path.join(out, "1_Pooling", "config.json"), {
        "word_embedding_dimension": cfg["hidden_size"], "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False})
    fx.write_json(os.path.join(out, "config_sentence_transformers.json"), {
        "__version__": {"sentence_transformers": "2.2.2", "transformers": "4.30.2", "pytorch": "1.13.1"}})
    return weights


def cross_encoder(out):
    cfg = bert_config(architectures=["BertForSequenceClassification"], id2label={"0": "LABEL_0"},
                      label2id={"LABEL_0": 0})
    enc = fx.random_weights(cfg, seed=31002, std=fx.TINY_STD)
    weights = {"bert." + k: v for k, v in enc.items()}
    rng = np.random.default_rng(31003)
    h = cfg["hidden_size"]
    weights["classifier.weight"] = (rng.standard_normal((1, h), dtype=np.float32) * np.float32(0.5)).astype(np.float32)
    weights["classifier.bias"] = (rng.standard_normal((1,), dtype=np.float32) * np.float32(0.1)).astype(np.float32)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    fx.write_json(os.path.join(out, "config.json"), cfg)
    ref.write_safetensors(os.path.join(out, "model.safetensors"), dict(sorted(weights.items())))
    fx.write_json(os.path.join(out, "tokenizer.json"), fx.bert_tokenizer_json(fx.BERT_VOCAB))
    fx.write_json(os.path.join(out, "tokenizer_config.json"), fx.BERT_TOKENIZER_CONFIG)
    return weights


def peer_copy(src, dst, weights):
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    torch.save({k: torch.from_numpy(np.array(v)) for k, v in weights.items()}, os.path.join(dst, "pytorch_model.bin"))
    os.remove(os.path.join(dst, "model.safetensors"))
    write_vocab_txt(os.path.join(dst, "vocab.txt"))
    # AutoTokenizer turns "tokenizer_class": "BertTokenizer" into BertTokenizerFast, which needs the
    # `tokenizers` package; without the field it picks the class by model type, the slow one here.
    conf = {k: v for k, v in fx.BERT_TOKENIZER_CONFIG.items() if k != "tokenizer_class"}
    fx.write_json(os.path.join(dst, "tokenizer_config.json"), conf)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer-out")
    a = ap.parse_args()
    bi = bi_encoder(os.path.join(HERE, "bi-encoder"))
    ce = cross_encoder(os.path.join(HERE, "cross-encoder"))
    if a.peer_out:
        peer_copy(os.path.join(HERE, "bi-encoder"), os.path.join(a.peer_out, "bi-encoder"), bi)
        peer_copy(os.path.join(HERE, "cross-encoder"), os.path.join(a.peer_out, "cross-encoder"), ce)


if __name__ == "__main__":
    main()
