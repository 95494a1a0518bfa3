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
import pathlib
import random
import types
import uuid
from typing import Any

__all__ = ["changed_names", "module_state"]

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
