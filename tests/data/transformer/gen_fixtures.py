#!/usr/bin/python3
"""Writes the tiny BERT / MPNet transformer fixtures and their expected outputs.

Run from the repository root with Debian's Python (needs python3-torch and numpy):

    /usr/bin/python3 tests/data/transformer/gen_fixtures.py

It (re)writes, next to this file: bert-tiny/, mpnet-tiny/, hub/ (the Hugging Face
cache layout of mpnet-tiny), baseline.tsv and expected.json. Output is deterministic
(fixed seeds, sorted layouts): running it twice gives byte-identical files.

Benchmark mode (random base-size weights, written OUTSIDE the repo):

    /usr/bin/python3 tests/data/transformer/gen_fixtures.py --base /tmp/bert-base-rand \\
        --arch bert --vocab-from /work/shared/models/model2vec-fixtures/test-model-float32/tokenizer.json

Expected values are computed in float64 from the float32 weights, i.e. they are the
exact outputs of the network the committed float32 weights define. Token ids are
written by hand below (tokens listed, mapped through the vocabulary); a small
WordPiece written here only cross-checks those hand tokenizations.
"""

import argparse
import copy
import hashlib
import json
import math
import os
import shutil
import sys
import unicodedata

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, HERE)
import torch_reference as ref  # noqa: E402

torch.set_default_dtype(torch.float64)

# ---------------------------------------------------------------------------
# Vocabulary (ours, written for these fixtures).

PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
DIGITS = [str(d) for d in range(10)]
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)]
WORDS = """
the of and to in for with on by from is are we this that an as at be or it not our which
using based new method methods approach model models neural network networks learning deep
machine keyphrase extraction generation graph document documents text texts word words phrase
phrases key language natural processing retrieval information semantic similarity sentence
sentences vector vectors representation representations attention transformer encoder decoder
sequence training data dataset corpus evaluation metric metrics score scores ranking topic
topics unsupervised supervised statistical candidate candidates selection summarization task
tasks benchmark results performance precision recall accuracy large small scientific article
articles paper papers abstract title domain knowledge context contextual pretrained fine tuning
classification clustering tree trees random walk rank page node nodes edge edges matrix cosine
distance frequency inverse term terms token tokens tokenizer vocabulary input output layer
layers hidden state states pooling mean max normalization query queries search engine web news
medical biomedical legal chemistry physics biology computer science system systems analysis
study survey experiment experiments baseline baselines human annotation annotated gold standard
present absent copy mechanism recurrent convolutional generative adversarial reinforcement multi
cross lingual english long short memory global local feature features label labels position
relative absolute bias weight weights function loss
""".split()
# Subword pieces: "embedding" -> em ##bed ##ding (plurals use the letter piece ##s).
PIECES = ["em", "##bed", "##ding", "##ing", "##ed", "##er", "##ly"]

BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
BODY = PUNCT + DIGITS + LETTERS + ["##" + c for c in LETTERS] + WORDS + PIECES
assert len(set(BODY)) == len(BODY), "duplicate vocabulary entry"
assert not set(BODY) & set(BERT_SPECIALS)

BERT_VOCAB = {tok: i for i, tok in enumerate(BERT_SPECIALS + BODY)}
# MPNet's real vocabulary is BERT's shifted by four (<s> <pad> </s> <unk> first) with
# <mask> appended; its WordPiece unk_token is the shifted "[UNK]", not "<unk>".
MPNET_VOCAB = {tok: i for i, tok in enumerate(["<s>", "<pad>", "</s>", "<unk>"] + BERT_SPECIALS
                                              + BODY + ["<mask>"])}

# ---------------------------------------------------------------------------
# Inputs: text and its WordPiece tokens, by hand (before specials and truncation).

LONG = ("Neural keyphrase generation with deep graph models for scientific document "
        "retrieval and text summarization in the biomedical domain")
