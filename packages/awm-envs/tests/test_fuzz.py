"""Fuzz every tool of every bundle in the repository inside a sandbox worker.

Malformed, missing, extra, wrongly typed, huge (1 MB), unicode and
SQL-injection arguments, and unknown tool names: no worker dies, every
must-fail call is an error result, and every rejected call leaves the
database byte-for-byte unchanged.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fuzz_cases import HUGE, INJECTION, UNICODE, may_pass_cases, must_fail_cases
from hostile import FIXTURES

from awm_envs import BundleError, load_bundle
from awm_envs.bundle.sources import CATALOG_DIR, FolderSource
from awm_envs.pool.remote import WorkerPool


def _bundles() -> list[Path]:
    found = [p for p in sorted(FIXTURES.iterdir()) if (p / "manifest.json").is_file()]
    catalog = FolderSource(CATALOG_DIR)
    found += [catalog.path(i) for i in catalog.list_ids()]
    return found


@pytest.mark.parametrize("bundle_path", _bundles(), ids=lambda p: p.name)
def test_fuzz_every_tool(bundle_path: Path) -> None:
    try:
        tools = load_bundle(bundle_path).tools
    except BundleError as exc:
        pytest.skip(
            f"bundle does not load (its own validation tests report why): {exc.problems[:2]}"
        )

    async def run() -> None:
        async with WorkerPool(1, call_timeout=20) as pool:
            pid = pool.workers[0].pid
            inst = await pool.create(bundle_path)
            image = await inst.snapshot()
            for name in ("", "no_such_tool", UNICODE, INJECTION, HUGE[:10_000], "../app"):
                result = await inst.call_tool(name, {})
                assert result.is_error and result.error_type == "unknown_tool", name[:40]
            for spec in tools:
                for label, args in must_fail_cases(spec):
                    result = await inst.call_tool(spec.name, args)
                    assert result.is_error, f"{spec.name}: {label} was accepted"
                    assert result.error_type != "environment_error", (
                        f"{spec.name}: {label}: {result.content}"
                    )
                    assert await inst.snapshot() == image, (
                        f"{spec.name}: {label} changed the database"
                    )
                for label, args in may_pass_cases(spec):
                    result = await inst.call_tool(spec.name, args)
                    assert result.error_type != "environment_error", (
                        f"{spec.name}: {label}: {result.content}"
                    )
                    if result.is_error:
                        assert await inst.snapshot() == image, (
                            f"{spec.name}: rejected {label} changed the database"
                        )
                    else:
                        await inst.reset()
                        image = await inst.snapshot()
            assert pool.replaced == 0 and pool.workers[0].pid == pid and pool.workers[0].alive

    asyncio.run(run())
