"""``awm envs pull`` / ``awm envs push``: environment bundles on the Hugging Face hub.

A bundle is published as the files of one hub repository (a dataset repository
by default) plus ``awm-bundle.json``, its content record
(:mod:`awm_envs.hub.record`). Pulling downloads exactly the recorded files of
one commit into a staging folder, checks them (content hash, manifest) and only
then installs them into the cache (:mod:`awm_envs.hub.cache`); nothing of a
bundle that fails a check is kept. Pulling never imports the bundle's code:
``awm envs serve``/``validate`` run it later, sandboxed like any bundle from
outside the shipped catalog.

Every call goes through ``huggingface_hub`` (the ``[hub]`` extra) with an
explicit endpoint: ``endpoint=``, else ``HF_ENDPOINT``, else huggingface.co.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from awm_envs.bundle import identity
from awm_envs.hub.cache import hub_cache_dir, install, read_origin, staging_dir
from awm_envs.hub.errors import (
    BundleIntegrityError,
    HubConnectionError,
    HubError,
    HubPermissionError,
    HubRepoNotFoundError,
    HubUnavailableError,
    NotABundleRepoError,
    PulledBundleConflictError,
    PushRefusedError,
)
from awm_envs.hub.record import (
    RECORD_FILE,
    BundleRecord,
    build_record,
    check_files,
    parse_record,
    record_bytes,
    record_problems,
)

DEFAULT_ENDPOINT = "https://huggingface.co"
REPO_TYPES = ("dataset", "model")
LOCAL_NAME = re.compile(r"^[a-z0-9][a-z0-9_\-]*$")


@dataclass(frozen=True)
class PulledBundle:
    """A bundle installed by :func:`pull_bundle`: where it lives and exactly what it is."""

    name: str
    path: Path
    env_id: str
    repo_id: str
    repo_type: str
    endpoint: str
    revision: str | None
    commit: str
    digest: str
    files: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form."""
        return {**asdict(self), "path": str(self.path)}


@dataclass(frozen=True)
class PushedBundle:
    """What :func:`push_bundle` uploaded, and the commit it made."""

    path: Path
    env_id: str
    repo_id: str
    repo_type: str
    endpoint: str
    commit: str
    commit_url: str
    digest: str
    files: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form."""
        return {**asdict(self), "path": str(self.path)}


def resolve_endpoint(endpoint: str | None = None) -> str:
    """The hub to talk to: ``endpoint``, else ``HF_ENDPOINT``, else huggingface.co."""
    return (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def _huggingface_hub() -> ModuleType:
    try:
        import huggingface_hub
    except ImportError as exc:
        raise HubUnavailableError() from exc
    return huggingface_hub


@contextmanager
def _hub_errors(
    repo_id: str, repo_type: str, endpoint: str, revision: str | None
) -> Iterator[None]:
    """Turn ``huggingface_hub``/``httpx`` exceptions into awm's typed hub errors."""
    from huggingface_hub import errors as hf_errors

    try:
        yield
    except (hf_errors.RepositoryNotFoundError, hf_errors.RevisionNotFoundError) as exc:
        raise HubRepoNotFoundError(repo_id, repo_type, endpoint, revision) from exc
    except (hf_errors.LocalEntryNotFoundError, hf_errors.OfflineModeIsEnabled) as exc:
        # hf_hub_download's way of saying the network call failed and nothing is cached
        cause = exc.__cause__ or exc
        raise HubConnectionError(endpoint, _first_line(cause)) from exc
    except hf_errors.HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else 0
        if status in (401, 403):
            raise HubPermissionError(repo_id, f"HTTP {status}") from exc
        if status >= 500 or status == 0:
            raise HubConnectionError(endpoint, f"the server answered HTTP {status}") from exc
        raise HubError(f"the hub at {endpoint} answered HTTP {status}: {_first_line(exc)}") from exc
    except _transport_errors() as exc:  # connection refused, DNS, timeouts, broken transfers
        raise HubConnectionError(endpoint, _first_line(exc) or type(exc).__name__) from exc