INPUTS = [
    ("Neural Networks", ["neural", "networks"]),
    ("Keyphrase extraction, graph-based.",
     ["keyphrase", "extraction", ",", "graph", "-", "based", "."]),
    ("Embedding keyphrases", ["em", "##bed", "##ding", "keyphrase", "##s"]),
    # Ω lowercases to ω, which is in no vocabulary entry: the whole word is [UNK].
    ("\u03a9mega learning", ["[UNK]", "learning"]),
    ("", []),
    ("deep learning", ["deep", "learning"]),
    (LONG, ["neural", "keyphrase", "generation", "with", "deep", "graph", "models", "for",
            "scientific", "document", "retrieval", "and", "text", "summarization", "in",
            "the", "biomedical", "domain"]),
    # Not a vocabulary word: greedy longest-match falls back to letters.
    ("KPE models", ["k", "##p", "##e", "models"]),
    # Accent stripped by BertNormalizer (lowercase=true, strip_accents=null).
    ("Caf\u00e9 ranking", ["c", "##a", "##f", "##e", "ranking"]),
]
LONG_INDEX = 6

# (candidate index, reference index); the truncated input is left out because
# bert_score truncates at the tokenizer's model_max_length, not max_seq_length.
BERTSCORE_PAIRS = [(0, 5), (5, 0), (1, 2), (2, 1), (7, 0), (3, 8), (8, 2), (4, 0), (0, 4)]
# Chosen so document frequencies differ (keyphrase, learning and ##e occur twice; some
# candidate tokens occur in no reference and get the default ln(N+1)): idf then changes
# the scores of every pair except where both sides weigh their tokens uniformly.
IDF_REFS = [1, 2, 3, 5, 8]
BERTSCORE_LAYERS = [1, 2]
# bert_score rescale baseline, its format: header then one row per layer 0..L.
BASELINE_TSV = "LAYER,P,R,F\n0,0.25,0.26,0.255\n1,0.31,0.3125,0.305\n2,0.4,0.375,0.3875\n"

# ---------------------------------------------------------------------------
# Independent check of the hand tokenizations (BertNormalizer + BertPreTokenizer +
# WordPiece, as the tokenizers library defines them, reduced to what the inputs use).


def _wordpiece_check(text, vocab, unk):
    text = "".join(" " if ch.isspace() else ch for ch in text
                   if ch.isspace() or unicodedata.category(ch) not in ("Cc", "Cf"))
    text = text.lower()
    text = "".join(ch for ch in unicodedata.normalize("NFD", text) if unicodedata.category(ch) != "Mn")
    words = []
    for chunk in text.split():
        cur = ""
        for ch in chunk:
            if unicodedata.category(ch).startswith("P") or (ch.isascii() and not ch.isalnum()):
                if cur:
                    words.append(cur)
                words.append(ch)
                cur = ""
            else:
                cur += ch
        if cur:
            words.append(cur)
    out = []
    for word in words:
        pieces, start, bad = [], 0, False
        while start < len(word):
            end = len(word)
            while end > start:
                sub = word[start:end] if start == 0 else "##" + word[start:end]
                if sub in vocab:
                    break
                end -= 1
            if end == start:
                bad = True
                break
            pieces.append(sub)
            start = end
        out.extend([unk] if bad else pieces)
    return out


# ---------------------------------------------------------------------------
# Model definitions.

BERT_CONFIG = {
    "architectures": ["BertModel"],
    "attention_probs_dropout_prob": 0.1,
    "classifier_dropout": None,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 32,
    "initializer_range": 0.02,
    "intermediate_size": 64,
    "layer_norm_eps": 1e-12,
    "max_position_embeddings": 24,
    "model_type": "bert",
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "pad_token_id": 0,
    "position_embedding_type": "absolute",
    "torch_dtype": "float32",
    "transformers_version": "4.41.2",
    "type_vocab_size": 2,
    "use_cache": True,
    "vocab_size": len(BERT_VOCAB),
}

MPNET_CONFIG = {
    "architectures": ["MPNetModel"],
    "attention_probs_dropout_prob": 0.1,
    "bos_token_id": 0,
    "eos_token_id": 2,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 32,
    "initializer_range": 0.02,
    "intermediate_size": 64,
    "layer_norm_eps": 1e-05,
    "max_position_embeddings": 22,
    "model_type": "mpnet",
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "pad_token_id": 1,
    "relative_attention_num_buckets": 32,
    "torch_dtype": "float32",
    "transformers_version": "4.41.2",
    "vocab_size": len(MPNET_VOCAB),
}


