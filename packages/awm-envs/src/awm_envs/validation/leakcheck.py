"""Find state a bundle's app keeps outside the database: module-level data its tools change.

In-process, every instance of an environment shares one imported ``app.py``.
Each instance has its own SQLite database, but a module-level dict, list,
counter or cache that a tool writes is seen by every other instance (and by
the next episode). :func:`module_state` takes a comparable fingerprint of that
state; :func:`changed_names` says which names differ between two fingerprints.

What is fingerprinted, for the app module's globals (names starting with
``__`` are skipped):

* data: ``None``, bools, numbers, strings, bytes, and the containers dict,
  list, tuple, set, frozenset, bytearray, deque (and their subclasses, e.g.
  ``defaultdict``, ``Counter``), recursively, by value;
* objects of classes defined in ``app.py`` (a plain "store" object), dataclass
  and pydantic model instances, ``SimpleNamespace``, ``UserDict``/``UserList``
  and ``queue.Queue`` objects: their attributes, by value;
* ``random.Random`` generators (their state) and ``itertools.count`` counters;
* functions defined in ``app.py``: their default argument values (the mutable
  default argument trap), their attributes and the variables their closures
  capture, by the same rules;
* classes defined in ``app.py`` (not enums): their class attributes that are data;
* every other object (the FastAPI app, engines, metadata, sessions, locks,
  compiled patterns, typing constructs, imported modules): by identity only,
  so rebinding the name is seen, its inner workings are not.

``functools.lru_cache``/``cache`` wrappers are left out on purpose: they are
usually pure memoisation, and their entries are not data a tool wrote.

:class:`LeakCheck` is the check ``validate_environment`` runs around each task:
the fingerprint before and after, and the reference solution replayed on a
second fresh instance, whose results must equal the first replay's.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime
import decimal
import enum
import fractions
import itertools
import json
import pathlib
import random
import types
import uuid
from collections.abc import Sequence
from typing import Any

from awm_core.models import Task, ToolCallStep
from awm_envs.validation.judge import is_undecided
from awm_envs.validation.replay import Replay, RuntimeEnvironment, replay_steps
from awm_envs.validation.results import TaskValidation
from awm_envs.validation.runner import VerifierRunner

__all__ = ["LEAK_PHRASE", "changed_names", "module_state"]

# Past this many values one fingerprint stops descending and records sizes only.
MAX_NODES = 50_000
MAX_DEPTH = 12

_SCALARS = (type(None), bool, int, str, bytes)
_IMMUTABLE_REPR = (
    float,
    complex,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    datetime.tzinfo,
    decimal.Decimal,
    fractions.Fraction,
    uuid.UUID,
    range,
    pathlib.PurePath,
    enum.Enum,
)
_SEQUENCES = (list, tuple, collections.deque)
_SETS = (set, frozenset)
_DATA = (
    *_SCALARS,
    *_IMMUTABLE_REPR,
    *_SEQUENCES,
    *_SETS,
    dict,
    bytearray,
    random.Random,
    itertools.count,
    types.SimpleNamespace,
)
# Standard-library holders of data walked by their attributes: SimpleNamespace, UserDict,
# UserList, queue.Queue (its deque; its locks count by identity).
_STDLIB_HOLDERS = frozenset({"types", "collections", "queue"})
_CLASS_SKIP_PREFIXES = ("__", "_sa_", "_abc_", "_pydantic", "model_")


class _Walker:
    def __init__(self, module_name: str) -> None:
        self.module_name = module_name
        self.nodes = 0
        self.path: set[int] = set()

    def own(self, obj: Any) -> bool:
        return getattr(type(obj), "__module__", None) == self.module_name

    def state(self, value: Any, depth: int = 0) -> Any:
        self.nodes += 1
        if isinstance(value, _SCALARS):
            return value
        if isinstance(value, _IMMUTABLE_REPR):
            return ("r", type(value).__qualname__, repr(value))
        if isinstance(value, bytearray):
            return ("ba", bytes(value))
        key = id(value)
        if key in self.path:
            return ("cycle",)
        if depth >= MAX_DEPTH or self.nodes + _size(value) > MAX_NODES:
            return self.summary(value)
        self.path.add(key)
        try:
            return self._container(value, depth + 1)
        finally:
            self.path.discard(key)

    def summary(self, value: Any) -> Any:
        """Past the depth or size budget: the container's identity and length only."""
        return ("big", type(value).__qualname__, id(value), _size(value))

    def _container(self, value: Any, depth: int) -> Any:
        kind = type(value).__qualname__
        if isinstance(value, dict):
            return (
                "d",
                kind,
                tuple((self.state(k, depth), self.state(v, depth)) for k, v in list(value.items())),
            )
        if isinstance(value, _SEQUENCES):
            return ("l", kind, tuple(self.state(v, depth) for v in list(value)))
        if isinstance(value, _SETS):
            return ("s", kind, tuple(sorted(repr(self.state(v, depth)) for v in list(value))))
        if isinstance(value, random.Random):
            return ("rng", hash(value.getstate()))
        if isinstance(value, itertools.count):
            return ("count", repr(value))
        if not isinstance(value, type) and (
            self.own(value)
            or getattr(type(value), "__module__", None) in _STDLIB_HOLDERS
            or dataclasses.is_dataclass(value)
            or hasattr(type(value), "__pydantic_fields__")
        ):
            return ("o", kind, self.attributes(value, depth))
        return ("id", kind, id(value))

    def attributes(self, obj: Any, depth: int) -> Any:
        attrs: dict[str, Any] = {}
        with contextlib.suppress(TypeError):
            attrs.update(vars(obj))
        for cls in type(obj).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if isinstance(slot, str) and slot not in attrs and hasattr(obj, slot):
                    attrs[slot] = getattr(obj, slot)
        return tuple(
            (k, self.state(v, depth))
            for k, v in sorted(attrs.items())
            if not (k.startswith("_sa_") or k.startswith("__pydantic"))
        )

    # -- globals that are code ------------------------------------------------------------
    def function(self, fn: types.FunctionType) -> Any:
        closure = fn.__closure__ or ()
        cells = []
        for name, cell in zip(fn.__code__.co_freevars, closure, strict=False):
            try:
                content = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if not isinstance(content, types.FunctionType | type | types.ModuleType):
                cells.append((name, self.state(content)))
        attrs = {k: v for k, v in vars(fn).items() if not k.startswith("__")}
        return (
            "fn",
            self.state(fn.__defaults__),
            self.state(fn.__kwdefaults__),
            tuple(cells),
            tuple((k, self.state(v)) for k, v in sorted(attrs.items())),
        )

    def klass(self, cls: type) -> Any:
        data = []
        for k, v in list(vars(cls).items()):
            if k.startswith(_CLASS_SKIP_PREFIXES) or not _is_data(v):
                continue
            data.append((k, self.state(v)))
        return ("cls", tuple(data))


