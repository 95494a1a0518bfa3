"""A loaded environment: its app imported once, a plan per tool, and a factory of instances.

Everything here is per process and shared by all instances of the
environment: the imported module, the SQLAlchemy engine (and so its compiled
statement cache), the argument validators and the route plans. An instance
adds only its own SQLite connection.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from awm_envs.bundle import identity
from awm_envs.runtime.transactions import CallConnection

# SQLAlchemy, FastAPI and jsonschema are imported when the bundle loads (first use), so an
# Environment that is only named (serve's start-up, sandbox workers' parent) costs nothing.
if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from sqlalchemy import Engine

    from awm_core.models import EnvironmentManifest, Task, ToolSpec
    from awm_envs.bundle.loader import Bundle
    from awm_envs.runtime.dispatch import Plan
    from awm_envs.runtime.instance import Instance

_pending = threading.local()


def _take_pending_connection() -> CallConnection:
    """The engine's ``creator``: hand over the raw connection the new instance just opened."""
    conn: CallConnection | None = getattr(_pending, "conn", None)
    if conn is None:
        raise RuntimeError("awm engine used without an instance connection")
    _pending.conn = None
    return conn


class Environment:
    """One environment loaded in this process; make isolated instances with :meth:`instance`.

    Made from a loaded :class:`Bundle`, or (``Environment.at(path)``, what
    :func:`load_environment` returns) from a bundle folder whose ``app.py`` is
    imported on first use: ``instance()``, ``tools``, ``bundle``... An
    environment handed to sandbox workers (``EnvPool(env, workers=W)``, ``awm
    envs serve --workers N``) is only ever read for its ``path``, so its code
    never runs in this process.
    """

    _LAZY = frozenset(
        {"bundle", "tools", "tool_map", "validators", "plans", "engine", "sessions", "_engine_lock"}
    )

    def __init__(self, bundle: Bundle | None = None, *, path: Path | None = None) -> None:
        if path is not None:
            self._path = Path(path)
        elif bundle is not None:
            self._path = bundle.path
        else:
            raise TypeError("Environment needs a loaded bundle or a bundle folder path")
        self._load_lock = threading.Lock()
        if bundle is not None:
            self._init(bundle)

    @classmethod
    def at(cls, path: Path) -> Environment:
        """An environment whose bundle is loaded (app.py imported) on first use."""
        return cls(path=path)

    def _init(self, bundle: Bundle) -> None:
        from sqlalchemy import create_engine
        from sqlalchemy.orm import sessionmaker
        from sqlalchemy.pool import NullPool

        from awm_core.argcheck import make_validator
        from awm_envs.bundle.toolspecs import route_bindings
        from awm_envs.runtime.dispatch import bound_session, build_plans

        # The override is process-global but harmless: it reads the calling instance's
        # session from a ContextVar, so concurrent instances never see each other's.
        bundle.app.dependency_overrides[bundle.get_db] = bound_session
        self.tools: list[ToolSpec] = list(bundle.tools)
        self.tool_map: dict[str, ToolSpec] = {t.name: t for t in self.tools}
        self.validators: dict[str, Draft202012Validator] = {
            t.name: make_validator(t.input_schema) for t in self.tools
        }
        self.plans: dict[str, Plan] = build_plans(
            bundle.app, [t.name for t in self.tools], route_bindings(bundle.app)
        )
        self.engine: Engine = create_engine(
            "sqlite://", creator=_take_pending_connection, poolclass=NullPool
        )
        self.sessions = sessionmaker()
        self._engine_lock = threading.Lock()
        self.bundle = bundle  # last: its presence means "loaded"

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes not set yet: the loaded ones are plain attributes.
        if name in Environment._LAZY and "_load_lock" in self.__dict__:
            with self._load_lock:
                if "bundle" not in self.__dict__:
                    from awm_envs.bundle.loader import load_bundle

                    self._init(load_bundle(self._path))
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def loaded(self) -> bool:
        """Whether the bundle (and so its app.py) is loaded in this process."""
        return "bundle" in self.__dict__

    @property
    def manifest(self) -> EnvironmentManifest:
        """The bundle's manifest (read from manifest.json without importing app.py)."""
        if self.loaded:
            return self.bundle.manifest
        from awm_core.models import EnvironmentManifest

        return EnvironmentManifest.model_validate_json((self._path / "manifest.json").read_bytes())

    @property
    def id(self) -> str:
        if self.loaded:
            return self.bundle.id
        try:
            return self.manifest.id
        except (OSError, ValueError):
            return self._path.name

    @property
    def path(self) -> Path:
        return self.bundle.path if self.loaded else self._path.resolve()

    @property
    def digest(self) -> str:
        """The content digest of the bundle's files (read from disk; app.py is not imported)."""
        return identity.digest(self.path)

    @property
    def tasks(self) -> list[Task]:
        return self.bundle.tasks

    @property
    def verifier_source(self) -> str | None:
        """The text of the bundle's verifiers.py (None when it has none)."""
        return self.bundle.verifier_source

    @property
    def template(self) -> bytes:
        """The initial database image every instance starts from."""
        return self.bundle.template

    def open_connection(self) -> tuple[sqlite3.Connection, CallConnection, Any]:
        """A fresh raw connection holding the template, its call proxy and SQLAlchemy connection."""
        # isolation_level=None: the sqlite3 module never BEGINs on its own; CallConnection
        # owns the transaction boundaries.
        raw = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        raw.deserialize(self.bundle.template)
        raw.execute("PRAGMA foreign_keys = ON")
        proxy = CallConnection(raw)
        with self._engine_lock:  # the hand-over through _pending is per thread, the pool is not
            _pending.conn = proxy
            try:
                sa_conn = self.engine.connect()
            finally:
                _pending.conn = None
        return raw, proxy, sa_conn

    def instance(self, instance_id: str | None = None) -> Instance:
        """A new isolated in-process instance (trusted code: runs in this process)."""
        from awm_envs.runtime.instance import Instance

        return Instance(self, instance_id)

    def __repr__(self) -> str:
        tools = len(self.tools) if self.loaded else "not loaded"
        return f"Environment({self.id!r}, tools={tools}, path={str(self.path)!r})"


