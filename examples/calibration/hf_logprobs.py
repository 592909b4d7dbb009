#!/usr/bin/env python3
"""Write a kplab "tokens" predictions file (docs/calibration.md) from a Hugging Face encoder-decoder
keyphrase generator: the generated tokens and the log-probability the model gave each of them.

Not run by kplab's tests; needs torch and transformers (>= 4.26, for compute_transition_scores).

    python3 hf_logprobs.py --model bloomberg/KeyBART --subword bpe --sep ";" \
        --source ../../../shared/data/kpg_testsets_meng2017/inspec/word_inspec_testing_context.txt \
        --out keybart_inspec.jsonl
    kplab eval --dataset ../../../shared/data/kpg_testsets_meng2017/inspec \
        --predictions keybart_inspec.jsonl --metrics exact,calibration

The source file has one document a line (Meng-2017 `*_context.txt` or kg_one2set `test_src.txt`); line i
of the output belongs to line i of the source, and kplab aligns the two by order. (With ids on every
line kplab would align by id instead; see docs/formats.md.)
"""
import argparse
import json
import math

import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer


def delimiter_tokens(tokenizer, sep):
    """Every spelling of the delimiter the tokenizer can produce: alone and after a space."""
    toks = set(tokenizer.tokenize(sep)) | set(tokenizer.tokenize(" " + sep))
    # A marker alone ("▁" before ";" in T5) is not a delimiter: keep only tokens that contain it.
    return {t for t in toks if sep in t}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="a seq2seq checkpoint (T5, BART, ...)")
    ap.add_argument("--source", required=True, help="one document a line")
    ap.add_argument("--out", required=True, help="the tokens JSONL to write")
    ap.add_argument("--subword", required=True, choices=["none", "sentencepiece", "wordpiece", "bpe"],
                    help="sentencepiece for T5, bpe for BART")
    ap.add_argument("--sep", default=";", help="the keyphrase delimiter the model was trained with")
    ap.add_argument("--prefix", default="", help="text put before each source (e.g. a T5 task prefix)")
    ap.add_argument("--max-source-tokens", type=int, default=512)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=8)
    args = ap.parse_args()

    device = "cuda" if torch.cuda.is_available() else "cpu"
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForSeq2SeqLM.from_pretrained(args.model).to(device).eval()
    special = sorted(set(tokenizer.all_special_tokens) | delimiter_tokens(tokenizer, args.sep))

    with open(args.source, encoding="utf-8") as f:
        sources = [line.rstrip("\n") for line in f]
    with open(args.out, "w", encoding="utf-8") as out:
        for start in range(0, len(sources), args.batch_size):
            batch = [args.prefix + s.replace("<eos>", ".") for s in sources[start:start + args.batch_size]]
            enc = tokenizer(batch, return_tensors="pt", padding=True, truncation=True,
                            max_length=args.max_source_tokens).to(device)
            with torch.no_grad():
                # Greedy decoding, as the paper; output_scores keeps the (processed) logits of every step.
                gen = model.generate(**enc, max_new_tokens=args.max_new_tokens, num_beams=1, do_sample=False,
                                     output_scores=True, return_dict_in_generate=True)
                # log p(token_t | source, tokens_<t) of each generated token: log-softmax of each step's
                # scores, read at the chosen token. Shape (batch, generated steps).
                logprobs = model.compute_transition_scores(gen.sequences, gen.scores, normalize_logits=True)
            for i in range(len(batch)):
                ids = gen.sequences[i, 1:]  # [0] is the decoder start token, not generated
                tokens = tokenizer.convert_ids_to_tokens(ids.tolist())
                lps = [float(x) for x in logprobs[i]]
                # Positions after the end of a finished sequence are padding (a special token); their
                # score can be -inf, which the format rejects, and they belong to no keyphrase anyway.
                keep = [k for k, t in enumerate(tokens) if not (t == tokenizer.pad_token and not math.isfinite(lps[k]))]
                tokens = [tokens[k] for k in keep]
                lps = [min(lps[k], 0.0) for k in keep]  # float rounding can give +1e-7
                if any(not math.isfinite(x) for x in lps):
                    raise SystemExit(f"document {start + i + 1}: a generated token has probability 0")
                # "padding": the batch padding after a finished sequence is no part of it (left out of
                # the whole-sequence perplexity, seed 001 Eq. 1); it is in `special` already.
                out.write(json.dumps({"subword": args.subword, "special": special,
                                      "padding": [tokenizer.pad_token] if tokenizer.pad_token else [],
                                      "tokens": tokens, "logprobs": lps}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