def weight_shapes(cfg):
    """HF tensor names (as BertModel/MPNetModel.save_pretrained write them) -> shape, kind."""
    h, f, L = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    s = {
        "embeddings.word_embeddings.weight": ((cfg["vocab_size"], h), "emb"),
        "embeddings.position_embeddings.weight": ((cfg["max_position_embeddings"], h), "emb"),
        "embeddings.LayerNorm.weight": ((h,), "ln_w"),
        "embeddings.LayerNorm.bias": ((h,), "ln_b"),
        "pooler.dense.weight": ((h, h), "w"),
        "pooler.dense.bias": ((h,), "b"),
    }
    if cfg["model_type"] == "bert":
        s["embeddings.token_type_embeddings.weight"] = ((cfg["type_vocab_size"], h), "emb")
        attn = {"attention.self.query": h, "attention.self.key": h, "attention.self.value": h,
                "attention.output.dense": h}
        ln1 = "attention.output.LayerNorm"
    else:
        s["encoder.relative_attention_bias.weight"] = (
            (cfg["relative_attention_num_buckets"], cfg["num_attention_heads"]), "rel")
        attn = {"attention.attn.q": h, "attention.attn.k": h, "attention.attn.v": h,
                "attention.attn.o": h}
        ln1 = "attention.LayerNorm"
    for i in range(L):
        p = f"encoder.layer.{i}."
        for name in attn:
            s[p + name + ".weight"] = ((h, h), "w")
            s[p + name + ".bias"] = ((h,), "b")
        s[p + ln1 + ".weight"] = ((h,), "ln_w")
        s[p + ln1 + ".bias"] = ((h,), "ln_b")
        s[p + "intermediate.dense.weight"] = ((f, h), "w")
        s[p + "intermediate.dense.bias"] = ((f,), "b")
        s[p + "output.dense.weight"] = ((h, f), "w_out")
        s[p + "output.dense.bias"] = ((h,), "b")
        s[p + "output.LayerNorm.weight"] = ((h,), "ln_w")
        s[p + "output.LayerNorm.bias"] = ((h,), "ln_b")
    return s


# Tiny fixtures use large weights on purpose: peaked attention and a strong relative
# position bias make masking, position and bucket mistakes visible in the outputs.
TINY_STD = {"emb": 0.5, "w": 0.2, "w_out": 0.15, "b": 0.1, "ln_w": 0.1, "ln_b": 0.1, "rel": 1.0}
# Base-size benchmark weights: HF's init (N(0, 0.02)), LayerNorm 1/0 plus small noise.
BASE_STD = {"emb": 0.02, "w": 0.02, "w_out": 0.02, "b": 0.02, "ln_w": 0.02, "ln_b": 0.02,
            "rel": 0.02}


def random_weights(cfg, seed, std):
    rng = np.random.default_rng(seed)
    out = {}
    for name, (shape, kind) in sorted(weight_shapes(cfg).items()):
        x = rng.standard_normal(shape, dtype=np.float32) * np.float32(std[kind])
        if kind == "ln_w":
            x += np.float32(1.0)
        out[name] = x.astype(np.float32)
    return out


# ---------------------------------------------------------------------------
# Independent cross-check: the same networks written as explicit matmuls from the
# transformers definitions (no nn modules), float64.

