"""The catalog's real verifiers run unchanged in the sandbox, and prove what they should.

For every shop task: complete after the reference solution, not complete on
the untouched initial database (the official release's defect: tasks already
complete at the start).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from awm_envs.verifiers.pool import VerifierPool


def shop():  # type: ignore[no-untyped-def]
    from awm_envs import load_environment

    return load_environment("shop")


TASK_IDS = [t.id for t in shop().tasks]


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_shop_verifier_accepts_the_reference_and_rejects_the_initial_state(
    task_id: str, pool: VerifierPool
):
    env = shop()
    task = next(t for t in env.tasks if t.id == task_id)
    source = (Path(env.path) / "verifiers.py").read_text()
    inst = env.instance()
    try:
        for call in task.reference_solution or []:
            assert not inst.call_tool_sync(call.tool, call.arguments).is_error
        final = inst.snapshot_sync()
    finally:
        inst.close_sync()
    done = pool.run(
        source,
        initial=env.template,
        final=final,
        function=task.verifier,
        final_answer=task.reference_answer,
    )
    assert done.ok, done.error
    assert done.complete is True, done.evidence
    if not task.expects_refusal:
        untouched = pool.run(
            source,
            initial=env.template,
            final=env.template,
            function=task.verifier,
            final_answer=None,
        )
        assert untouched.ok and untouched.complete is False
