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

RECORD_FILE = "awm-bundle.json"
# the files a bundle may consist of (docs/environment-format.md); nothing else is pulled
BUNDLE_FILES = (
    "manifest.json",
    "schema.sql",
    "seed.sql",
    "app.py",
    "tools.json",
    "tasks.json",
    "verifiers.py",
)
REQUIRED_FILES = ("manifest.json", "schema.sql", "seed.sql", "app.py")
SHA256_HEX = r"^[0-9a-f]{64}$"


class BundleRecord(BaseModel):
    """What ``awm-bundle.json`` holds: the bundle's id, its files' sha256 and their digest."""

    model_config = ConfigDict(extra="forbid")

    awm_bundle_record: int = Field(default=1, description="Version of this record's layout.")
    env_id: str = Field(description="The manifest's id.")
    files: dict[str, str] = Field(description="Bundle file name -> sha256 (hex) of its bytes.")
    digest: str = Field(pattern=SHA256_HEX, description="sha256 over the sorted (name, sha256).")


def file_sha256(path: Path) -> str:
    """sha256 (hex) of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def files_digest(files: dict[str, str]) -> str:
    """The digest of a file list: sha256 over ``name NUL sha256 LF`` in name order."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(f"{name}\0{files[name]}\n".encode())
    return h.hexdigest()


def read_bundle_files(path: Path) -> dict[str, bytes]:
    """The bundle files of folder ``path`` (read once: the bytes hashed are the bytes uploaded)."""
    return {name: (path / name).read_bytes() for name in BUNDLE_FILES if (path / name).is_file()}


def build_record(contents: dict[str, bytes], env_id: str) -> BundleRecord:
    """The record of a bundle's files (name -> bytes)."""
    files = {name: hashlib.sha256(data).hexdigest() for name, data in contents.items()}
    return BundleRecord(env_id=env_id, files=files, digest=files_digest(files))


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
    if files_digest(record.files) != record.digest:
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
