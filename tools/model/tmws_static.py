"""Reads the static embedding model file and embeds text with it, with nothing but numpy.

This is the reference for the Rust reader: the same file layout, the same tokenisation
(BERT's uncased basic tokeniser, then WordPiece), the same pooling and normalisation. The
evaluation embeds through this module, so the numbers it reports are those of the file as
shipped, int8 rounding included.
"""

from __future__ import annotations

import json
import struct
import unicodedata

import numpy as np

# The file's `format` metadata value; a reader refuses any other.
FORMAT = "tmws-static-embedding/1"


class StaticModel:
    def __init__(self, path: str):
        with open(path, "rb") as f:
            data = f.read()
        (header_len,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8 : 8 + header_len])
        body = data[8 + header_len :]
        meta = header.pop("__metadata__")
        if meta.get("format") != FORMAT:
            raise ValueError(f"{path}: not a {FORMAT} file")
        self.meta = meta

        def tensor(name, dtype):
            t = header[name]
            start, end = t["data_offsets"]
            return np.frombuffer(body[start:end], dtype=dtype).reshape(t["shape"])

        self.vectors = tensor("embeddings", np.int8)
        self.scales = tensor("scales", "<f4")
        vocab_bytes = tensor("vocab", np.uint8).tobytes()
        self.vocab = vocab_bytes.decode("utf-8").split("\n")
        if len(self.vocab) != self.vectors.shape[0]:
            raise ValueError(f"{path}: {len(self.vocab)} tokens but {self.vectors.shape[0]} rows")
        self.index = {tok: i for i, tok in enumerate(self.vocab)}
        self.dim = int(meta["dim"])
        self.unk = self.index[meta["unk_token"]]
        self.prefix = meta["continuing_subword_prefix"]
        self.max_word_chars = int(meta["max_input_chars_per_word"])
        self.max_tokens = int(meta["max_tokens"])

    # --- tokenisation -------------------------------------------------------------

    def basic_tokens(self, text: str) -> list[str]:
        """BERT's basic tokeniser, uncased: clean, space out CJK ideographs, lowercase,
        strip accents (NFD, drop non-spacing marks), split on whitespace and punctuation."""
        out = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or _is_control(ch):
                continue
            if _is_whitespace(ch):
                out.append(" ")
            elif _is_cjk(cp):
                out.append(f" {ch} ")
            else:
                out.append(ch)
        text = "".join(out).lower()
        text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
        words = []
        for chunk in text.split():
            cur = ""
            for ch in chunk:
                if _is_punctuation(ch):
                    if cur:
                        words.append(cur)
                        cur = ""
                    words.append(ch)
                else:
                    cur += ch
            if cur:
                words.append(cur)
        return words

    def wordpiece(self, word: str) -> list[int]:
        """Greedy longest match first; a word that cannot be split wholly is one unknown."""
        if len(word) > self.max_word_chars:
            return [self.unk]
        ids, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                piece = word[start:end]
                if start > 0:
                    piece = self.prefix + piece
                if piece in self.index:
                    found = self.index[piece]
                    break
                end -= 1
            if found is None:
                return [self.unk]
            ids.append(found)
            start = end
        return ids

    def token_ids(self, text: str) -> list[int]:
        ids = [i for w in self.basic_tokens(text) for i in self.wordpiece(w)]
        # Unknown tokens carry no meaning; the first max_tokens known ones are pooled.
        return [i for i in ids if i != self.unk][: self.max_tokens]

    # --- embedding ----------------------------------------------------------------

    def embed(self, text: str) -> np.ndarray:
        ids = self.token_ids(text)
        if not ids:
            return np.zeros(self.dim, dtype=np.float32)
        rows = self.vectors[ids].astype(np.float32) * self.scales[ids][:, None]
        v = rows.mean(axis=0)
        n = np.linalg.norm(v)
        return v / n if n > 0 else v


def _is_whitespace(ch: str) -> bool:
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch: str) -> bool:
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch).startswith("C")


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )
