"""Which bundle a training row means, found again on whichever node rolls it out.

``awm train prepare`` writes into every row's ``extra_info`` where the
environment's bundle came from (:class:`BundleRef`: the catalog, a bundle
folder, or a bundle pulled from the hub) and its content digest
(:attr:`awm_envs.Environment.digest`). verl runs the agent loop in Ray actors
that may sit on another machine, so the loop resolves the row there
(:class:`BundleResolver`), trying in order:

1. a catalog row: its id, then the catalog folder shipped in the wheel;
2. a bundle row: the folder path recorded in the row (a shared file system),
   then its name in ``AWM_ENV_PATH``, the hub cache (``awm envs pull``) and the
   registered sources;

3. a hub row found nowhere on the node: the exact commit the data were prepared
   from is pulled from the recorded hub repository (what ``awm envs pull``
   does, into this node's cache), once per node, unless ``AWM_BUNDLE_PULL=0``;

and uses the first candidate whose digest is the row's. The hub names content by
commit, not by awm's content digest, so the row keeps both: the commit to fetch
and the digest the fetched bundle must have. A bundle found only with another
digest is refused (:class:`BundleMismatchError`), a bundle found nowhere is
:class:`BundleNotFoundError`; both say what was tried and how to fix it,
including the ``awm envs pull`` command to run by hand where a node cannot reach
the hub.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from awm_core.errors import AWMError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from awm_envs import Environment

__all__ = [
    "BundleMismatchError",
    "BundleNotFoundError",
    "BundleRef",
    "BundleResolutionError",
    "BundleResolver",
    "bundle_ref",
    "check_bundles",
]

log = logging.getLogger(__name__)

CATALOG, BUNDLE, HUB = "catalog", "bundle", "hub"
_HUB_ORIGIN = ".awm-hub.json"  # what `awm envs pull` writes into a pulled bundle (docs/hub.md)
_DEFAULT_HUB = "https://huggingface.co"


class BundleResolutionError(AWMError):
    """A row's environment cannot be loaded as the dataset recorded it."""


class BundleMismatchError(BundleResolutionError):
    """Every bundle found for a row has other content than the row's digest says."""

    def __init__(self, env_id: str, expected: str, found: list[tuple[str, str]], fix: str) -> None:
        self.env_id, self.expected, self.found, self.fix = env_id, expected, list(found), fix
        where = "; ".join(f"{place} has digest {digest[:12]}" for place, digest in self.found)
        super().__init__(
            f"environment {env_id!r}: the dataset was prepared from bundle digest "
            f"{expected[:12]}, but {where}. Rolling out on other content would train on "
            f"another environment than the data names. {fix}"
        )

    def __reduce__(self) -> tuple[Any, ...]:  # crosses Ray process boundaries intact
        return (type(self), (self.env_id, self.expected, self.found, self.fix))


