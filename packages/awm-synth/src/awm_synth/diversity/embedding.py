"""Offline text embedders for scenario de-duplication.

``wordllama`` is used when its package is installed: it is built directly from
the tokenizer and weights shipped inside its wheel (its own ``load()`` looks in
the wrong folder and tries to download). Otherwise a lexical embedder stands in:
TF-IDF over words and character 3-grams, L2-normalised, so cosine similarity
is meaningful and identical or near-identical descriptions score near 1.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Protocol

Vector = dict[str, float] | list[float]

_WORD = re.compile(r"[a-z0-9]+")


class Embedder(Protocol):
    name: str

    def embed(self, texts: list[str]) -> list[Vector]: ...


def cosine(a: Vector, b: Vector) -> float:
    """Cosine of two L2-normalised vectors (sparse dicts or dense lists)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if len(a) > len(b):
            a, b = b, a
        return sum(v * b.get(k, 0.0) for k, v in a.items())
    assert isinstance(a, list) and isinstance(b, list)
    return sum(x * y for x, y in zip(a, b, strict=True))


class LexicalEmbedder:
    """TF-IDF over words and character trigrams; dependency-free and deterministic."""

    name = "lexical-tfidf"

    def _features(self, text: str) -> Counter[str]:
        words = _WORD.findall(text.lower().replace("_", " "))
        feats: Counter[str] = Counter(f"w:{w}" for w in words)
        for w in words:
            padded = f" {w} "
            feats.update(f"c:{padded[i : i + 3]}" for i in range(len(padded) - 2))
        return feats

    def embed(self, texts: list[str]) -> list[Vector]:
        feats = [self._features(t) for t in texts]
        df: Counter[str] = Counter()
        for f in feats:
            df.update(f.keys())
        n = len(texts)
        out: list[Vector] = []
        for f in feats:
            vec = {
                k: (1 + math.log(c)) * (math.log((1 + n) / (1 + df[k])) + 1) for k, c in f.items()
            }
            norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
            out.append({k: v / norm for k, v in vec.items()})
        return out


class WordLlamaEmbedder:
    """wordllama's shipped 256-d model, built from the wheel's own files (never a download).

    ``WordLlama.load()`` resolves files against the wrong folder and falls back
    to a hub download, so the weights (``weights/*_256.safetensors``) and the
    tokenizer file (``tokenizers/*_tokenizer_config.json``) shipped inside the
    package are opened directly and handed to ``WordLlamaInference``.
    """

    name = "wordllama-256"

    def __init__(self) -> None:
        from pathlib import Path

        import wordllama
        from safetensors import safe_open
        from tokenizers import Tokenizer
        from wordllama.inference import WordLlamaInference

        root = Path(wordllama.__file__).parent
        weights = sorted((root / "weights").glob("*_256.safetensors"))
        tokenizers = sorted((root / "tokenizers").glob("*tokenizer*.json"))
        if not weights or not tokenizers:
            raise RuntimeError(f"wordllama at {root} does not ship its 256-d weights and tokenizer")
        with safe_open(str(weights[0]), framework="np", device="cpu") as fh:
            embedding = fh.get_tensor("embedding.weight")
        self._model = WordLlamaInference(
            embedding, Tokenizer.from_file(str(tokenizers[0])), binary=False
        )

    def embed(self, texts: list[str]) -> list[Vector]:
        vectors = self._model.embed(texts, norm=True)
        return [[float(x) for x in row] for row in vectors]


def get_embedder(name: str = "auto") -> Embedder:
    """``lexical``, ``wordllama``, or ``auto`` (wordllama when it loads offline, else lexical)."""
    if name == "lexical":
        return LexicalEmbedder()
    if name in ("wordllama", "auto"):
        try:
            return WordLlamaEmbedder()
        except Exception:
            if name == "wordllama":
                raise
    return LexicalEmbedder()
