"""Embedding de-duplication at the configured cosine threshold."""

from __future__ import annotations

from awm_synth.diversity.dedup import deduplicate
from awm_synth.diversity.embedding import LexicalEmbedder, cosine

SHOP = "An online bookstore where a signed-in customer searches the catalogue and orders books from limited stock."
SHOP_TWIN = "An online bookshop where a signed-in customer searches the catalogue and orders books from limited stock."
CLINIC = "A clinic portal where a patient books, moves and cancels appointments with doctors and pays invoices."


def test_lexical_cosine_is_normalised() -> None:
    emb = LexicalEmbedder()
    a, b, c = emb.embed([SHOP, SHOP_TWIN, CLINIC])
    assert abs(cosine(a, a) - 1.0) < 1e-9
    assert cosine(a, b) > 0.85 > cosine(a, c)


def test_near_duplicate_dropped_at_threshold() -> None:
    kept, dropped = deduplicate([SHOP, CLINIC, SHOP_TWIN], LexicalEmbedder(), 0.85)
    assert kept == [0, 1]
    assert [(d.index, d.kept_index) for d in dropped] == [(2, 0)]
    assert dropped[0].similarity >= 0.85


def test_threshold_is_respected() -> None:
    kept, dropped = deduplicate([SHOP, SHOP_TWIN], LexicalEmbedder(), 0.999)
    assert kept == [0, 1] and not dropped


def test_prior_items_count_but_are_not_returned() -> None:
    kept, dropped = deduplicate([SHOP_TWIN, CLINIC], LexicalEmbedder(), 0.85, prior=[SHOP])
    assert kept == [1]
    assert dropped[0].kept_index == -1  # the first prior item