def load_environment(ref: str | Path, *, catalog: list[Path] | None = None) -> Environment:
    """An environment by catalog id or bundle folder path (cached per process).

    The bundle is found now; it is loaded and validated, and its ``app.py``
    imported, on first use (:meth:`Environment.instance`, ``tools``, ...),
    so an environment only handed to sandbox workers never runs its code
    here. ``catalog`` adds folders to search besides the registered catalogs
    and ``AWM_ENV_PATH``.
    """
    from awm_envs.bundle.sources import resolve_env

    path = resolve_env(ref, extra=catalog)
    key = identity.fingerprint(path)
    with _cache_lock:
        env = _cache.get(key)
        if env is None:
            env = Environment.at(path)
            _cache[key] = env
        return env


def is_cached(ref: str | Path) -> bool:
    """Whether :func:`load_environment` has an environment for the bundle at ``ref`` (a folder)."""
    key = identity.fingerprint(Path(ref))
    with _cache_lock:
        return key in _cache


def unload_environment(ref: str | Path) -> None:
    """Forget the bundle at folder ``ref`` in this process: :func:`load_environment`'s entry and
    its imported ``app.py`` module, so their memory goes once nothing else holds them.

    For a process that goes through many bundles once each (validation of an imported
    release); instances still open keep working, and loading the bundle again imports it
    afresh.
    """
    from awm_envs.bundle.loader import unload_bundle

    key = identity.fingerprint(Path(ref))
    with _cache_lock:
        env = _cache.pop(key, None)
    if env is not None and env.loaded:
        env.bundle.app.dependency_overrides.clear()
        unload_bundle(env.bundle)


_cache: dict[identity.Fingerprint, Environment] = {}  # an edited bundle is loaded afresh
_cache_lock = threading.Lock()