def _transport_errors() -> tuple[type[Exception], ...]:
    """The HTTP client's base exception: ``httpx`` under huggingface_hub 1.x, ``httpx2`` under 2.x.

    Both are caught when both are installed, so a hub call that fails below
    huggingface_hub's own error types is a :class:`HubConnectionError` on either major.
    """
    errors: list[type[Exception]] = []
    for module in ("httpx", "httpx2"):
        try:
            errors.append(importlib.import_module(module).HTTPError)
        except ImportError:
            continue
    return tuple(errors)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip(".")


def _download(
    hf: ModuleType,
    repo_id: str,
    filename: str,
    *,
    repo_type: str,
    commit: str,
    into: Path,
    endpoint: str,
    token: str | bool | None,
) -> Path:
    path = hf.hf_hub_download(
        repo_id,
        filename,
        repo_type=repo_type,
        revision=commit,
        local_dir=into,
        endpoint=endpoint,
        token=token,
    )
    return Path(path)


def pull_bundle(
    repo_id: str,
    *,
    revision: str | None = None,
    name: str | None = None,
    repo_type: str = "dataset",
    endpoint: str | None = None,
    token: str | bool | None = None,
    force: bool = False,
) -> PulledBundle:
    """Download the bundle in hub repository ``repo_id``, check it, install it into the cache.

    ``name`` is the local name (default: the manifest's id); afterwards the
    bundle is found by that name, or by the returned ``path``. A different
    repository's bundle already installed under that name is replaced only with
    ``force``. Raises a :class:`~awm_envs.hub.errors.HubError` subclass for an
    unknown repository, an unreachable hub, a repository that holds no bundle,
    and a download that does not match its content record.
    """
    hf = _huggingface_hub()
    endpoint = resolve_endpoint(endpoint)
    if name is not None and not LOCAL_NAME.match(name):
        raise HubError(f"invalid local name {name!r}: use lowercase letters, digits, '_' and '-'")
    api = hf.HfApi(endpoint=endpoint, token=token)
    with _hub_errors(repo_id, repo_type, endpoint, revision):
        info = api.repo_info(repo_id, repo_type=repo_type, revision=revision)
    commit = str(info.sha)
    remote_files = [s.rfilename for s in info.siblings or []]
    if "manifest.json" not in remote_files:
        raise NotABundleRepoError(repo_id, "it has no manifest.json", remote_files)
    if RECORD_FILE not in remote_files:
        raise NotABundleRepoError(
            repo_id, f"it has no {RECORD_FILE} (the content record push writes)", remote_files
        )

    with staging_dir() as staged:
        files = staged / "files"
        kwargs: dict[str, Any] = {
            "repo_type": repo_type,
            "commit": commit,
            "into": files,
            "endpoint": endpoint,
            "token": token,
        }
        with _hub_errors(repo_id, repo_type, endpoint, revision):
            record_path = _download(hf, repo_id, RECORD_FILE, **kwargs)
        try:
            record = parse_record(record_path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise BundleIntegrityError(repo_id, [f"{RECORD_FILE}: unreadable: {exc}"]) from exc
        problems = record_problems(record)  # before any name in it is used as a path
        if problems:
            raise BundleIntegrityError(repo_id, problems)
        missing = [f for f in record.files if f not in remote_files]
        if missing:
            raise BundleIntegrityError(
                repo_id,
                [f"{f}: listed in {RECORD_FILE} but not in the repository" for f in missing],
            )
        with _hub_errors(repo_id, repo_type, endpoint, revision):
            for filename in sorted(record.files):
                _download(hf, repo_id, filename, **kwargs)
        problems = check_files(files, record)
        if problems:
            raise BundleIntegrityError(repo_id, problems)
        env_id = _check_manifest(repo_id, files, record, remote_files)
        local = name or env_id
        _check_conflict(local, repo_id, endpoint, force)
        origin = {
            "endpoint": endpoint,
            "repo_id": repo_id,
            "repo_type": repo_type,
            "revision": revision,
            "commit": commit,
            "digest": record.digest,
            "env_id": env_id,
            "pulled_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        path = install(files, local, sorted(record.files), origin)
    return PulledBundle(
        name=local,
        path=path,
        env_id=env_id,
        repo_id=repo_id,
        repo_type=repo_type,
        endpoint=endpoint,
        revision=revision,
        commit=commit,
        digest=record.digest,
        files=sorted(record.files),
    )


def _check_manifest(
    repo_id: str, files: Path, record: BundleRecord, remote_files: list[str]
) -> str:
    """The manifest's id, after checking it parses and matches the record."""
    from pydantic import ValidationError

    from awm_core.models import EnvironmentManifest

    try:
        manifest = EnvironmentManifest.model_validate_json(
            (files / "manifest.json").read_text(encoding="utf-8")
        )
    except (ValidationError, ValueError) as exc:
        reason = f"its manifest.json is not a valid manifest ({_first_line(exc)})"
        raise NotABundleRepoError(repo_id, reason, remote_files) from exc
    if manifest.id != record.env_id:
        raise BundleIntegrityError(
            repo_id,
            [f"manifest.json: id {manifest.id!r} is not the recorded env_id {record.env_id!r}"],
        )
    return manifest.id


def _check_conflict(name: str, repo_id: str, endpoint: str, force: bool) -> None:
    target = hub_cache_dir() / name
    if force or not target.exists():
        return
    origin = read_origin(target)
    if origin and origin.get("repo_id") == repo_id and origin.get("endpoint") == endpoint:
        return  # an update of the same bundle
    what = (
        f"a bundle pulled from {origin.get('repo_id')!r} on {origin.get('endpoint')}"
        if origin
        else "a folder that was not pulled"
    )
    raise PulledBundleConflictError(name, str(target), what)


def push_bundle(
    path: str | Path,
    repo_id: str,
    *,
    repo_type: str = "dataset",
    private: bool | None = None,
    revision: str | None = None,
    endpoint: str | None = None,
    token: str | bool | None = None,
    message: str | None = None,
) -> PushedBundle:
    """Upload the bundle folder ``path`` to hub repository ``repo_id`` (created if missing).

    The bundle must load (:func:`awm_envs.load_bundle`); otherwise
    :class:`~awm_envs.hub.errors.PushRefusedError` lists its problems and nothing
    is uploaded. One commit writes its bundle files and ``awm-bundle.json`` and
    deletes bundle files the repository had that this bundle no longer has.
    """
    from awm_envs.bundle.loader import load_bundle
    from awm_envs.errors import BundleError

    hf = _huggingface_hub()
    root = Path(path)
    try:
        bundle = load_bundle(root)
    except BundleError as exc:
        raise PushRefusedError(str(root), [str(p) for p in exc.problems]) from exc
    env_id = bundle.manifest.id
    contents = identity.read_files(root)  # read once: the bytes hashed are the bytes uploaded
    record = build_record(contents, env_id)

    endpoint = resolve_endpoint(endpoint)
    api = hf.HfApi(endpoint=endpoint, token=token)
    with _hub_errors(repo_id, repo_type, endpoint, revision):
        api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True)
        info = api.repo_info(repo_id, repo_type=repo_type, revision=revision)
        existing = {s.rfilename for s in info.siblings or []}
        stale = sorted(n for n in identity.BUNDLE_FILES if n in existing and n not in contents)
        operations: list[Any] = [
            hf.CommitOperationAdd(path_in_repo=n, path_or_fileobj=b) for n, b in contents.items()
        ]
        operations.append(
            hf.CommitOperationAdd(path_in_repo=RECORD_FILE, path_or_fileobj=record_bytes(record))
        )
        operations += [hf.CommitOperationDelete(path_in_repo=n) for n in stale]
        commit = api.create_commit(
            repo_id,
            operations=operations,
            commit_message=message or f"awm envs push {env_id} ({record.digest[:12]})",
            repo_type=repo_type,
            revision=revision,
        )
    return PushedBundle(
        path=root,
        env_id=env_id,
        repo_id=repo_id,
        repo_type=repo_type,
        endpoint=endpoint,
        commit=str(commit.oid),
        commit_url=str(commit.commit_url),
        digest=record.digest,
        files=sorted(contents),
        deleted=stale,
    )
