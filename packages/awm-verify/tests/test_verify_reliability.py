"""Judge reliability metrics against hand-computed values."""

from __future__ import annotations

import pytest

from awm_verify.reliability import (
    cohens_kappa,
    fleiss_kappa,
    fleiss_kappa_from_counts,
    judge_agreement,
    pairwise_agreement,
    reliability_report,
    reward_flip_rate,
    self_consistency,
)

# Fleiss (1971) as worked on Wikipedia: 10 subjects, 14 raters, 5 categories; P̄ = 0.378,
# P̄e = 0.213, κ = 0.210.
WIKIPEDIA_COUNTS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]

C, P, A, E = "Completed", "Partially Completed", "Agent Error", "Environment Error"
# 4 items x 3 trials, computed by hand below.
TRIALS = [
    [C, C, C],  # unanimous
    [C, C, A],  # 1 of 3 pairs agree
    [A, E, A],  # labels differ but both pay 0: no reward flip
    [P, P, P],
]


def test_fleiss_kappa_on_the_textbook_example():
    assert fleiss_kappa_from_counts(WIKIPEDIA_COUNTS) == pytest.approx(0.2099, abs=1e-4)


def test_fleiss_kappa_from_labels_matches_the_counts_form():
    labels = [[j for j, n in enumerate(row) for _ in range(n)] for row in WIKIPEDIA_COUNTS]
    assert fleiss_kappa(labels) == pytest.approx(0.2099, abs=1e-4)


def test_pairwise_agreement_is_fleiss_p_bar():
    labels = [[j for j, n in enumerate(row) for _ in range(n)] for row in WIKIPEDIA_COUNTS]
    assert pairwise_agreement(labels) == pytest.approx(0.378, abs=1e-3)


def test_hand_computed_small_example():
    # pairwise: (1 + 1/3 + 1/3 + 1) / 4 = 2/3
    assert pairwise_agreement(TRIALS) == pytest.approx(2 / 3)
    assert self_consistency(TRIALS) == pytest.approx(0.5)
    # rewards per item: {1}, {1, 0}, {0}, {0.1}: only item 2 flips
    assert reward_flip_rate(TRIALS) == pytest.approx(0.25)
    # proportions: C 5/12, A 3/12, E 1/12, P 3/12 -> P̄e = (25 + 9 + 1 + 9) / 144 = 44/144
    p_e = 44 / 144
    assert fleiss_kappa(TRIALS) == pytest.approx((2 / 3 - p_e) / (1 - p_e))


def test_perfect_agreement_and_the_undefined_case():
    assert fleiss_kappa([[C, C], [A, A]]) == pytest.approx(1.0)
    assert fleiss_kappa([[C, C], [C, C]]) is None  # one label everywhere: chance agreement is 1


def test_cohens_kappa_textbook_example():
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> p_o = 0.7, p_e = 0.5, κ = 0.4
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert cohens_kappa(a, b) == pytest.approx(0.4)


def test_agreement_between_two_judges_uses_majority_labels():
    judge_a = [[C, C, A], [A, A, A], [C, C, C]]
    judge_b = [C, A, A]
    result = judge_agreement(judge_a, judge_b)
    assert result["agreement"] == pytest.approx(2 / 3)
    # a: C, A, C; b: C, A, A -> p_o 2/3; p_e = (2*1 + 1*2)/9 = 4/9; κ = (2/3 - 4/9)/(5/9) = 0.4
    assert result["cohens_kappa"] == pytest.approx(0.4)


def test_report_bundles_every_metric():
    r = reliability_report(TRIALS)
    assert (r.n_items, r.n_trials) == (4, 3)
    assert r.label_counts == {A: 3, C: 5, E: 1, P: 3}
    assert r.reward_flip_rate == pytest.approx(0.25)


@pytest.mark.parametrize("bad", [[], [[C]], [[C, C], [C]]])
def test_malformed_inputs_are_rejected(bad):
    with pytest.raises(ValueError):
        reliability_report(bad)
