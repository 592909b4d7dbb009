#!/usr/bin/python3
"""Writes the golden files of kplab's WordTokenize (tests/data/text/).

Run with Debian's /usr/bin/python3 and python3-nltk 3.8:

    /usr/bin/python3 scripts/gen_text_golden.py [SHARED_DATA]   # default: ../shared/data

kplab's WordTokenize = split the text into sentences (after '.', '?' or '!' followed by whitespace;
each piece stripped, empty pieces dropped), then nltk's NLTKWordTokenizer().tokenize on each
sentence. `kplab_word_tokenize` below is that definition; the C++ must agree with it exactly.

Outputs (deterministic):
- word_tokenize_cases.tsv: hand-written tricky inputs and their tokens, written out in full.
  Fields are tab-separated, with \\\\, \\t, \\n and \\r escaped: input, then one field per token.
- word_tokenize_data.tsv: one line per real document text of SHARED_DATA (Inspec *.abstr, SemEval
  *.txt.final under test/ and train/, KPTimes title/headline/abstract): relative path, field,
  number of tokens, FNV-1a 64 (hex) of the UTF-8 tokens joined by "\\n". Only hashes are stored,
  so no benchmark text is copied into the repository. `--show PATH [FIELD]` prints the tokens of
  one document, to see a difference.
- unicode_classes.tsv: Python's view of every code point, as ranges "FIRST LAST FLAGS" (hex) with
  flag bits 1 = re \\w (isalnum() or '_'), 2 = re \\d (isdecimal()), 4 = isspace(),
  8 = assigned (category not Cn) in Python's Unicode version, 16 = lower() is the code point itself.
- unicode_lower.tsv: "CP LOWER..." (hex code points) for every code point whose lower() differs.
"""
import unicodedata

import glob
import json
import os
import sys

from nltk.tokenize import NLTKWordTokenizer

_TOKENIZER = NLTKWordTokenizer()


def sentences(text):
    out = []
    start = 0
    n = len(text)
    for i, ch in enumerate(text):
        if ch in ".?!" and i + 1 < n and text[i + 1].isspace():
            out.append(text[start : i + 1])
            start = i + 1
    out.append(text[start:])
    return [s.strip() for s in out if s.strip()]


def kplab_word_tokenize(text):
    tokens = []
    for s in sentences(text):
        tokens.extend(_TOKENIZER.tokenize(s))
    return tokens


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def escape(s):
    return (
        s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    )


CASES = [
    "",
    "   ",
    "Good muffins cost $3.88\nin New York.  Please buy me\ntwo of them.\nThanks.",
    "They'll save and invest more.",
    "hi, my name can't hello,",
    '"Hello," she said. "Isn\'t it?"',
    "He said ''quoted'' and ``this'' too.",
    "``Double'' `single' ```triple```",
    "Cannot gimme gonna gotta lemme more'n wanna go d'ye wanna",
    "CANNOT Gonna WANNA\tgo 'Tis 'twas 'TWAS wanna.",
    "I'm you're he's she'd we've they'll DON'T WON'T I'M HE'S",
    "'a 'b 'm 'x' 'em 'n' rock 'n' roll",
    "The students' books. The boss' car.",
    "Costs: 1,000 units, 2:30 pm, a:b, x,y, end,",
    "end:",
    "(parens) [brackets] {braces} <angles>",
    "a--b---c----d",
    "Wait... what?! Really?? No!",
    "e.g. this i.e. that etc. and U.S.A. is here.",
    "value=5*3 #tag @user 50% A&B; x$",
    "He said: «bonjour» and “hello” and ‘hi’ and „hallo“.",
    "It’s the Rangers’ game — don’t miss it’s end.",
    "Ends with quote.\" Next.' And (paren.) [brk.]",
    "Final period inside quotes.\"",
    "Final period with closers.)]}>  ",
    "Final. ) x",
    "Two periods at end..",
    "Trailing period then newline.\n",
    "trailing comma,\n",
    "Unicode: naïve café résumé Ærø ΟΔΟΣ İstanbul ſtraße ı",
    "Digits ١,٢ and ４,５ and a,١",
    "Apostrophe before letters: 'İ 'ı 'ſ 'Ş 'é",
    "Decomposed: cafe\u0301 'e\u0301 x",
    "Half width\u3000space\u00a0nbsp\u2009thin\u2028line\u0085nel",
    "D'ye know? d'Ye 'TIS 'tIs",
    "cannot's cannot- -cannot _cannot cannot_",
    "more'nwanna wanna\u00a0go wanna",
    "Question? \"Start quote. Exclaim! 'Single start",
    "a. b. c.",
    ".leading period. ..double",
    "x.'\" y",
    "It is 'quoted' text, isn't it?",
    "O'Neil's rock'n'roll y'all ma'am",
    "<tag>'s</tag>",
    "1.5 3. 4.",
]