def _size(value: Any) -> int:
    if isinstance(value, dict | list | tuple | set | frozenset | collections.deque):
        return len(value)
    return 0


def _is_data(value: Any) -> bool:
    return isinstance(value, _DATA)


def module_state(module: types.ModuleType) -> dict[str, Any]:
    """A comparable fingerprint of the state ``module``'s code could change (see module docstring)."""
    walker = _Walker(module.__name__)
    source = getattr(module, "__file__", None)
    out: dict[str, Any] = {}
    for name, value in list(vars(module).items()):
        if name.startswith("__") or isinstance(value, types.ModuleType):
            continue
        if isinstance(value, types.FunctionType):
            if value.__module__ == module.__name__ or value.__code__.co_filename == source:
                out[name] = walker.function(value)
            else:
                out[name] = ("id", id(value))
            continue
        if isinstance(value, type):
            if value.__module__ == module.__name__ and not issubclass(value, enum.Enum):
                out[name] = walker.klass(value)
            else:
                out[name] = ("id", id(value))
            continue
        if callable(value) and not walker.own(value) and not _is_data(value):
            out[name] = ("id", id(value))  # builtins, lru_cache wrappers, the FastAPI app
            continue
        out[name] = walker.state(value)
    return out


def changed_names(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What differs between two :func:`module_state` fingerprints, named for a person.

    A global's name (``_ORDER_CACHE``), a function's default argument, closure
    variable or attribute (``add_item (default argument)``, ``add_item.calls``)
    or a class attribute (``Store.orders``), in module order.
    """
    out: list[str] = []
    for name in [*before, *(n for n in after if n not in before)]:
        old, new = before.get(name, _MISSING), after.get(name, _MISSING)
        if old == new:
            continue
        if _tagged(old, "fn") and _tagged(new, "fn"):
            if old[1] != new[1] or old[2] != new[2]:
                out.append(f"{name} (default argument)")
            out.extend(f"{name} (closure variable {k})" for k in _diff_pairs(old[3], new[3]))
            out.extend(f"{name}.{k}" for k in _diff_pairs(old[4], new[4]))
        elif _tagged(old, "cls") and _tagged(new, "cls"):
            out.extend(f"{name}.{k}" for k in _diff_pairs(old[1], new[1]))
        else:
            out.append(name)
    return out


def _tagged(state: Any, tag: str) -> bool:
    return isinstance(state, tuple) and bool(state) and state[0] == tag


def _diff_pairs(old: tuple[tuple[str, Any], ...], new: tuple[tuple[str, Any], ...]) -> list[str]:
    a, b = dict(old), dict(new)
    return [
        k for k in [*a, *(k for k in b if k not in a)] if a.get(k, _MISSING) != b.get(k, _MISSING)
    ]


_MISSING = object()


# --------------------------------------------------------------------------- the check

LEAK_PHRASE = "module-level state leaks between instances"


def _brief(result: tuple[bool, str | None, Any]) -> str:
    is_error, error_type, content = result
    text = content if isinstance(content, str) else json.dumps(content, default=str)
    text = text if len(text) <= 120 else text[:117] + "..."
    return f"error {error_type or 'error'}: {text}" if is_error else text


def _difference(steps: Sequence[ToolCallStep], first: Replay, second: Replay) -> str | None:
    """How a replay of the same calls on a second fresh instance differs from the first, or None."""
    for i, (a, b) in enumerate(zip(first.results, second.results, strict=False)):
        if a != b:
            return f"step {i} ({steps[i].tool}) returned {_brief(b)!r} instead of {_brief(a)!r}"
    if first.final != second.final:
        return "the database it left differs"
    return None


class LeakCheck:
    """Catch state the app keeps outside the database, which every in-process instance shares.

    Instances of one environment share the imported ``app.py``: a global dict,
    list or counter a tool writes through one instance is seen by all others.
    Around each task this takes a fingerprint of the app module's data
    (:func:`module_state`), and after the reference
    solution ran once it is replayed on a second, fresh instance: the tool
    results and the final database must equal those of the first replay, as
    they would in a fresh process. That second replay usually costs one call:
    it doubles as the dropped-last-write trajectory (see
    :func:`awm_envs.validation.taskcheck.validate_task_with_replay`).
    """

    def __init__(self, env: RuntimeEnvironment, run_verifier: VerifierRunner) -> None:
        self.env = env
        self.run_verifier = run_verifier
        self.state = self._state()
        self.reported: set[str] = set()
        self.problems: list[str] = []
        self.unexplained: list[tuple[str, str]] = []  # (task id, difference) with no name found

    def _state(self) -> dict[str, Any] | None:
        if self.env.module is None:
            return None
        try:
            return module_state(self.env.module)
        except Exception:  # an object that cannot be walked: the replay comparison still runs
            return None

    def after_task(
        self, task: Task, validation: TaskValidation, ref: Replay, second: Replay | None
    ) -> None:
        steps = task.reference_solution or []
        detail = None
        if steps:
            if second is None:
                second = replay_steps(self.env, steps)
            detail = _difference(steps, ref, second)
            if detail is not None and task.verifier:
                detail += self._verdict_change(task, validation, second)
        state = self._state()
        changed = (
            changed_names(self.state, state) if self.state is not None and state is not None else []
        )
        self.state = state
        new = [n for n in changed if n not in self.reported]
        if new:
            self.reported.update(new)
            message = f"app.py: {LEAK_PHRASE}: {', '.join(new)} changed after task {task.id!r}"
            if detail is not None:
                message += f"; replayed on a second fresh instance, {detail}"
            self.problems.append(message)
        elif detail is not None and not changed:
            self.unexplained.append((task.id, detail))

    def _verdict_change(self, task: Task, validation: TaskValidation, second: Replay) -> str:
        first = next((c for c in validation.checks if c.kind == "reference"), None)
        if first is None:
            return ""
        result = self.run_verifier(
            task.verifier or "", second.initial, second.final, task.reference_answer
        )
        complete = bool(result.complete)
        if self.run_verifier.failure(result) is not None or complete == first.complete:
            return ""
        if is_undecided(result):  # evidence only: its "not complete" is no verdict to compare
            return ""
        return f", and the verifier then says {'complete' if complete else 'not complete'}"

    def report(self) -> list[str]:
        problems = list(self.problems)
        if self.unexplained:
            task_id, detail = self.unexplained[0]
            more = len(self.unexplained) - 1
            problems.append(
                f"app.py: {LEAK_PHRASE}: task {task_id!r}'s reference solution replayed on a "
                f"second fresh instance: {detail}"
                + (f" (and {more} more task(s) like it)" if more else "")
                + "; keep state in the database, not in globals, class attributes or caches "
                "(or make the tool deterministic: no random or uuid values)"
            )
        return problems
