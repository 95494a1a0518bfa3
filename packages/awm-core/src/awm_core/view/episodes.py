"""Episodes for ``awm view``: trajectories found under a path, each with its verdict.

A path is a trajectory ``.json`` (``awm run --out``), a ``.jsonl`` of trajectories
(``trajectories.jsonl``), or a folder searched recursively for both (a run folder:
``awm bench tasks --out DIR``, ``bench-results/RUN/...``). Files in a folder that
hold no trajectories (summaries, journals) are passed over.

A verdict is read from ``trajectory.metadata["verdict"]`` in any of the shapes awm
writes: a bare label (a training rollout), a flat record (label, reward,
reasoning, judge and, when kept, the judge's evidence, the verifier's result and
the database diff: ``awm_verify``'s ``VerificationReport.to_record()``, what
``awm bench`` and ``awm verify run`` store), or a whole verification report
(``{"verdict": {...}, "reward": {...}, "verification": ..., "diff": ...}``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from awm_core.errors import AWMError

if TYPE_CHECKING:
    from awm_core.models import Trajectory

__all__ = [
    "Episode",
    "EpisodeFilter",
    "TrajectoryFileError",
    "VerdictView",
    "load_episodes",
    "parse_verdict",
]

# folders never searched for trajectories (virtual environments, caches, VCS)
_SKIPPED_DIRS = {"__pycache__", "node_modules", "site-packages"}
COMPLETED = "Completed"


class TrajectoryFileError(AWMError):
    """A path given to ``awm view`` holds no readable trajectories."""


# --------------------------------------------------------------------------- verdicts


@dataclass
class VerdictView:
    """A verdict as ``awm view`` shows it, whatever shape it was stored in."""

    label: str
    reward: float | None = None
    reward_reason: str = ""
    reasoning: str = ""
    judge: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    verification: dict[str, Any] | None = None
    diff: dict[str, Any] | str | None = None
    diff_counts: dict[str, Any] | None = None
    other: dict[str, Any] = field(default_factory=dict)

    @property
    def completed(self) -> bool:
        return self.label == COMPLETED

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "label": self.label,
            "reward": self.reward,
            "reward_reason": self.reward_reason,
            "reasoning": self.reasoning,
            "judge": self.judge,
            "evidence": self.evidence,
            "verification": self.verification,
            "diff": self.diff,
            "diff_counts": self.diff_counts,
        }
        out.update(self.other)
        return out


def _reward(raw: Any) -> tuple[float | None, str]:
    if isinstance(raw, Mapping):
        value = raw.get("value")
        return (float(value) if isinstance(value, int | float) else None), str(
            raw.get("reason") or ""
        )
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw), ""
    return None, ""


_KNOWN_KEYS = {
    "label",
    "reward",
    "reward_reason",
    "reasoning",
    "judge",
    "evidence",
    "verification",
    "diff",
    "diff_counts",
    "verdict",
    "env_id",
    "task_id",
}


def parse_verdict(raw: Any) -> VerdictView | None:
    """The verdict in ``metadata["verdict"]`` (see the module docstring); None when not judged."""
    if not raw:
        return None
    if isinstance(raw, str):
        return VerdictView(label=raw)
    if not isinstance(raw, Mapping):
        return VerdictView(label=str(raw))
    inner = raw.get("verdict")
    if isinstance(inner, Mapping):  # a whole verification report
        base: Mapping[str, Any] = inner
    else:
        base = raw
    reward, reason = _reward(raw.get("reward", base.get("reward")))
    verification = raw.get("verification", base.get("verification"))
    diff = raw.get("diff", base.get("diff"))
    counts = raw.get("diff_counts", base.get("diff_counts"))
    evidence = base.get("evidence")
    return VerdictView(
        label=str(base.get("label") or "-"),
        reward=reward,
        reward_reason=str(raw.get("reward_reason") or reason or ""),
        reasoning=str(base.get("reasoning") or ""),
        judge=str(base.get("judge") or ""),
        evidence=dict(evidence) if isinstance(evidence, Mapping) else {},
        verification=dict(verification) if isinstance(verification, Mapping) else None,
        diff=dict(diff) if isinstance(diff, Mapping) else diff if isinstance(diff, str) else None,
        diff_counts=dict(counts) if isinstance(counts, Mapping) else None,
        other={k: v for k, v in raw.items() if k not in _KNOWN_KEYS},
    )


# --------------------------------------------------------------------------- episodes


@dataclass(eq=False)
class Episode:
    """One trajectory with where it came from and its verdict."""

    index: int
    trajectory: Trajectory
    source: Path
    line: int | None = None
    verdict: VerdictView | None = None
    complexity: str | None = None
    _haystack: str | None = field(default=None, repr=False)

    @property
    def env_id(self) -> str:
        return self.trajectory.env_id

    @property
    def task_id(self) -> str:
        return self.trajectory.task_id

    @property
    def label(self) -> str:
        """The verdict's label, ``-`` when not judged."""
        return self.verdict.label if self.verdict is not None else "-"

    @property
    def reward(self) -> float | None:
        return self.verdict.reward if self.verdict is not None else None

    @property
    def failed(self) -> bool:
        """Judged and not completed; unjudged, ended by anything but a final answer."""
        if self.verdict is not None:
            return not self.verdict.completed
        return self.trajectory.termination.value != "final_answer"

    @property
    def violation(self) -> tuple[int, str] | None:
        """The step and kind of the format check that ended the episode, if one did."""
        for step in self.trajectory.steps:
            if step.violation:
                return step.index, step.violation
        return None

    @property
    def ended_by(self) -> str:
        """How it ended: the violated check, else the termination."""
        found = self.violation
        return found[1] if found else self.trajectory.termination.value

    @property
    def policy(self) -> str:
        meta = self.trajectory.metadata
        return str(meta.get("model") or meta.get("policy") or "")

    def matches(self, text: str) -> bool:
        """Case-insensitive search over ids, the messages (not the system prompt), the verdict."""
        if self._haystack is None:
            t = self.trajectory
            parts = [t.env_id, t.task_id, t.instruction, t.final_answer or "", self.ended_by]
            parts += [t.termination_reason or "", self.label, self.complexity or ""]
            for m in t.messages:
                if m.role == "system":  # the same in every episode: it would match them all
                    continue
                parts += [m.content, m.reasoning or ""]
                parts += [json.dumps(c.arguments, default=str) for c in m.tool_calls]
            if self.verdict is not None:
                parts.append(self.verdict.reasoning)
            self._haystack = "\n".join(parts).lower()
        return text.lower() in self._haystack

    def summary(self) -> dict[str, Any]:
        """The episode's row as JSON (without the trajectory)."""
        t = self.trajectory
        found = self.violation
        return {
            "index": self.index,
            "source": str(self.source),
            "line": self.line,
            "env_id": t.env_id,
            "task_id": t.task_id,
            "complexity": self.complexity,
            "policy": self.policy,
            "label": self.label,
            "reward": self.reward,
            "judged": self.verdict is not None,
            "failed": self.failed,
            "steps": len(t.steps),
            "termination": t.termination.value,
            "termination_reason": t.termination_reason,
            "violation": ({"step": found[0], "check": found[1]} if found else None),
            "final_answer": t.final_answer,
        }

    def to_json(self) -> dict[str, Any]:
        """The summary, the verdict as ``awm view`` read it, and the whole trajectory."""
        return {
            **self.summary(),
            "verdict": self.verdict.to_json() if self.verdict is not None else None,
            "trajectory": self.trajectory.model_dump(mode="json"),
        }


