"""Embedding de-duplication: keep an item unless it is too similar to one already kept."""

from __future__ import annotations

from dataclasses import dataclass

from awm_synth.diversity.embedding import Embedder, cosine


@dataclass(frozen=True)
class Duplicate:
    """``index`` was dropped because it scored ``similarity`` against the kept ``kept_index``."""

    index: int
    kept_index: int
    similarity: float


def deduplicate(
    texts: list[str], embedder: Embedder, threshold: float = 0.85, *, prior: list[str] | None = None
) -> tuple[list[int], list[Duplicate]]:
    """Greedy, order-preserving: item i is kept when its cosine to every kept item is < ``threshold``.

    ``prior`` texts (kept in earlier rounds) are compared against but never
    returned; their indices in :class:`Duplicate` are negative (-1 - position).
    """
    prior = prior or []
    vectors = embedder.embed(prior + texts)
    kept_vectors = [(-1 - i, vectors[i]) for i in range(len(prior))]
    kept: list[int] = []
    dropped: list[Duplicate] = []
    for i in range(len(texts)):
        vec = vectors[len(prior) + i]
        best_index, best = None, -1.0
        for index, other in kept_vectors:
            score = cosine(vec, other)
            if score > best:
                best_index, best = index, score
        if best_index is not None and best >= threshold:
            dropped.append(Duplicate(i, best_index, round(best, 4)))
        else:
            kept.append(i)
            kept_vectors.append((i, vec))
    return kept, dropped