def _ln(x, w, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


def explicit_forward(cfg, w, ids):
    t = {k: torch.from_numpy(np.array(v)).double() for k, v in w.items()}
    heads, h = cfg["num_attention_heads"], cfg["hidden_size"]
    d = h // heads
    eps = cfg["layer_norm_eps"]
    n = len(ids)
    ids_t = torch.tensor(ids)
    lin = lambda x, p: x @ t[p + ".weight"].T + t[p + ".bias"]
    if cfg["model_type"] == "bert":
        x = (t["embeddings.word_embeddings.weight"][ids_t]
             + t["embeddings.position_embeddings.weight"][:n]
             + t["embeddings.token_type_embeddings.weight"][0])
        names = ("attention.self.query", "attention.self.key", "attention.self.value",
                 "attention.output.dense", "attention.output.LayerNorm")
        bias = torch.zeros(heads, n, n)
    else:
        x = (t["embeddings.word_embeddings.weight"][ids_t]
             + t["embeddings.position_embeddings.weight"][torch.arange(n) + 2])
        names = ("attention.attn.q", "attention.attn.k", "attention.attn.v",
                 "attention.attn.o", "attention.LayerNorm")
        rel = torch.arange(n)[None, :] - torch.arange(n)[:, None]
        bucket = ref.relative_position_bucket(rel)
        bias = t["encoder.relative_attention_bias.weight"][bucket].permute(2, 0, 1)
    x = _ln(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"], eps)
    hidden = [x]
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q, k, v, o, ln1 = (p + s for s in names)
        split = lambda y: y.view(n, heads, d).transpose(0, 1)
        scores = split(lin(x, q)) @ split(lin(x, k)).transpose(1, 2) / math.sqrt(d) + bias
        ctx = (torch.softmax(scores, -1) @ split(lin(x, v))).transpose(0, 1).reshape(n, h)
        a = _ln(lin(ctx, o) + x, t[ln1 + ".weight"], t[ln1 + ".bias"], eps)
        inter = lin(a, p + "intermediate.dense")
        inter = 0.5 * inter * (1.0 + torch.erf(inter / math.sqrt(2.0)))
        x = _ln(lin(inter, p + "output.dense") + a, t[p + "output.LayerNorm.weight"],
                t[p + "output.LayerNorm.bias"], eps)
        hidden.append(x)
    return hidden


# ---------------------------------------------------------------------------
# Tokenizer / sentence-transformers files.

def _added(i, content, lstrip=False):
    return {"id": i, "content": content, "single_word": False, "lstrip": lstrip,
            "rstrip": False, "normalized": False, "special": True}


NORMALIZER = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
              "strip_accents": None, "lowercase": True}


def _wordpiece(vocab, unk):
    return {"type": "WordPiece", "unk_token": unk, "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": vocab}


def bert_template(cls_tok, sep_tok, cls_id, sep_id):
    return {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": cls_tok, "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": sep_tok, "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": cls_tok, "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": sep_tok, "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": sep_tok, "type_id": 1}}],
        "special_tokens": {
            cls_tok: {"id": cls_tok, "ids": [cls_id], "tokens": [cls_tok]},
            sep_tok: {"id": sep_tok, "ids": [sep_id], "tokens": [sep_tok]},
        },
    }


def bert_tokenizer_json(vocab):
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [_added(vocab[t], t) for t in BERT_SPECIALS],
        "normalizer": NORMALIZER,
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": bert_template("[CLS]", "[SEP]", vocab["[CLS]"], vocab["[SEP]"]),
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": _wordpiece(vocab, "[UNK]"),
    }


def mpnet_tokenizer_json(vocab):
    added = [_added(vocab[t], t) for t in ("<s>", "<pad>", "</s>", "<unk>", "[UNK]")]
    added.append(_added(vocab["<mask>"], "<mask>", lstrip=True))
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": added,
        "normalizer": NORMALIZER,
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", vocab["</s>"]],
                           "cls": ["<s>", vocab["<s>"]], "trim_offsets": True,
                           "add_prefix_space": False},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": _wordpiece(vocab, "[UNK]"),
    }


BERT_TOKENIZER_CONFIG = {
    "clean_up_tokenization_spaces": True, "cls_token": "[CLS]", "do_lower_case": True,
    "mask_token": "[MASK]", "model_max_length": 512, "pad_token": "[PAD]", "sep_token": "[SEP]",
    "strip_accents": None, "tokenize_chinese_chars": True, "tokenizer_class": "BertTokenizer",
    "unk_token": "[UNK]",
}
MPNET_TOKENIZER_CONFIG = {
    "bos_token": "<s>", "clean_up_tokenization_spaces": True, "cls_token": "<s>",
    "do_lower_case": True, "eos_token": "</s>", "mask_token": "<mask>", "model_max_length": 512,
    "pad_token": "<pad>", "sep_token": "</s>", "strip_accents": None,
    "tokenize_chinese_chars": True, "tokenizer_class": "MPNetTokenizer", "unk_token": "[UNK]",
}
ST_CONFIG = {
    "__version__": {"sentence_transformers": "3.0.1", "transformers": "4.41.2",
                    "pytorch": "2.3.1"},
    "prompts": {}, "default_prompt_name": None, "similarity_fn_name": None,
}


def modules_json(normalize):
    mods = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    if normalize:
        mods.append({"idx": 2, "name": "2", "path": "2_Normalize",
                     "type": "sentence_transformers.models.Normalize"})
    return mods


def pooling_config(dim, mode):
    return {
        "word_embedding_dimension": dim,
        "pooling_mode_cls_token": mode == "cls",
        "pooling_mode_mean_tokens": mode == "mean",
        "pooling_mode_max_tokens": mode == "max",
        "pooling_mode_mean_sqrt_len_tokens": False,
        "pooling_mode_weightedmean_tokens": False,
        "pooling_mode_lasttoken": False,
        "include_prompt": True,
    }


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")


def write_snapshot(out, cfg, weights, tokenizer, tokenizer_config, pooling, normalize,
                   max_seq_length):
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    write_json(os.path.join(out, "config.json"), cfg)
    ref.write_safetensors(os.path.join(out, "model.safetensors"), weights)
    write_json(os.path.join(out, "tokenizer.json"), tokenizer)
    write_json(os.path.join(out, "tokenizer_config.json"), tokenizer_config)
    write_json(os.path.join(out, "modules.json"), modules_json(normalize))
    write_json(os.path.join(out, "1_Pooling", "config.json"),
               pooling_config(cfg["hidden_size"], pooling))
    write_json(os.path.join(out, "sentence_bert_config.json"),
               {"max_seq_length": max_seq_length, "do_lower_case": False})
    write_json(os.path.join(out, "config_sentence_transformers.json"), ST_CONFIG)


def write_hub_cache(snapshot_dir, hub_root, repo_id):
    """Lays a snapshot out as huggingface_hub's cache does: blobs named by etag (the
    sha256 for LFS files such as *.safetensors, the git blob sha1 for small text files),
    snapshots/<commit>/ holding relative symlinks into ../../blobs, refs/main = commit
    without a trailing newline."""
    root = os.path.join(hub_root, "models--" + repo_id.replace("/", "--"))
    if os.path.exists(root):
        shutil.rmtree(root)
    files = []
    for dirpath, _, names in os.walk(snapshot_dir):
        for name in names:
            full = os.path.join(dirpath, name)
            files.append(os.path.relpath(full, snapshot_dir))
    files.sort()
    listing = hashlib.sha1()
    etags = {}
    for rel in files:
        with open(os.path.join(snapshot_dir, rel), "rb") as f:
            data = f.read()
        if rel.endswith(".safetensors"):
            etag = hashlib.sha256(data).hexdigest()
        else:
            etag = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        etags[rel] = etag
        listing.update(f"{rel} {etag}\n".encode())
        os.makedirs(os.path.join(root, "blobs"), exist_ok=True)
        with open(os.path.join(root, "blobs", etag), "wb") as f:
            f.write(data)
    commit = listing.hexdigest()  # deterministic stand-in for the repo's commit sha
    snap = os.path.join(root, "snapshots", commit)
    for rel in files:
        link = os.path.join(snap, rel)
        os.makedirs(os.path.dirname(link), exist_ok=True)
        depth = rel.count("/") + 2
        os.symlink("/".join([".."] * depth + ["blobs", etags[rel]]), link)
    os.makedirs(os.path.join(root, "refs"))
    with open(os.path.join(root, "refs", "main"), "w") as f:
        f.write(commit)
    return os.path.relpath(root, HERE), commit


# ---------------------------------------------------------------------------
# Expected values.

def bertscore(c_vecs, r_vecs, c_w, r_w):
    """Greedy cosine matching as bert_score's greedy_cos_idf defines it, for one
    (candidate, reference) pair computed on its own (no batch padding)."""
    c = c_vecs / c_vecs.norm(dim=-1, keepdim=True)
    r = r_vecs / r_vecs.norm(dim=-1, keepdim=True)
    sim = c @ r.T
    c_w = c_w / c_w.sum()
    r_w = r_w / r_w.sum()
    p = float((sim.max(1).values * c_w).sum())
    rr = float((sim.max(0).values * r_w).sum())
    f = 2 * p * rr / (p + rr)
    if math.isnan(f):
        f = 0.0
    return p, rr, f


def read_baseline(text):
    rows = text.strip().split("\n")
    assert rows[0] == "LAYER,P,R,F"
    out = {}
    for row in rows[1:]:
        layer, p, r, f = row.split(",")
        out[int(layer)] = (float(p), float(r), float(f))
    return out


