#!/usr/bin/python3
"""Writes the golden files of kplab's Porter stemmer (tests/data/porter/*.tsv.gz).

Run with Debian's /usr/bin/python3 and python3-nltk 3.8:

    /usr/bin/python3 scripts/gen_porter_golden.py [SHARED_DATA]   # default: ../shared/data

Word sets (each word appears in one file only, the first that has it):
- dict.tsv.gz: every line of /usr/share/dict/american-english-huge (wamerican-huge).
- shared_data.tsv.gz: every distinct token of the benchmark data under SHARED_DATA. Files read:
  *.txt, *.final, *.key, *.abstr, *.contr, *.uncontr (whole text), *.jsonl and *.json (every JSON
  string value, recursively). Tokens of a text = its str.split() tokens, plus the str.split()
  tokens of its pieces after splitting on ';', ',' and '+' (keyphrase-list separators).
- synthetic.tsv.gz: words built to reach every rule and mode difference: random stems followed by
  chains of the stemmer's suffixes (fixed seed), case variants, short words, the irregular forms,
  nltk's literal "*d" rule, and non-ASCII letters whose lower() changes length or is contextual.

Each file is sorted (by code point) UTF-8 TSV, one word a line, written with gzip -9 and a zero
mtime so that reruns are byte-identical:

    word  TAB  nltk  TAB  original  TAB  martin

where each stem is stored relative to the word to keep the files small: "D:REST" means take the
word with only A-Z mapped to a-z, drop its last D bytes (UTF-8) and append REST; a stem equal to the nltk one (the original and
martin columns) is written "=".
"""

import glob
import gzip
import json
import os
import random
import re
import sys

from nltk.stem.porter import PorterStemmer

DICT = "/usr/share/dict/american-english-huge"
TEXT_SUFFIXES = (".txt", ".final", ".key", ".abstr", ".contr", ".uncontr")

STEMMERS = [
    PorterStemmer(PorterStemmer.NLTK_EXTENSIONS),
    PorterStemmer(PorterStemmer.ORIGINAL_ALGORITHM),
    PorterStemmer(PorterStemmer.MARTIN_EXTENSIONS),
]


def text_tokens(text, out):
    out.update(text.split())
    for piece in re.split(r"[;,+]", text):
        out.update(piece.split())


