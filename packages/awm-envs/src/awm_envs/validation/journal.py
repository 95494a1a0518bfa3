"""A journal of finished environment validations, so a killed ``awm envs validate`` resumes.

Validating the AWM-1K release takes about an hour; a run killed at environment 700
must not start again from the first. ``awm envs validate --journal FILE`` appends
each environment's full result to FILE (one JSON line) as soon as it is finished,
and a run with the same FILE takes the result from there instead of validating
again, when the bundle's content (:func:`awm_envs.bundle.identity.digest`), its
folder and the options that change a verdict are the same. The rerun's report is
therefore the one an uninterrupted run gives. A line cut short by a kill is
ignored (and cut off before the next one is appended), so nothing is corrupted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from awm_envs.bundle import identity
from awm_envs.validation.results import EnvValidation

JOURNAL_VERSION = 1


def _key(path: str, digest: str, options: dict[str, Any]) -> str:
    return json.dumps([path, digest, options], sort_keys=True)


class ValidationJournal:
    """Results of finished environments, by bundle folder, content and options.

    ``options`` is what else decides a verdict (sandbox, ``--require-proof``, the
    judge model): a result is reused only under the same options.
    """

    def __init__(self, path: Path, options: dict[str, Any]) -> None:
        self.path = path
        self.options = {**options, "journal_version": JOURNAL_VERSION}
        self._done: dict[str, list[EnvValidation]] = {}
        self.reused = 0
        self._load()

    def _load(self) -> None:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        if data and not data.endswith(b"\n"):  # a line cut short by a kill
            data = data[: data.rfind(b"\n") + 1]
            with self.path.open("r+b") as fh:
                fh.truncate(len(data))
        for line in data.splitlines():
            try:
                entry = json.loads(line)
                key = _key(entry["path"], entry["digest"], entry["options"])
                results = [EnvValidation.model_validate(r) for r in entry["results"]]
            except (ValueError, KeyError, TypeError):
                continue  # not a line this version wrote: validate that environment again
            self._done[key] = results

    def _key_for(self, env_dir: Path) -> str:
        return _key(str(env_dir.resolve()), identity.digest(env_dir), self.options)

    def lookup(self, env_dir: Path) -> list[EnvValidation] | None:
        """The recorded results for this bundle as it is now, or ``None``."""
        found = self._done.get(self._key_for(env_dir))
        if found is not None:
            self.reused += 1
        return found

    def record(self, env_dir: Path, results: list[EnvValidation]) -> None:
        """Append one finished environment; written and flushed before returning."""
        entry = {
            "path": str(env_dir.resolve()),
            "digest": identity.digest(env_dir),
            "options": self.options,
            "results": [r.model_dump(mode="json") for r in results],
        }
        line = (json.dumps(entry, default=str) + "\n").encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)  # one write: another line is never interleaved into it
        finally:
            os.close(fd)
        self._done[self._key_for(env_dir)] = results