def model_expected(name, cfg, weights, vocab, cls_tok, sep_tok, max_seq, pooling, normalize):
    ids_list, inputs = [], []
    for idx, (text, tokens) in enumerate(INPUTS):
        check = _wordpiece_check(text, vocab, "[UNK]")
        assert check == tokens, f"{name} input {idx}: hand tokens {tokens} != WordPiece {check}"
        truncated = len(tokens) > max_seq - 2
        toks = [cls_tok] + tokens[:max_seq - 2] + [sep_tok]
        assert truncated == (idx == LONG_INDEX)
        ids_list.append([vocab[t] for t in toks])
        inputs.append({"text": text, "tokens": toks, "ids": ids_list[-1], "truncated": truncated})

    model = (ref.BertReference if cfg["model_type"] == "bert" else ref.MPNetReference)(
        cfg, weights).double()
    pad_id = cfg["pad_token_id"]
    alone = []
    with torch.inference_mode():
        for idx, ids in enumerate(ids_list):
            t = torch.tensor([ids])
            hidden = [hs[0] for hs in model(t, torch.ones_like(t, dtype=torch.bool))]
            explicit = explicit_forward(cfg, weights, ids)
            for layer, (a, b) in enumerate(zip(hidden, explicit)):
                err = float((a - b).abs().max())
                assert err < 1e-12, f"{name} input {idx} layer {layer}: nn vs explicit {err}"
            alone.append(hidden)
        # The same inputs as one right-padded batch must give the same real-token values.
        n = max(len(ids) for ids in ids_list)
        batch = torch.full((len(ids_list), n), pad_id)
        mask = torch.zeros(len(ids_list), n, dtype=torch.bool)
        for i, ids in enumerate(ids_list):
            batch[i, :len(ids)] = torch.tensor(ids)
            mask[i, :len(ids)] = True
        padded = model(batch, mask)
        for i, ids in enumerate(ids_list):
            for layer in range(len(padded)):
                err = float((padded[layer][i, :len(ids)] - alone[i][layer]).abs().max())
                assert err < 1e-10, f"{name} input {i} layer {layer}: padded vs alone {err}"

    for i, rec in enumerate(inputs):
        hidden = alone[i]
        last = hidden[-1].unsqueeze(0)
        m = torch.ones(1, last.shape[1], dtype=torch.bool)
        rec["hidden"] = [h.tolist() for h in hidden]
        rec["pooled"] = {mode: ref.pool(last, m, mode)[0].tolist()
                         for mode in ("mean", "cls", "max")}
        sent = ref.pool(last, m, pooling)
        if normalize:
            sent = ref.l2_normalize(sent)
        rec["sentence"] = sent[0].tolist()

    # bert_score idf: df over the reference list, each reference's ids as a set.
    n_refs = len(IDF_REFS)
    df = {}
    for r in IDF_REFS:
        for tid in set(ids_list[r]):
            df[tid] = df.get(tid, 0) + 1
    idf = {tid: math.log((n_refs + 1) / (c + 1)) for tid, c in df.items()}
    idf_default = math.log(n_refs + 1)
    cls_id, sep_id = vocab[cls_tok], vocab[sep_tok]
    baseline = read_baseline(BASELINE_TSV)
    scores = []
    for cand, refi in BERTSCORE_PAIRS:
        for layer in BERTSCORE_LAYERS:
            for use_idf in (False, True):
                cids, rids = ids_list[cand], ids_list[refi]
                if use_idf:
                    wt = lambda ids: torch.tensor([idf.get(t, idf_default) for t in ids])
                else:
                    wt = lambda ids: torch.tensor(
                        [0.0 if t in (cls_id, sep_id) else 1.0 for t in ids])
                empty = len(cids) == 2 or len(rids) == 2
                if empty:
                    p = r = f = 0.0
                else:
                    cw, rw = wt(cids), wt(rids)
                    assert cw.sum() > 0 and rw.sum() > 0
                    p, r, f = bertscore(alone[cand][layer], alone[refi][layer], cw, rw)
                bp, br, bf = baseline[layer]
                scores.append({
                    "cand": cand, "ref": refi, "layer": layer, "idf": use_idf,
                    "P": p, "R": r, "F": f,
                    "P_rescaled": (p - bp) / (1 - bp), "R_rescaled": (r - br) / (1 - br),
                    "F_rescaled": (f - bf) / (1 - bf),
                })
    out = {
        "dir": name,
        "num_layers": cfg["num_hidden_layers"],
        "hidden_size": cfg["hidden_size"],
        "max_seq_length": max_seq,
        "pooling": pooling,
        "normalize": normalize,
        "cls_id": cls_id,
        "sep_id": sep_id,
        "pad_id": pad_id,
        "inputs": inputs,
        "bertscore_baseline": "baseline.tsv",
        "idf_refs": IDF_REFS,
        "idf": [[tid, idf[tid]] for tid in sorted(idf)],
        "idf_default": idf_default,
        "bertscore": scores,
    }
    return out