class BundleNotFoundError(BundleResolutionError):
    """No candidate location of a row's bundle exists on this node."""

    def __init__(self, env_id: str, tried: list[str], fix: str) -> None:
        self.env_id, self.tried, self.fix = env_id, list(tried), fix
        super().__init__(
            f"environment {env_id!r} is not on this node (tried: {'; '.join(self.tried)}). {fix}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.env_id, self.tried, self.fix))


@dataclass(frozen=True)
class BundleRef:
    """Where a row's bundle comes from and which content it must have.

    ``source``: ``catalog`` (found by id in the shipped catalog), ``bundle`` (a
    folder) or ``hub`` (pulled with ``awm envs pull``). ``path``: the folder it
    was read from when the data were prepared (empty for the catalog, whose
    place differs per install). ``digest``: the bundle's content digest (empty in
    rows written before digests travelled: then nothing is checked). ``pull``:
    for a hub bundle, the arguments of the ``awm envs pull`` that fetches it.
    """

    env_id: str
    digest: str = ""
    source: str = CATALOG
    path: str = ""
    pull: str = ""

    @property
    def name(self) -> str:
        """The id to look the bundle up by: its folder's name (what ``AWM_ENV_PATH`` lists)."""
        return Path(self.path).name if self.path else self.env_id

    def row_fields(self) -> dict[str, str]:
        """The ``extra_info`` fields a row carries (strings, so every parquet row has one layout)."""
        return {
            "env_id": self.env_id,
            "bundle_sha256": self.digest,
            "bundle_source": self.source,
            "bundle_path": self.path,
            "bundle_pull": self.pull,
        }

    @classmethod
    def from_row(cls, extra_info: Mapping[str, Any]) -> BundleRef:
        """The reference in a row's ``extra_info`` (rows of older datasets: the id alone)."""
        path = str(extra_info.get("bundle_path") or "")
        source = str(extra_info.get("bundle_source") or (BUNDLE if path else CATALOG))
        return cls(
            env_id=str(extra_info["env_id"]),
            digest=str(extra_info.get("bundle_sha256") or ""),
            source=source,
            path=path,
            pull=str(extra_info.get("bundle_pull") or ""),
        )


_PULL_LOCK = threading.Lock()


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _pull_kwargs(pull: str) -> dict[str, Any]:
    """:func:`awm_envs.hub.pull_bundle` arguments from a row's ``bundle_pull`` (what :func:`_pull_arguments` wrote)."""
    words = shlex.split(pull)
    if not words or words[0].startswith("-"):
        raise ValueError("no repository")
    flags = {
        "--revision": "revision",
        "--repo-type": "repo_type",
        "--endpoint": "endpoint",
        "--as": "name",
    }
    kwargs: dict[str, Any] = {"repo_id": words[0]}
    rest = words[1:]
    if len(rest) % 2:
        raise ValueError(f"{rest[-1]!r} has no value")
    for flag, value in zip(rest[::2], rest[1::2], strict=True):
        if flag not in flags:
            raise ValueError(f"unknown option {flag!r}")
        kwargs[flags[flag]] = value
    if "revision" not in kwargs:
        raise ValueError("no --revision: the row does not name a commit")
    return kwargs


def _pull_arguments(path: Path, env_id: str) -> str:
    """``awm envs pull`` arguments that fetch the pulled bundle at ``path`` again ("" if not pulled)."""
    try:
        origin = json.loads((path / _HUB_ORIGIN).read_text(encoding="utf-8"))
        repo, commit = str(origin["repo_id"]), str(origin["commit"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    args = [repo, "--revision", commit]
    if origin.get("repo_type", "dataset") != "dataset":
        args += ["--repo-type", str(origin["repo_type"])]
    if str(origin.get("endpoint") or _DEFAULT_HUB).rstrip("/") != _DEFAULT_HUB:
        args += ["--endpoint", str(origin["endpoint"])]
    if path.name != env_id:
        args += ["--as", path.name]
    return shlex.join(args)


def bundle_ref(env: Environment) -> BundleRef:
    """Where ``env`` was loaded from, for rows that must find it again on another node."""
    from awm_envs import CATALOG_DIR

    path = env.path.resolve()
    if path.parent == CATALOG_DIR.resolve():
        return BundleRef(env.id, env.digest, CATALOG)
    pull = _pull_arguments(path, env.id)
    return BundleRef(env.id, env.digest, HUB if pull else BUNDLE, str(path), pull)


def _fix(ref: BundleRef) -> str:
    if ref.source == CATALOG:
        return (
            "Install the same awm-envs version on every node (the catalog ships in its wheel), "
            f"or remove the {ref.name!r} that AWM_ENV_PATH puts before it."
        )
    steps = [
        f"put the bundle the data were prepared from at {ref.path} on every node (a shared "
        f"file system), or in a folder listed in AWM_ENV_PATH as {ref.name}/"
    ]
    if ref.pull:
        steps.append(f"run `awm envs pull {ref.pull}` on every node")
    return (
        "To fix: "
        + ", or ".join(steps)
        + "; if the bundle changed on purpose, prepare the data again (awm train prepare)."
    )


class BundleResolver:
    """Loads rows' environments, caching each success per process and logging each failure once."""

    def __init__(self) -> None:
        self._done: dict[BundleRef, Environment] = {}
        self._logged: set[str] = set()
        self._lock = threading.Lock()

    def resolve(self, ref: BundleRef) -> Environment:
        """The environment ``ref`` names, with the recorded content; raises a :class:`BundleResolutionError`."""
        with self._lock:
            env = self._done.get(ref)
        if env is not None:
            return env
        try:
            env = self._find(ref)
        except BundleResolutionError as exc:
            message = str(exc)
            with self._lock:
                first = message not in self._logged
                self._logged.add(message)
            if first:  # verl logs every failed trajectory too; this is the one to read
                log.error("awm cannot roll out this row's environment: %s", message)
            raise
        with self._lock:
            self._done[ref] = env
        return env

    def _candidates(self, ref: BundleRef) -> list[tuple[str, Path | str]]:
        from awm_envs import CATALOG_DIR

        if ref.source == CATALOG:
            return [(f"id {ref.name!r}", ref.name), ("the catalog", CATALOG_DIR / ref.name)]
        out: list[tuple[str, Path | str]] = []
        if ref.path:
            out.append((f"the recorded path {ref.path}", Path(ref.path)))
        out.append((f"id {ref.name!r} (AWM_ENV_PATH, pulled bundles, catalogs)", ref.name))
        return out

    def _find(self, ref: BundleRef) -> Environment:
        from awm_envs import EnvironmentNotFoundError, load_environment

        tried: list[str] = []
        found: list[tuple[str, str]] = []
        seen: set[Path] = set()
        for label, where in self._candidates(ref):
            if isinstance(where, Path) and not (where / "manifest.json").is_file():
                tried.append(f"{label} (not there)")
                continue
            try:
                env = load_environment(where)
            except EnvironmentNotFoundError:
                tried.append(f"{label} (not found)")
                continue
            if env.path in seen:
                continue
            seen.add(env.path)
            digest = env.digest
            if not ref.digest or digest == ref.digest:
                return env
            found.append((str(env.path), digest))
        if not found and ref.source == HUB and ref.pull:
            pulled = self._pull(ref, tried)
            if pulled is not None:
                if not ref.digest or pulled.digest == ref.digest:
                    return pulled
                found.append((f"{pulled.path} (pulled just now)", pulled.digest))
        if found:
            raise BundleMismatchError(ref.env_id, ref.digest, found, _fix(ref))
        raise BundleNotFoundError(ref.env_id, tried, _fix(ref))

    def _pull(self, ref: BundleRef, tried: list[str]) -> Environment | None:
        """The row's hub commit pulled into this node's cache, or None (why is added to ``tried``)."""
        from awm_envs import HubError, load_environment, pull_bundle

        label = f"`awm envs pull {ref.pull}`"
        if os.environ.get("AWM_BUNDLE_PULL", "1").strip().lower() in {"0", "false", "no", "off"}:
            tried.append(f"{label} (not run: AWM_BUNDLE_PULL=0)")
            return None
        try:
            kwargs = _pull_kwargs(ref.pull)
        except ValueError as exc:
            tried.append(f"{label} (unreadable: {exc})")
            return None
        with _PULL_LOCK:  # one download per process; a finished one is found on disk
            try:
                pulled = pull_bundle(**kwargs)
            except HubError as exc:
                tried.append(f"{label} ({_one_line(exc)})")
                return None
        log.info("pulled %s at %s into %s", kwargs["repo_id"], kwargs["revision"], pulled.path)
        return load_environment(pulled.path)


def check_bundles(extra_infos: Iterable[Mapping[str, Any]]) -> list[BundleResolutionError]:
    """Resolve every distinct bundle of some rows' ``extra_info`` here; the errors, one per bundle.

    A pre-flight for a node before training starts: the agent loop would meet the
    same errors one trajectory at a time.
    """
    resolver = BundleResolver()
    errors: list[BundleResolutionError] = []
    for ref in dict.fromkeys(BundleRef.from_row(e) for e in extra_infos):
        try:
            resolver.resolve(ref)
        except BundleResolutionError as exc:
            errors.append(exc)
    return errors