def write_cases(out_dir):
    path = os.path.join(out_dir, "word_tokenize_cases.tsv")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for text in CASES:
            fields = [escape(text)] + [escape(t) for t in kplab_word_tokenize(text)]
            f.write("\t".join(fields) + "\n")
    return path


def data_texts(shared):
    """Yields (relative path, field, text) for every raw document text, in a fixed order."""
    files = sorted(glob.glob(os.path.join(shared, "inspec_hulth2003", "*", "*.abstr")))
    for sub in ("test", "train"):
        files += sorted(glob.glob(os.path.join(shared, "semeval2010", sub, "*.txt.final")))
    for path in files:
        with open(path, "rb") as f:
            yield os.path.relpath(path, shared), "-", f.read().decode("utf-8")
    for path in sorted(glob.glob(os.path.join(shared, "kptimes_sample", "*.jsonl"))):
        with open(path, "rb") as f:
            for lineno, line in enumerate(f.read().decode("utf-8").split("\n"), 1):
                if not line.strip():
                    continue
                doc = json.loads(line)
                for key in ("title", "headline", "abstract"):
                    if isinstance(doc.get(key), str):
                        yield os.path.relpath(path, shared), "%d.%s" % (lineno, key), doc[key]


def write_data(shared, out_dir):
    path = os.path.join(out_dir, "word_tokenize_data.tsv")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for rel, field, text in data_texts(shared):
            tokens = kplab_word_tokenize(text)
            digest = fnv1a64("\n".join(tokens).encode("utf-8"))
            f.write("%s\t%s\t%d\t%016x\n" % (rel, field, len(tokens), digest))
    return path


def write_unicode(out_dir):
    classes = os.path.join(out_dir, "unicode_classes.tsv")
    lower = os.path.join(out_dir, "unicode_lower.tsv")
    with open(classes, "w", encoding="ascii", newline="\n") as fc, open(
        lower, "w", encoding="ascii", newline="\n"
    ) as fl:
        fc.write("# Python %s, Unicode %s\n" % (sys.version.split()[0], unicodedata.unidata_version))
        run_start, run_flags = 0, None
        for cp in range(0x110000):
            c = chr(cp)
            low = c.lower()
            flags = (
                (1 if (c.isalnum() or c == "_") else 0)
                | (2 if c.isdecimal() else 0)
                | (4 if c.isspace() else 0)
                | (8 if unicodedata.category(c) != "Cn" else 0)
                | (16 if low == c else 0)
            )
            if low != c:
                fl.write("%x\t%s\n" % (cp, " ".join("%x" % ord(x) for x in low)))
            if flags != run_flags:
                if run_flags is not None:
                    fc.write("%x\t%x\t%d\n" % (run_start, cp - 1, run_flags))
                run_start, run_flags = cp, flags
        fc.write("%x\t%x\t%d\n" % (run_start, 0x10FFFF, run_flags))
    return classes, lower


def main(argv):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if len(argv) >= 2 and argv[1] == "--show":
        shared = os.path.join(repo, "..", "shared", "data")
        field = argv[3] if len(argv) > 3 else "-"
        for rel, fld, text in data_texts(shared):
            if rel == argv[2] and fld == field:
                print("\n".join(kplab_word_tokenize(text)))
        return 0
    shared = argv[1] if len(argv) > 1 else os.path.join(repo, "..", "shared", "data")
    out_dir = os.path.join(repo, "tests", "data", "text")
    os.makedirs(out_dir, exist_ok=True)
    print(write_cases(out_dir))
    print(*write_unicode(out_dir))
    print(write_data(shared, out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