# Hand-derived buckets (num_buckets 32 -> 16 per direction, max_exact 8, max_distance
# 128; n = -(memory - context) = context - memory; keys after the query (n < 0) get +16):
#   rel   0 -> n 0 -> 0            rel  -1 -> n 1 -> 1        rel -7 -> 7
#   rel  +1 -> n -1 -> 16 + 1 = 17  rel  +7 -> 23
#   rel  -8 -> 8 + int(log(8/8)/log(16)*8) = 8 + 0 = 8
#   rel -11 -> 8 + int(log(1.375)/log(16)*8) = 8 + int(0.918) = 8
#   rel -12 -> 8 + int(log(1.5)/log(16)*8)   = 8 + int(1.170) = 9
#   rel -90 -> 8 + int(log(11.25)/log(16)*8) = 8 + int(6.984) = 14
#   rel -127-> 8 + int(log(15.875)/log(16)*8) = 8 + int(7.977) = 15
#   rel -128 and beyond -> min(8 + 8, 15) = 15;  rel +128 -> 16 + 15 = 31
#   rel -16 -> 8 + int(log(2)/log(16)*8) = 8 + int(2) = 10, -32 -> 12, -64 -> 14,
#   rel +16 -> 16 + 10 = 26, +32 -> 28, +64 -> 30
# At these exact powers of two the real quotient is an integer (2, 4, 6) so float32
# rounding could truncate it to one less; torch 1.13's float32 gives the real values.
HAND_BUCKETS = {0: 0, -1: 1, -7: 7, 1: 17, 7: 23, -8: 8, -11: 8, -12: 9, -16: 10, -32: 12,
                -64: 14, 16: 26, 32: 28, 64: 30, -90: 14, -127: 15, -128: 15, -600: 15,
                128: 31, 600: 31}


def buckets_expected():
    rel = torch.arange(-600, 601)
    b = ref.relative_position_bucket(rel).tolist()
    for r, want in HAND_BUCKETS.items():
        assert b[r + 600] == want, f"bucket({r}) = {b[r + 600]}, hand value {want}"
    return {"from": -600, "to": 600, "values": b}


# ---------------------------------------------------------------------------
# Output formatting: readable nesting, each numeric vector on one line.

def _dump(obj, indent=0):
    pad = " " * indent
    if isinstance(obj, dict):
        items = [f'{pad}  {json.dumps(k)}: {_dump(v, indent + 2).lstrip()}' for k, v in obj.items()]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list):
        if all(isinstance(x, (int, float, str, bool)) or x is None for x in obj):
            return pad + json.dumps(obj, ensure_ascii=False)
        return pad + "[\n" + ",\n".join(_dump(x, indent + 2) for x in obj) + "\n" + pad + "]"
    if isinstance(obj, float):
        assert math.isfinite(obj)
    return pad + json.dumps(obj, ensure_ascii=False)