@dataclass(frozen=True)
class EpisodeFilter:
    """Which episodes to show; every condition given must hold."""

    failed: bool = False
    env: str | None = None
    task: str | None = None
    complexity: str | None = None
    text: str = ""

    def __call__(self, ep: Episode) -> bool:
        if self.failed and not ep.failed:
            return False
        if self.env is not None and ep.env_id != self.env:
            return False
        if self.task is not None and ep.task_id != self.task:
            return False
        if self.complexity is not None and (ep.complexity or "") != self.complexity:
            return False
        return not self.text or ep.matches(self.text)

    def describe(self) -> str:
        """The active conditions, e.g. ``failed, env=shop, "tea"`` (empty when none)."""
        parts = ["failed"] if self.failed else []
        parts += [f"env={self.env}"] if self.env is not None else []
        parts += [f"task={self.task}"] if self.task is not None else []
        parts += [f"complexity={self.complexity}"] if self.complexity is not None else []
        parts += [repr(self.text)] if self.text else []
        return ", ".join(parts)

    def apply(self, episodes: Iterable[Episode]) -> list[Episode]:
        return [ep for ep in episodes if self(ep)]


# --------------------------------------------------------------------------- loading


def _looks_like_trajectory(item: Any) -> bool:
    return isinstance(item, dict) and "env_id" in item and "task_id" in item


def _items_of_json(text: str) -> list[tuple[int | None, Any]]:
    data = json.loads(text)
    if isinstance(data, dict) and isinstance(data.get("trajectories"), list):
        data = data["trajectories"]
    return [(None, item) for item in (data if isinstance(data, list) else [data])]


def _items_of_jsonl(text: str, *, strict: bool, path: Path) -> list[tuple[int | None, Any]]:
    lines = text.splitlines()
    items: list[tuple[int | None, Any]] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            items.append((n, json.loads(line)))
        except ValueError as exc:
            # a run killed mid-write leaves its last line cut short: that episode is not there yet
            cut_short = n == len(lines) and not text.endswith("\n")
            if strict and not cut_short:
                raise TrajectoryFileError(
                    f"{path} line {n} is not JSON ({str(exc).splitlines()[0]})"
                ) from None
    return items


