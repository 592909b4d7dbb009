"""PyTorch reference encoders for kplab's native transformer backend.

Shared by gen_fixtures.py (float64 expected values) and bench/transformer_torch.py
(float32 throughput). Needs Debian's python3-torch (run with /usr/bin/python3).

The networks are assembled from torch's own modules (nn.Embedding, nn.LayerNorm,
nn.TransformerEncoderLayer) and loaded with Hugging Face-named tensors, so they are
an implementation independent of both Hugging Face's modeling code and kplab's C++.
Architecture as defined by transformers' BertModel / MPNetModel (post-LN encoder
layers, exact erf GELU) and sentence-transformers' Pooling / Normalize modules.
"""

import json
import math
import os
import struct

import numpy as np
import torch
from torch import nn

# ---------------------------------------------------------------------------
# safetensors, written and read by hand (no safetensors package on Debian).
# Layout: u64 little-endian header length N, N bytes of JSON header (padded with
# spaces to a multiple of 8), then the raw little-endian tensor bytes.

_DTYPES = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "F16": np.dtype("<f2")}


def write_safetensors(path, tensors):
    """tensors: dict name -> np.ndarray (float32). Data laid out in sorted name order."""
    header = {"__metadata__": {"format": "pt"}}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        arr = np.ascontiguousarray(tensors[name], dtype="<f4")
        data = arr.tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt = _DTYPES[info["dtype"]]
        start, end = info["data_offsets"]
        arr = np.frombuffer(raw, dtype=dt, count=(end - start) // dt.itemsize,
                            offset=base + start)
        out[name] = arr.reshape(info["shape"]).astype(np.float32)
    return out


# ---------------------------------------------------------------------------
# MPNet relative position buckets.

def relative_position_bucket(relative_position, num_buckets=32, max_distance=128):
    """MPNet's (T5-style, bidirectional) bucket of relative_position = memory - context.

    Evaluated with the same torch float32 operations transformers uses, because the
    log-spaced buckets truncate a float32 quotient: at exact powers of two the result
    depends on float32 rounding, and the C++ must reproduce float32, not real numbers.
    """
    ret = 0
    n = -relative_position
    num_buckets //= 2
    ret = ret + (n < 0).to(torch.long) * num_buckets
    n = torch.abs(n)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    val_if_large = max_exact + (
        torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)).to(torch.long)
    val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
    return ret + torch.where(is_small, n, val_if_large)


# ---------------------------------------------------------------------------
# Encoders.

def _encoder_layer(cfg):
    return nn.TransformerEncoderLayer(
        d_model=cfg["hidden_size"], nhead=cfg["num_attention_heads"],
        dim_feedforward=cfg["intermediate_size"], dropout=0.0, activation="gelu",
        layer_norm_eps=cfg["layer_norm_eps"], batch_first=True, norm_first=False)


def _load_layer(layer, w, prefix, q, k, v, o, ln1):
    """Copies HF-named tensors into an nn.TransformerEncoderLayer (post-LN)."""
    t = lambda name: torch.from_numpy(np.array(w[prefix + name]))
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(torch.cat([t(q + ".weight"), t(k + ".weight"), t(v + ".weight")]))
        layer.self_attn.in_proj_bias.copy_(torch.cat([t(q + ".bias"), t(k + ".bias"), t(v + ".bias")]))
        layer.self_attn.out_proj.weight.copy_(t(o + ".weight"))
        layer.self_attn.out_proj.bias.copy_(t(o + ".bias"))
        layer.norm1.weight.copy_(t(ln1 + ".weight"))
        layer.norm1.bias.copy_(t(ln1 + ".bias"))
        layer.linear1.weight.copy_(t("intermediate.dense.weight"))
        layer.linear1.bias.copy_(t("intermediate.dense.bias"))
        layer.linear2.weight.copy_(t("output.dense.weight"))
        layer.linear2.bias.copy_(t("output.dense.bias"))
        layer.norm2.weight.copy_(t("output.LayerNorm.weight"))
        layer.norm2.bias.copy_(t("output.LayerNorm.bias"))


def _copy(param, arr):
    with torch.no_grad():
        param.copy_(torch.from_numpy(np.array(arr)))


class BertReference(nn.Module):
    """BertModel without the pooler: returns every hidden state (embeddings + each layer)."""

    def __init__(self, cfg, w):
        super().__init__()
        h = cfg["hidden_size"]
        eps = cfg["layer_norm_eps"]
        if cfg.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute position embeddings are modelled")
        self.word = nn.Embedding(cfg["vocab_size"], h)
        self.position = nn.Embedding(cfg["max_position_embeddings"], h)
        self.token_type = nn.Embedding(cfg["type_vocab_size"], h)
        self.ln = nn.LayerNorm(h, eps=eps)
        _copy(self.word.weight, w["embeddings.word_embeddings.weight"])
        _copy(self.position.weight, w["embeddings.position_embeddings.weight"])
        _copy(self.token_type.weight, w["embeddings.token_type_embeddings.weight"])
        _copy(self.ln.weight, w["embeddings.LayerNorm.weight"])
        _copy(self.ln.bias, w["embeddings.LayerNorm.bias"])
        self.layers = nn.ModuleList()
        for i in range(cfg["num_hidden_layers"]):
            layer = _encoder_layer(cfg)
            _load_layer(layer, w, f"encoder.layer.{i}.", "attention.self.query",
                        "attention.self.key", "attention.self.value",
                        "attention.output.dense", "attention.output.LayerNorm")
            self.layers.append(layer)
        self.eval()

    def forward(self, ids, mask):
        """ids: LongTensor [B, L] right-padded; mask: BoolTensor [B, L], True = real token."""
        n = ids.shape[1]
        pos = torch.arange(n).unsqueeze(0)
        x = self.word(ids) + self.position(pos) + self.token_type(torch.zeros_like(ids))
        x = self.ln(x)
        hidden = [x]
        pad = ~mask
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=pad)
            hidden.append(x)
        return hidden


class MPNetReference(nn.Module):
    """MPNetModel without the pooler: returns every hidden state (embeddings + each layer)."""

    PADDING_IDX = 1  # MPNetEmbeddings hard-codes padding_idx = 1 for position ids

    def __init__(self, cfg, w):
        super().__init__()
        h = cfg["hidden_size"]
        eps = cfg["layer_norm_eps"]
        self.heads = cfg["num_attention_heads"]
        self.word = nn.Embedding(cfg["vocab_size"], h)
        self.position = nn.Embedding(cfg["max_position_embeddings"], h)
        self.ln = nn.LayerNorm(h, eps=eps)
        self.rel_bias = nn.Embedding(cfg["relative_attention_num_buckets"], self.heads)
        _copy(self.word.weight, w["embeddings.word_embeddings.weight"])
        _copy(self.position.weight, w["embeddings.position_embeddings.weight"])
        _copy(self.ln.weight, w["embeddings.LayerNorm.weight"])
        _copy(self.ln.bias, w["embeddings.LayerNorm.bias"])
        _copy(self.rel_bias.weight, w["encoder.relative_attention_bias.weight"])
        self.layers = nn.ModuleList()
        for i in range(cfg["num_hidden_layers"]):
            layer = _encoder_layer(cfg)
            _load_layer(layer, w, f"encoder.layer.{i}.", "attention.attn.q",
                        "attention.attn.k", "attention.attn.v", "attention.attn.o",
                        "attention.LayerNorm")
            self.layers.append(layer)
        self.eval()

    def position_bias(self, n):
        """[heads, n, n] additive bias; transformers' compute_position_bias always uses
        num_buckets=32 (its default argument), whatever the config says."""
        ctx = torch.arange(n)[:, None]
        mem = torch.arange(n)[None, :]
        bucket = relative_position_bucket(mem - ctx, num_buckets=32)
        return self.rel_bias(bucket).permute(2, 0, 1)

    def forward(self, ids, mask):
        """ids: LongTensor [B, L] right-padded; mask: BoolTensor [B, L], True = real token."""
        b, n = ids.shape
        # RoBERTa-style position ids: padding_idx + 1 + i for real tokens, padding_idx for pads.
        m = mask.long()
        pos = torch.cumsum(m, dim=1) * m + self.PADDING_IDX
        x = self.ln(self.word(ids) + self.position(pos))
        hidden = [x]
        bias = self.position_bias(n).to(x.dtype)
        attn = bias.unsqueeze(0).expand(b, -1, -1, -1).clone()
        attn.masked_fill_((~mask)[:, None, None, :], float("-inf"))
        attn = attn.reshape(b * self.heads, n, n)
        for layer in self.layers:
            x = layer(x, src_mask=attn)
            hidden.append(x)
        return hidden


# ---------------------------------------------------------------------------
# sentence-transformers Pooling / Normalize.

def pool(tokens, mask, mode):
    """tokens [B, L, H], mask [B, L] bool. sentence-transformers' Pooling semantics:
    mean over attention-mask tokens (specials included), cls = first token,
    max over unmasked tokens."""
    m = mask.unsqueeze(-1).to(tokens.dtype)
    if mode == "mean":
        return (tokens * m).sum(1) / m.sum(1).clamp(min=1e-9)
    if mode == "cls":
        return tokens[:, 0]
    if mode == "max":
        return tokens.masked_fill(~mask.unsqueeze(-1), -1e9).max(1).values
    raise ValueError(f"unknown pooling mode {mode!r}")


def l2_normalize(x):
    return torch.nn.functional.normalize(x, p=2, dim=1)


def load_snapshot(path, dtype=torch.float32):
    """Reads a sentence-transformers snapshot dir: returns (model, pooling_mode, normalize)."""
    with open(os.path.join(path, "config.json")) as f:
        cfg = json.load(f)
    w = read_safetensors(os.path.join(path, "model.safetensors"))
    model_type = cfg["model_type"]
    if model_type == "bert":
        model = BertReference(cfg, w)
    elif model_type == "mpnet":
        model = MPNetReference(cfg, w)
    else:
        raise ValueError(f"{path}/config.json: model_type {model_type!r} is not bert or mpnet")
    model = model.to(dtype)
    pooling, normalize = "mean", False
    modules_path = os.path.join(path, "modules.json")
    if os.path.exists(modules_path):
        with open(modules_path) as f:
            modules = json.load(f)
        for mod in modules:
            kind = mod["type"].rsplit(".", 1)[-1]
            if kind == "Pooling":
                with open(os.path.join(path, mod["path"], "config.json")) as f:
                    pc = json.load(f)
                modes = [name for key, name in (("pooling_mode_cls_token", "cls"),
                                                 ("pooling_mode_mean_tokens", "mean"),
                                                 ("pooling_mode_max_tokens", "max"))
                         if pc.get(key)]
                if len(modes) != 1:
                    raise ValueError(f"{path}/{mod['path']}/config.json: expected exactly one "
                                     f"of cls/mean/max pooling, got {modes}")
                pooling = modes[0]
            elif kind == "Normalize":
                normalize = True
    return model, pooling, normalize
