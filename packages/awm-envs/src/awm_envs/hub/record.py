"""The content record pushed next to a bundle (``awm-bundle.json``) and the check against it.

The record lists every bundle file with its sha256 and a digest over the list.
``awm envs pull`` downloads exactly the files it names and refuses the bundle
if any file differs, is missing, or is not a bundle file. The record is an
integrity check (a download matches what was pushed), not a signature: whoever
can write to the repository can write a matching record, so a pulled bundle is
still untrusted code (it runs sandboxed, docs/security.md).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from awm_envs.bundle.identity import BUNDLE_FILES, REQUIRED_FILES, file_hashes, hashes_digest

RECORD_FILE = "awm-bundle.json"
SHA256_HEX = r"^[0-9a-f]{64}$"


class BundleRecord(BaseModel):
    """What ``awm-bundle.json`` holds: the bundle's id, its files' sha256 and their digest."""

    model_config = ConfigDict(extra="forbid")

    awm_bundle_record: int = Field(default=1, description="Version of this record's layout.")
    env_id: str = Field(description="The manifest's id.")
    files: dict[str, str] = Field(description="Bundle file name -> sha256 (hex) of its bytes.")
    digest: str = Field(
        pattern=SHA256_HEX,
        description="The bundle's digest: sha256 over the sorted (name, sha256).",
    )


def file_sha256(path: Path) -> str:
    """sha256 (hex) of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_record(contents: dict[str, bytes], env_id: str) -> BundleRecord:
    """The record of a bundle's files (name -> bytes)."""
    files = file_hashes(contents)
    return BundleRecord(env_id=env_id, files=files, digest=hashes_digest(files))


def record_bytes(record: BundleRecord) -> bytes:
    """``awm-bundle.json`` as written to the hub."""
    return (json.dumps(record.model_dump(), indent=2) + "\n").encode()


def parse_record(text: str) -> BundleRecord:
    """Parse ``awm-bundle.json``; raises ``ValueError`` (pydantic's included) when malformed."""
    return BundleRecord.model_validate(json.loads(text))


def record_problems(record: BundleRecord) -> list[str]:
    """What is wrong with a record itself, before any file is fetched by its names."""
    problems = [
        f"{RECORD_FILE}: {name!r} is not a bundle file (allowed: {', '.join(BUNDLE_FILES)})"
        for name in sorted(record.files)
        if name not in BUNDLE_FILES
    ]
    problems += [
        f"{RECORD_FILE}: the required file {name} is not listed"
        for name in REQUIRED_FILES
        if name not in record.files
    ]
    if hashes_digest(record.files) != record.digest:
        problems.append(f"{RECORD_FILE}: digest does not match its own file list")
    return problems


def check_files(path: Path, record: BundleRecord) -> list[str]:
    """Every way the folder ``path`` differs from ``record`` (empty when it matches)."""
    problems = record_problems(record)
    for name, expected in sorted(record.files.items()):
        target = path / name
        if not target.is_file():
            problems.append(f"{name}: listed in {RECORD_FILE} but not downloaded")
            continue
        actual = file_sha256(target)
        if actual != expected:
            problems.append(
                f"{name}: sha256 {actual[:16]}... is not the recorded {expected[:16]}..."
            )
    for name in BUNDLE_FILES:
        if name not in record.files and (path / name).exists():
            problems.append(f"{name}: present but not listed in {RECORD_FILE}")
    return problems