def _read_file(path: Path, *, strict: bool) -> list[tuple[int | None, Trajectory]]:
    """The trajectories in one file; ``strict``: anything else in it is an error."""
    from pydantic import ValidationError

    from awm_core.models import Trajectory

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        if strict:
            raise TrajectoryFileError(f"cannot read {path}: {exc}") from None
        return []
    if not strict and not ('"task_id"' in text and '"steps"' in text):
        return []  # cheap: most JSON files in a run folder are not trajectories
    try:
        if path.suffix == ".jsonl":
            items = _items_of_jsonl(text, strict=strict, path=path)
        else:
            items = _items_of_json(text)
    except ValueError as exc:
        if strict:
            raise TrajectoryFileError(
                f"{path} is not a trajectory file ({str(exc).splitlines()[0]}); "
                "see `awm schema trajectory`"
            ) from None
        return []
    found: list[tuple[int | None, Trajectory]] = []
    for line, item in items:
        if not _looks_like_trajectory(item):
            if strict:
                where = f"{path} line {line}" if line else str(path)
                raise TrajectoryFileError(
                    f"{where} is not a trajectory (no env_id/task_id); see `awm schema trajectory`"
                    + _folder_hint(path)
                )
            continue
        try:
            found.append((line, Trajectory.model_validate(item)))
        except ValidationError as exc:
            if strict:
                where = f"{path} line {line}" if line else str(path)
                first = str(exc).splitlines()
                raise TrajectoryFileError(
                    f"{where} is not a trajectory ({'; '.join(first[:3])}); "
                    "see `awm schema trajectory`"
                ) from None
    return found


def _folder_hint(path: Path) -> str:
    sibling = path.parent / "trajectories.jsonl"
    if sibling.is_file() and sibling != path:
        return f"; the trajectories of this run are in {sibling} (awm view {path.parent})"
    return ""


def _walk(folder: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
        for name in sorted(files):
            if name.endswith((".json", ".jsonl")) and not name.startswith("."):
                yield Path(root) / name


def load_episodes(path: Path, *, task_complexity: bool = True) -> list[Episode]:
    """Every episode under ``path`` (a file or a folder searched recursively), in file order.

    ``task_complexity``: look each task's complexity up in its environment when the
    trajectory does not record it (an environment that is not installed leaves it blank).
    """
    path = Path(path)
    if path.is_dir():
        found = [(f, line, t) for f in _walk(path) for line, t in _read_file(f, strict=False)]
        if not found:
            raise TrajectoryFileError(
                f"{path} holds no trajectories (no trajectories.jsonl or trajectory .json "
                f"in it or below); write them with `awm bench tasks ENV --out {path}` "
                "or `awm run --out FILE`"
            )
    else:
        found = [(path, line, t) for line, t in _read_file(path, strict=True)]
        if not found:
            raise TrajectoryFileError(f"{path} holds no trajectories" + _folder_hint(path))
    episodes = [
        Episode(
            index=i,
            trajectory=t,
            source=f,
            line=line,
            verdict=parse_verdict(t.metadata.get("verdict")),
            complexity=_recorded_complexity(t.metadata),
        )
        for i, (f, line, t) in enumerate(found)
    ]
    if task_complexity:
        _fill_complexity(episodes)
    return episodes


def _recorded_complexity(meta: Mapping[str, Any]) -> str | None:
    task = meta.get("task")
    for value in (
        meta.get("complexity"),
        meta.get("difficulty"),
        task.get("complexity") if isinstance(task, Mapping) else None,
    ):
        if value:
            return str(value)
    return None


def _fill_complexity(episodes: list[Episode]) -> None:
    """Each unknown complexity from the tasks its environment ships (best effort)."""
    wanted = {ep.env_id for ep in episodes if ep.complexity is None}
    if not wanted:
        return
    known: dict[tuple[str, str], str] = {}
    for env_id in wanted:
        for task in _tasks_of(env_id):
            value = getattr(task, "complexity", None)
            if value:
                known[(env_id, task.id)] = str(getattr(value, "value", value))
    for ep in episodes:
        if ep.complexity is None:
            ep.complexity = known.get((ep.env_id, ep.task_id))


def _tasks_of(env_id: str) -> list[Any]:
    from awm_core.fake_env import ENV_ID as FAKE_ENV_ID
    from awm_core.fake_env import FakeNotesEnv

    if env_id == FAKE_ENV_ID:
        return FakeNotesEnv.tasks()
    try:
        from awm_core.registry import get_env_sources

        for source in get_env_sources().values():
            tasks_fn = getattr(source, "tasks", None)
            if tasks_fn is not None and env_id in source.list_ids():
                return list(tasks_fn(env_id))
    except Exception:  # a broken plugin must not stop the viewer; the column stays blank
        return []
    return []
