"""How much a judge's verdicts can be trusted: the metrics of the paper's appendix B.2.

A judge is run K times on each of N trajectories (``labels[i][k]`` is trial k on
item i). Metrics:

self-consistency
    the share of items on which all K trials agree.
pairwise agreement
    the mean, over items, of the share of trial pairs that agree (Fleiss' P̄).
Fleiss' κ
    chance-corrected agreement among the K trials: (P̄ - P̄e) / (1 - P̄e), with
    P̄e the sum of squared overall label proportions. Undefined (``None``) when
    every trial of every item gives the same single label (P̄e = 1).
reward flip rate
    the share of items whose *reward* is not the same in every trial, i.e. some
    trial disagrees with the majority. Labels that pay the same reward (Agent
    Error and Environment Error both pay 0) do not flip a reward.

And between two judges (or a judge and human labels), Cohen's κ on paired labels.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from itertools import combinations
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from awm_verify.rewards import PAPER_LABEL_REWARDS


class ReliabilityReport(BaseModel):
    """The reliability of one judge over N items × K trials."""

    model_config = ConfigDict(extra="forbid")

    n_items: int
    n_trials: int
    self_consistency: float
    pairwise_agreement: float
    fleiss_kappa: float | None = Field(description="None when undefined (one label everywhere).")
    reward_flip_rate: float
    label_counts: dict[str, int]


def _check_matrix(labels: Sequence[Sequence[Any]]) -> int:
    if not labels:
        raise ValueError("reliability needs at least one item")
    k = len(labels[0])
    if k < 2:
        raise ValueError("reliability needs at least two trials per item")
    if any(len(row) != k for row in labels):
        raise ValueError("every item must have the same number of trials")
    return k


def counts_matrix(labels: Sequence[Sequence[Hashable]]) -> tuple[list[Hashable], list[list[int]]]:
    """Per-item counts of each category (Fleiss' n_ij), with the category order used."""
    categories = sorted({lab for row in labels for lab in row}, key=str)
    index = {c: j for j, c in enumerate(categories)}
    matrix = []
    for row in labels:
        counts = [0] * len(categories)
        for lab in row:
            counts[index[lab]] += 1
        matrix.append(counts)
    return categories, matrix


def fleiss_kappa_from_counts(counts: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' κ from an N × C matrix of how many raters put item i in category j."""
    if not counts:
        raise ValueError("Fleiss' kappa needs at least one item")
    n = sum(counts[0])
    if n < 2 or any(sum(row) != n for row in counts):
        raise ValueError("every item needs the same number (at least 2) of ratings")
    items = len(counts)
    p_bar = sum((sum(c * c for c in row) - n) / (n * (n - 1)) for row in counts) / items
    totals = [sum(row[j] for row in counts) for j in range(len(counts[0]))]
    p_e = sum((t / (items * n)) ** 2 for t in totals)
    if p_e >= 1.0:
        return None
    return (p_bar - p_e) / (1 - p_e)


def fleiss_kappa(labels: Sequence[Sequence[Hashable]]) -> float | None:
    """Fleiss' κ from per-item trial labels."""
    _check_matrix(labels)
    return fleiss_kappa_from_counts(counts_matrix(labels)[1])


def pairwise_agreement(labels: Sequence[Sequence[Hashable]]) -> float:
    """Mean share of agreeing trial pairs per item."""
    k = _check_matrix(labels)
    pairs = k * (k - 1) / 2
    return sum(sum(a == b for a, b in combinations(row, 2)) / pairs for row in labels) / len(labels)


def self_consistency(labels: Sequence[Sequence[Hashable]]) -> float:
    """Share of items on which every trial gives the same label."""
    _check_matrix(labels)
    return sum(len(set(row)) == 1 for row in labels) / len(labels)


def reward_flip_rate(
    labels: Sequence[Sequence[Hashable]],
    reward_of: Callable[[Hashable], float] | Mapping[Any, float] | None = None,
) -> float:
    """Share of items where some trial's reward disagrees with the majority's."""
    _check_matrix(labels)
    if reward_of is None:
        table: Mapping[Any, float] = {
            **PAPER_LABEL_REWARDS,
            **{k.value: v for k, v in PAPER_LABEL_REWARDS.items()},
        }
        reward_of = table
    fn = reward_of.__getitem__ if isinstance(reward_of, Mapping) else reward_of
    return sum(len({fn(lab) for lab in row}) > 1 for row in labels) / len(labels)


def majority(row: Sequence[Hashable]) -> Hashable:
    """The most common label of one item (ties go to the label seen first)."""
    return Counter(row).most_common(1)[0][0]


def cohens_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's κ between two raters' labels on the same items; None when undefined."""
    if len(a) != len(b) or not a:
        raise ValueError("Cohen's kappa needs two equally long, non-empty label lists")
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[c] * cb[c] for c in set(ca) | set(cb)) / (n * n)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1 - p_e)


def judge_agreement(
    a: Sequence[Sequence[Hashable]] | Sequence[Hashable],
    b: Sequence[Sequence[Hashable]] | Sequence[Hashable],
) -> dict[str, float | None]:
    """Agreement between two judges: raw agreement and Cohen's κ on (majority) labels."""

    def flat(x: Sequence[Any]) -> list[Hashable]:
        return [majority(r) if isinstance(r, list | tuple) else r for r in x]

    fa, fb = flat(a), flat(b)
    if len(fa) != len(fb) or not fa:
        raise ValueError("both judges must have labelled the same, non-empty list of items")
    return {
        "agreement": sum(x == y for x, y in zip(fa, fb, strict=True)) / len(fa),
        "cohens_kappa": cohens_kappa(fa, fb),
    }


def reliability_report(
    labels: Sequence[Sequence[Hashable]],
    reward_of: Callable[[Hashable], float] | Mapping[Any, float] | None = None,
) -> ReliabilityReport:
    """Every single-judge metric at once."""
    k = _check_matrix(labels)
    return ReliabilityReport(
        n_items=len(labels),
        n_trials=k,
        self_consistency=self_consistency(labels),
        pairwise_agreement=pairwise_agreement(labels),
        fleiss_kappa=fleiss_kappa(labels),
        reward_flip_rate=reward_flip_rate(labels, reward_of),
        label_counts={
            str(lab): n
            for lab, n in sorted(
                Counter(x for r in labels for x in r).items(), key=lambda kv: str(kv[0])
            )
        },
    )