def generate_tiny():
    bert_w = random_weights(BERT_CONFIG, 20261126, TINY_STD)
    mpnet_w = random_weights(MPNET_CONFIG, 20261127, TINY_STD)
    bert_dir = os.path.join(HERE, "bert-tiny")
    mpnet_dir = os.path.join(HERE, "mpnet-tiny")
    write_snapshot(bert_dir, BERT_CONFIG, bert_w, bert_tokenizer_json(BERT_VOCAB),
                   BERT_TOKENIZER_CONFIG, "cls", False, 12)
    write_snapshot(mpnet_dir, MPNET_CONFIG, mpnet_w, mpnet_tokenizer_json(MPNET_VOCAB),
                   MPNET_TOKENIZER_CONFIG, "mean", True, 16)
    # Weights are read back from the written file, so expected values are those of the
    # committed bytes.
    bert_w = ref.read_safetensors(os.path.join(bert_dir, "model.safetensors"))
    mpnet_w = ref.read_safetensors(os.path.join(mpnet_dir, "model.safetensors"))
    hub_dir, commit = write_hub_cache(mpnet_dir, os.path.join(HERE, "hub"), "kplab-test/mpnet-tiny")
    with open(os.path.join(HERE, "baseline.tsv"), "w") as f:
        f.write(BASELINE_TSV)
    mpnet = model_expected("mpnet-tiny", MPNET_CONFIG, mpnet_w, MPNET_VOCAB, "<s>", "</s>", 16,
                           "mean", True)
    mpnet["buckets"] = buckets_expected()
    mpnet["hub"] = {"dir": hub_dir, "repo_id": "kplab-test/mpnet-tiny", "commit": commit}
    expected = {
        "generator": "tests/data/transformer/gen_fixtures.py",
        "models": {
            "bert-tiny": model_expected("bert-tiny", BERT_CONFIG, bert_w, BERT_VOCAB, "[CLS]",
                                        "[SEP]", 12, "cls", False),
            "mpnet-tiny": mpnet,
        },
    }
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        f.write(_dump(expected) + "\n")


# ---------------------------------------------------------------------------
# Benchmark mode.

def generate_base(out, arch, vocab_from):
    with open(vocab_from) as f:
        tok = json.load(f)
    if tok.get("model", {}).get("type") != "WordPiece":
        sys.exit(f"{vocab_from}: expected a WordPiece tokenizer.json (model.type), "
                 f"got {tok.get('model', {}).get('type')!r}")
    vocab = tok["model"]["vocab"]
    for needed in ("[CLS]", "[SEP]", "[PAD]", "[UNK]"):
        if needed not in vocab:
            sys.exit(f"{vocab_from}: vocabulary has no {needed}")
    if arch == "bert":
        cfg = dict(BERT_CONFIG, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                   intermediate_size=3072, max_position_embeddings=512, layer_norm_eps=1e-12,
                   vocab_size=len(vocab), pad_token_id=vocab["[PAD]"])
        tokenizer = copy.deepcopy(tok)
        # e.g. the model2vec fixture says [CLS]=101/[SEP]=102 while its vocab has 2/3.
        tokenizer["post_processor"] = bert_template("[CLS]", "[SEP]", vocab["[CLS]"],
                                                    vocab["[SEP]"])
        tokenizer["truncation"] = None
        tokenizer["padding"] = None
        tok_cfg, pooling, normalize, max_seq = BERT_TOKENIZER_CONFIG, "mean", False, 512
    elif arch == "mpnet":
        body = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
        new_vocab = {t: i for i, t in enumerate(["<s>", "<pad>", "</s>", "<unk>"] + body
                                                + ["<mask>"])}
        cfg = dict(MPNET_CONFIG, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                   intermediate_size=3072, max_position_embeddings=514,
                   vocab_size=len(new_vocab))
        tokenizer = mpnet_tokenizer_json(new_vocab)
        tok_cfg, pooling, normalize, max_seq = MPNET_TOKENIZER_CONFIG, "mean", True, 512
    else:
        sys.exit(f"--arch must be bert or mpnet, got {arch!r}")
    weights = random_weights(cfg, 7, BASE_STD)
    write_snapshot(out, cfg, weights, tokenizer, tok_cfg, pooling, normalize, max_seq)
    print(f"wrote {out} ({arch}, vocab {cfg['vocab_size']})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", metavar="OUT_DIR", help="write a base-size random snapshot")
    ap.add_argument("--arch", choices=("bert", "mpnet"))
    ap.add_argument("--vocab-from", metavar="TOKENIZER_JSON")
    args = ap.parse_args()
    if args.base:
        if not args.arch or not args.vocab_from:
            ap.error("--base needs --arch and --vocab-from")
        generate_base(args.base, args.arch, args.vocab_from)
    else:
        generate_tiny()


if __name__ == "__main__":
    main()
