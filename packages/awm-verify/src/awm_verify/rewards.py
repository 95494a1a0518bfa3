"""Reward functions, registered by name, and their weighted composition.

``default`` is the paper's hybrid reward:

- a rollout the step-level format check ended early (``Termination.FORMAT_ERROR``): -1.0,
  whatever the judge said, so malformed actions are discouraged;
- a rollout the environment ended (``Termination.ENVIRONMENT_ERROR``) or judged
  Environment Error: 0.0, so the policy is not punished for the environment's bugs;
- otherwise Completed 1.0, Partially Completed 0.1, Agent Error 0.0.

Others: ``binary`` (1.0 only for Completed), ``partial_credit`` (Completed 1.0,
Partially Completed 0.5), ``format`` (1.0 when no step broke the format rules,
else 0.0) and ``format_penalty`` (-1.0 on a format-error termination, else 0.0).

Any expression of registered names is a reward too: ``"default+0.1*format"``,
``"0.5*binary + 0.5*partial_credit"``, ``"default-0.05*format_penalty"``. Use
:func:`resolve_reward` to get one from a string; the parts appear in
``Reward.components``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from awm_core.errors import AWMError
from awm_core.models import Reward, Termination, Trajectory, Verdict, VerdictLabel
from awm_core.registry import REWARD_FUNCTIONS, collect, get_reward_function

RewardFn = Callable[[Verdict | None, Trajectory | None], Reward]

PAPER_LABEL_REWARDS: dict[VerdictLabel, float] = {
    VerdictLabel.COMPLETED: 1.0,
    VerdictLabel.PARTIALLY_COMPLETED: 0.1,
    VerdictLabel.AGENT_ERROR: 0.0,
    VerdictLabel.ENVIRONMENT_ERROR: 0.0,
}
FORMAT_ERROR_REWARD = -1.0


class RewardSpecError(AWMError):
    """A reward expression could not be parsed or names an unknown reward function."""


def _terminated(trajectory: Trajectory | None, how: Termination) -> bool:
    return trajectory is not None and trajectory.termination == how


def default_reward(verdict: Verdict | None, trajectory: Trajectory | None) -> Reward:
    """The paper's reward: -1 for a format-error ending, 0 for environment errors, else by label."""
    if _terminated(trajectory, Termination.FORMAT_ERROR):
        return Reward(value=FORMAT_ERROR_REWARD, reason="the rollout ended on a format error")
    if _terminated(trajectory, Termination.ENVIRONMENT_ERROR):
        return Reward(value=0.0, reason="the environment ended the rollout")
    if verdict is None:
        return Reward(value=0.0, reason="no verdict")
    return Reward(value=PAPER_LABEL_REWARDS[verdict.label], reason=verdict.label.value)


def binary_reward(verdict: Verdict | None, trajectory: Trajectory | None) -> Reward:
    """1.0 for Completed, 0.0 for anything else (format errors included)."""
    done = verdict is not None and verdict.label == VerdictLabel.COMPLETED
    if _terminated(trajectory, Termination.FORMAT_ERROR):
        done = False
    return Reward(value=1.0 if done else 0.0, reason="completed" if done else "not completed")


def partial_credit_reward(verdict: Verdict | None, trajectory: Trajectory | None) -> Reward:
    """Completed 1.0, Partially Completed 0.5, otherwise 0.0: more credit for progress."""
    if verdict is None or _terminated(trajectory, Termination.FORMAT_ERROR):
        return Reward(value=0.0, reason="no verdict or format error")
    value = {VerdictLabel.COMPLETED: 1.0, VerdictLabel.PARTIALLY_COMPLETED: 0.5}.get(
        verdict.label, 0.0
    )
    return Reward(value=value, reason=verdict.label.value)


def _format_ok(trajectory: Trajectory | None) -> bool:
    if trajectory is None:
        return True
    if trajectory.termination == Termination.FORMAT_ERROR:
        return False
    return all(step.violation is None for step in trajectory.steps)


