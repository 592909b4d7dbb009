#!/usr/bin/python3
"""Datasets and expected values for the end-to-end BERTScore tests (tests/host/bertscore_test.cc,
BertscoreTransformer.*), derived from the torch reference's expected.json
(tests/data/transformer/gen_fixtures.py): bert_score's P, R, F of (candidate, reference) pairs of its
input texts at layers 1 and 2, without and with idf (over the reference texts IDF_REFS), raw and
rescaled with tests/data/transformer/baseline.tsv.

Each pair becomes one document whose predictions are the candidate text split at ", " into keyphrases
and whose references are the reference text split likewise, so that bertscore.lua's ", ".join of the
keyphrases gives the text back (lower-cased by kplab's normalization, which the uncased tokenizers do
anyway). Sources are "z", so every keyphrase is absent.

  pairs/      every pair of expected.json, one document each (checked without idf)
  idfpairs/   the pairs whose references are exactly IDF_REFS, one document per reference text, so
              that the run's N reference strings are the reference's (checked with idf); the last
              document's reference (text 3) completes the set and its candidate (text 0) is not checked

transformer_expected.tsv: model, dataset, doc (1-based line), layer, idf, rescaled, P, R, F.
Run from anywhere: ./gen_transformer_cases.py (json only; no torch needed).
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "..", "transformer", "expected.json")


def keyphrases(text):
    return ";".join(text.split(", "))


def write_dataset(name, pairs, texts):
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name + "_context.txt"), "w") as f:
        f.write("".join("z\n" for _ in pairs))
    with open(os.path.join(d, name + "_allkeywords.txt"), "w") as f:
        f.write("".join(keyphrases(texts[r]) + "\n" for _, r in pairs))
    with open(os.path.join(d, "predictions.txt"), "w") as f:
        f.write("".join(keyphrases(texts[c]) + "\n" for c, _ in pairs))


def main():
    with open(EXPECTED) as f:
        expected = json.load(f)
    models = expected["models"]
    texts = [x["text"] for x in models["bert-tiny"]["inputs"]]
    for m in models.values():
        assert [x["text"] for x in m["inputs"]] == texts
        assert m["idf_refs"] == models["bert-tiny"]["idf_refs"]
    for t in texts:
        assert ";" not in t and "\n" not in t
    pairs = []
    for s in models["bert-tiny"]["bertscore"]:
        if (s["cand"], s["ref"]) not in pairs:
            pairs.append((s["cand"], s["ref"]))
    idf_refs = models["bert-tiny"]["idf_refs"]
    idf_pairs = []
    for r in idf_refs:
        c = next((c for c, rr in pairs if rr == r), None)
        idf_pairs.append((c if c is not None else 0, r))
    unchecked = [i for i, (c, r) in enumerate(idf_pairs) if (c, r) not in pairs]
    assert sorted(r for _, r in idf_pairs) == sorted(idf_refs)
    write_dataset("pairs", pairs, texts)
    write_dataset("idfpairs", idf_pairs, texts)

    rows = ["model\tdataset\tdoc\tlayer\tidf\trescaled\tP\tR\tF"]
    for name in sorted(models):
        for s in models[name]["bertscore"]:
            pair = (s["cand"], s["ref"])
            if s["idf"]:
                if pair not in idf_pairs or idf_pairs.index(pair) in unchecked:
                    continue
                dataset, doc = "idfpairs", idf_pairs.index(pair) + 1
            else:
                dataset, doc = "pairs", pairs.index(pair) + 1
            for rescaled in (False, True):
                sfx = "_rescaled" if rescaled else ""
                rows.append("\t".join([name, dataset, str(doc), str(s["layer"]), str(int(s["idf"])),
                                       str(int(rescaled))] +
                                      [repr(s[k + sfx]) for k in ("P", "R", "F")]))
    with open(os.path.join(HERE, "transformer_expected.tsv"), "w") as f:
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