def json_strings(value, out):
    if isinstance(value, str):
        text_tokens(value, out)
    elif isinstance(value, list):
        for v in value:
            json_strings(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            json_strings(v, out)


def shared_tokens(shared):
    tokens = set()
    for path in sorted(glob.glob(os.path.join(shared, "**", "*"), recursive=True)):
        if not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            raw = f.read()
        if path.endswith(TEXT_SUFFIXES):
            text_tokens(raw.decode("utf-8"), tokens)
        elif path.endswith(".jsonl"):
            for line in raw.decode("utf-8").split("\n"):
                if line.strip():
                    json_strings(json.loads(line), tokens)
        elif path.endswith(".json"):
            json_strings(json.loads(raw.decode("utf-8")), tokens)
    return tokens


def synthetic_words():
    rng = random.Random(20240601)
    stems = [
        "hop", "tann", "fall", "hiss", "fizz", "fail", "fil", "conflat", "troubl", "siz", "rat",
        "relat", "condit", "valen", "hesit", "digit", "conform", "radic", "differ", "vil",
        "analog", "vietnam", "predic", "oper", "feud", "decis", "hope", "call", "form", "sensi",
        "electr", "good", "reviv", "allow", "infer", "airlin", "gyroscop", "adjust", "defens",
        "irrit", "replac", "depend", "adopt", "homolog", "commun", "activ", "angular", "effect",
        "bowdler", "prob", "ceas", "control", "roll", "sky", "di", "ly", "ty", "sp", "fl", "tr",
        "enjo", "happ", "ow", "ag", "fe", "bl", "s", "y", "yy", "ey", "syzyg", "to", "geo",
        "theo", "archaeo", "philo", "x", "ax", "ow", "aw", "ay", "oo", "ee", "ca", "a*", "b*",
        "ab*", "caf\u00e9", "na\u00efv", "\u00e9t\u00e9", "stra\u00df", "\u0130st", "\u03bf\u03b4",
        "k\u00f8b", "ma\u00f1an", "\u00c6r\u00f8", "d\u00e9", "a1", "12", "x-r", "o'", "re'",
    ]
    suffixes = [
        "s", "es", "ies", "sses", "ss", "ied", "ed", "eed", "ing", "y", "ational", "tional",
        "enci", "anci", "izer", "abli", "bli", "alli", "entli", "eli", "ousli", "ization",
        "ation", "ator", "alism", "iveness", "fulness", "ousness", "aliti", "iviti", "biliti",
        "fulli", "logi", "icate", "ative", "alize", "iciti", "ical", "ful", "ness", "al", "ance",
        "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "sion", "tion",
        "ou", "ism", "ate", "iti", "ous", "ive", "ize", "e", "ll", "at", "bl", "iz", "d", "*d",
        "ly", "li", "ally", "ful", "logy", "ies",
    ]
    words = set()
    for stem in stems:
        words.add(stem)
        for s1 in suffixes:
            words.add(stem + s1)
            for s2 in suffixes:
                if rng.random() < 0.25:
                    words.add(stem + s1 + s2)
    for _ in range(20000):
        w = rng.choice(stems) + "".join(rng.choice(suffixes) for _ in range(rng.randint(1, 3)))
        words.add(w)
    # Case variants: nltk looks up the irregular forms and the length rule on the word as given.
    for w in sorted(words):
        r = rng.random()
        if r < 0.05:
            words.add(w.upper())
        elif r < 0.1:
            words.add(w.capitalize())
    pool = ["sky", "skies", "dying", "lying", "tying", "news", "innings", "inning", "outings",
            "outing", "cannings", "canning", "howe", "proceed", "exceed", "succeed"]
    for w in pool:
        words.update([w, w.upper(), w.capitalize(), w + "s", w + "ly"])
    # Every string of length <= 3 over letters that exercise the consonant/vowel rules.
    alphabet = "aeiouyslzdtwx*"
    short = [""]
    for _ in range(3):
        short = [s + c for s in short for c in alphabet]
        words.update(short)
    words.update(c + "ies" for c in alphabet)
    words.update(c + "ied" for c in alphabet)
    # Non-ASCII whose lower() is longer (U+0130), contextual (final sigma) or outside a-z.
    words.update([
        "\u0130", "\u0130s", "\u0130S", "\u0130ng", "\u0130es", "\u0130NG", "SK\u0130ES",
        "\u03a3", "\u039f\u03a3", "\u039f\u0394\u039f\u03a3", "\u03a3\u0391\u03a3\u03a3",
        "\u039f\u03a3S", "\u1e9e", "\u212a", "\u212aies", "CAF\u00c9S", "na\u00efvely",
        "\u00c9T\u00c9S", "stra\u00dfe", "STRA\u1e9eE", "\u01c4", "\u01c5ing",
        "\u1f88", "\u1f88s", "\u0149", "\u0149s", "\u00df", "\u00dfes",
    ])
    words.discard("")
    return words


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def encode(word, stem):
    word = word.translate(_ASCII_LOWER)
    k = 0
    while k < len(word) and k < len(stem) and word[k] == stem[k]:
        k += 1
    return "%d:%s" % (len(word[k:].encode("utf-8")), stem[k:])


def write(path, words):
    lines = []
    for w in sorted(words):
        nltk, orig, martin = (s.stem(w) for s in STEMMERS)
        lines.append(
            "%s\t%s\t%s\t%s\n"
            % (
                w,
                encode(w, nltk),
                "=" if orig == nltk else encode(w, orig),
                "=" if martin == nltk else encode(w, martin),
            )
        )
    data = "".join(lines).encode("utf-8")
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as f:
            f.write(data)
    print("%s: %d words, %d bytes" % (path, len(words), os.path.getsize(path)))


def main(argv):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    shared = argv[1] if len(argv) > 1 else os.path.join(repo, "..", "shared", "data")
    out_dir = os.path.join(repo, "tests", "data", "porter")
    os.makedirs(out_dir, exist_ok=True)

    with open(DICT, "rb") as f:
        dict_words = {w for w in f.read().decode("utf-8").split("\n") if w}
    data_words = shared_tokens(shared) - dict_words
    synth = synthetic_words() - dict_words - data_words
    for words in (dict_words, data_words, synth):
        for w in words:
            assert "\t" not in w and "\n" not in w, repr(w)
    write(os.path.join(out_dir, "dict.tsv.gz"), dict_words)
    write(os.path.join(out_dir, "shared_data.tsv.gz"), data_words)
    write(os.path.join(out_dir, "synthetic.tsv.gz"), synth)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