def format_reward(verdict: Verdict | None, trajectory: Trajectory | None) -> Reward:
    """1.0 when no step broke the format rules, else 0.0 (a bonus to mix in)."""
    ok = _format_ok(trajectory)
    return Reward(value=1.0 if ok else 0.0, reason="format ok" if ok else "format violation")


def format_penalty_reward(verdict: Verdict | None, trajectory: Trajectory | None) -> Reward:
    """-1.0 when the rollout ended on a format error, else 0.0."""
    bad = _terminated(trajectory, Termination.FORMAT_ERROR)
    return Reward(value=FORMAT_ERROR_REWARD if bad else 0.0, reason="format error" if bad else "")


BUILTIN_REWARDS: dict[str, RewardFn] = {
    "default": default_reward,
    "binary": binary_reward,
    "partial_credit": partial_credit_reward,
    "format": format_reward,
    "format_penalty": format_penalty_reward,
}


@dataclass(frozen=True)
class WeightedSum:
    """A reward that is a weighted sum of named reward functions.

    ``components`` of the result hold each term's weighted contribution under
    its name (``"0.1*format"``), so training logs show where a reward came from.
    """

    terms: tuple[tuple[float, str, RewardFn], ...]

    def __call__(self, verdict: Verdict | None, trajectory: Trajectory | None) -> Reward:
        total = 0.0
        components: dict[str, float] = {}
        reasons: list[str] = []
        for weight, name, fn in self.terms:
            part = fn(verdict, trajectory)
            contribution = weight * part.value
            key = name if weight == 1.0 else f"{weight:g}*{name}"
            components[key] = components.get(key, 0.0) + contribution
            total += contribution
            if part.reason:
                reasons.append(f"{key}: {part.reason}")
        return Reward(value=total, reason="; ".join(reasons), components=components)

    @property
    def spec(self) -> str:
        """The expression this sum was built from, normalised."""
        parts = []
        for weight, name, _ in self.terms:
            sign, w = ("-" if weight < 0 else "+"), abs(weight)
            parts.append(f"{sign}{name}" if w == 1.0 else f"{sign}{w:g}*{name}")
        return "".join(parts).lstrip("+")


_TERM = re.compile(
    r"\s*(?P<sign>[+-])?\s*(?:(?P<weight>\d+(?:\.\d*)?|\.\d+)\s*\*\s*)?(?P<name>[A-Za-z_][A-Za-z0-9_.]*)\s*"
)


def parse_terms(spec: str) -> list[tuple[float, str]]:
    """Parse ``"default+0.1*format"`` into ``[(1.0, "default"), (0.1, "format")]``."""
    terms: list[tuple[float, str]] = []
    pos = 0
    text = spec.strip()
    if not text:
        raise RewardSpecError("an empty reward expression; try 'default' or 'default+0.1*format'")
    while pos < len(text):
        m = _TERM.match(text, pos)
        if m is None or m.end() == pos or (terms and m.group("sign") is None):
            raise RewardSpecError(
                f"cannot parse reward expression {spec!r} at character {pos + 1}; "
                "expected terms like 'default', '0.1*format', joined by + or -"
            )
        weight = float(m.group("weight")) if m.group("weight") else 1.0
        if m.group("sign") == "-":
            weight = -weight
        terms.append((weight, m.group("name")))
        pos = m.end()
    return terms


def compose(spec: str | Sequence[tuple[float, str]]) -> WeightedSum:
    """Build a :class:`WeightedSum` from an expression or ``(weight, name)`` pairs."""
    pairs = parse_terms(spec) if isinstance(spec, str) else list(spec)
    known = collect(REWARD_FUNCTIONS)
    terms = []
    for weight, name in pairs:
        if name not in known:
            raise RewardSpecError(
                f"unknown reward function {name!r} in {spec!r}; known: {', '.join(sorted(known))}"
            )
        terms.append((weight, name, known[name]))
    return WeightedSum(tuple(terms))


def resolve_reward(spec: str = "default") -> RewardFn:
    """A reward function by name (``default``) or by expression (``default+0.1*format``)."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", spec.strip()):
        fn: RewardFn = get_reward_function(spec.strip())
        return fn
    return compose(spec)
