"""Workers forked from one template are as separate as workers in sandboxes of their own.

Forked workers share their template's bubblewrap sandbox (one uid, one ``/tmp``, one PID
namespace), which is what training over many environments uses (``EnvFleet``,
``template=True``). A hostile tool in one environment must not reach the template or any
sibling: not their memory, not a sibling's shipped bundle before or after it is imported,
not by any signal route, not through a shared file. Each test fails with the protection
it checks removed (a template that stays dumpable, workers without a Landlock domain).

CI runs as root; :func:`test_the_same_holds_for_an_unprivileged_user` runs this module
again under uid 65534.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from siblings import sibling_bundle

from awm_envs import EnvPool
from awm_envs.pool.worker_template import ForkedWorker
from awm_envs.sandbox import detect

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not detect().isolated, reason=f"no OS isolation here: {detect().reason}"),
]


def _content(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    content = result.content
    return content if isinstance(content, dict) else json.loads(str(content))


def _pool(bundle: Path) -> EnvPool:
    return EnvPool(bundle, size=1, workers=1, template=True)


def test_a_tool_cannot_read_or_write_the_template_memory(tmp_path: Path) -> None:
    bundle = sibling_bundle(tmp_path)

    async def run() -> dict[str, Any]:
        async with _pool(bundle) as pool, pool.instance() as inst:
            assert isinstance(pool.worker_pool.workers[0].proc, ForkedWorker)
            return _content(await inst.call_tool("probe_memory", {"target": "parent"}))

    seen = asyncio.run(run())
    assert seen["read"] is not True and seen["write"] is not True, seen


def test_a_tool_cannot_read_or_write_a_sibling_memory(tmp_path: Path) -> None:
    bundle = sibling_bundle(tmp_path)

    async def run() -> dict[str, Any]:
        async with _pool(bundle) as attacker, _pool(bundle) as bystander:
            target = bystander.worker_pool.workers[0].proc
            assert isinstance(target, ForkedWorker)
            async with attacker.instance() as inst:
                seen = await inst.call_tool("probe_memory", {"target": str(target.inner_pid)})
            async with bystander.instance() as other:
                assert not (await other.call_tool("get_book", {"book_id": 1})).is_error
            return _content(seen)

    seen = asyncio.run(run())
    assert seen["read"] is not True and seen["write"] is not True, seen


def test_a_tool_cannot_rewrite_environments_opened_after_it(tmp_path: Path) -> None:
    """The attacker keeps appending a failing line to every shipped ``app.py`` it can reach
    while other environments are opened next to it: each must load its own code."""
    attacker_bundle = sibling_bundle(tmp_path / "a")
    victims = [sibling_bundle(tmp_path / f"v{i}", f"victim_{i}") for i in range(4)]

    async def run() -> dict[str, Any]:
        async with _pool(attacker_bundle) as attacker, attacker.instance() as inst:
            first = _content(await inst.call_tool("probe_plant", {"seconds": 20.0}))
            for victim in victims:
                async with _pool(victim) as pool, pool.instance() as other:
                    book = await other.call_tool("get_book", {"book_id": 1})
                    assert not book.is_error, f"{victim.name}: {book.content}"
            return first

    first = asyncio.run(run())
    assert first["planted"] == 0, first
    assert first["listed"] == "PermissionError", first  # /tmp itself is out of its reach


def test_a_tool_cannot_stop_a_sibling_or_the_template_by_any_signal_route(tmp_path: Path) -> None:
    bundle = sibling_bundle(tmp_path)

    def state(host_pid: int) -> str:
        with open(f"/proc/{host_pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]

    async def run() -> tuple[dict[str, Any], dict[str, Any], str]:
        async with _pool(bundle) as attacker, _pool(bundle) as bystander:
            target = bystander.worker_pool.workers[0].proc
            assert isinstance(target, ForkedWorker)
            async with attacker.instance() as inst:
                at_sibling = _content(
                    await inst.call_tool("probe_signal", {"pid": target.inner_pid})
                )
                at_template = _content(await inst.call_tool("probe_signal", {"pid": 1}))
            await asyncio.sleep(0.2)  # a SIGIO would have been delivered by now
            stopped = state(target.pid)
            async with bystander.instance() as other:
                answer = await asyncio.wait_for(
                    other.call_tool("get_book", {"book_id": 1}), timeout=5
                )
                assert not answer.is_error, answer.content
            # the template still forks: a new pool opens
            async with _pool(bundle) as late, late.instance() as fresh:
                assert not (await fresh.call_tool("get_book", {"book_id": 2})).is_error
            return at_sibling, at_template, stopped

    at_sibling, at_template, stopped = asyncio.run(run())
    assert stopped != "T", "the sibling worker was stopped"
    for seen in (at_sibling, at_template):
        assert seen["kill"] != "sent" and seen["killpg"] != "sent", seen


def test_siblings_share_no_writable_path(tmp_path: Path) -> None:
    bundle = sibling_bundle(tmp_path)
    drops = ["/tmp/awm-sibling-drop", "/dev/shm/awm-sibling-drop"]

    async def run() -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
        async with (
            _pool(bundle) as writer,
            _pool(bundle) as reader,
            writer.instance() as w,
            reader.instance() as r,
        ):
            me = _content(await w.call_tool("probe_whoami", {}))
            wrote = [
                _content(await w.call_tool("probe_drop", {"path": p, "content": "x"}))
                for p in [*drops, f"{me['tmpdir']}/own-file"]
            ]
            read = [
                _content(await r.call_tool("probe_drop", {"path": p}))
                for p in [*drops, f"{me['tmpdir']}/own-file"]
            ]
            return wrote, read, me

    wrote, read, me = asyncio.run(run())
    assert me["tmpdir"] and me["tmpdir"].startswith("/tmp/awm-worker-"), me
    assert wrote[:2] == [{"error": "PermissionError"}] * 2, wrote
    assert wrote[2] == {"wrote": True}, "a worker can write its own TMPDIR"
    assert all("read" not in r for r in read), read  # nothing of its sibling's, even its own folder


def test_template_is_refused_where_the_kernel_cannot_separate_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from awm_envs.pool import worker_template
    from awm_envs.sandbox import landlock_domain

    monkeypatch.setattr(landlock_domain, "unavailable", lambda: "no Landlock in this test")
    monkeypatch.setattr(worker_template, "_warned_refusal", False)
    bundle = sibling_bundle(tmp_path)

    async def run() -> Any:
        async with _pool(bundle) as pool, pool.instance() as inst:
            assert not (await inst.call_tool("get_book", {"book_id": 1})).is_error
            return pool.worker_pool.workers[0].proc

    proc = asyncio.run(run())
    assert not isinstance(proc, ForkedWorker)
    assert "no Landlock in this test" in capsys.readouterr().err


def test_the_same_holds_for_an_unprivileged_user() -> None:
    if os.getuid() != 0:
        pytest.skip("this run is already unprivileged: the tests above are the proof")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("setpriv (util-linux) is needed to drop to an unprivileged uid")
    prefix = [setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups"]
    reach = subprocess.run([*prefix, sys.executable, "-c", "pass"], capture_output=True)
    if reach.returncode != 0:
        message = f"uid 65534 cannot run {sys.executable}: {reach.stderr.decode().strip()}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    work = Path(tempfile.mkdtemp(prefix="awm-unprivileged-"))
    os.chmod(work, 0o777)
    env = {**os.environ, "HOME": str(work), "AWM_CACHE_DIR": str(work / "cache"),
           "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
    done = subprocess.run(
        [*prefix, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "no:randomly", f"--basetemp={work / 'bt'}", "-o", "testpaths=",
         __file__, "-k", "not unprivileged"],
        cwd=Path(__file__).resolve().parents[1], env=env, capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert "6 passed" in summary and "skipped" not in summary, summary
