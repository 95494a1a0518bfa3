"""Every shipped recipe passes verl 0.9.1's own ``validate_config``, as ``main_ppo`` runs it first.

Composing the Hydra config alone cannot fail on a missing micro-batch size or a
batch that does not divide over the GPUs; ``validate_config`` (with verl's
``auto_set_device`` before it) is what ``awm train run paper`` meets at start-up
on a cluster. The config is built exactly as ``awm train run`` builds it: the
recipe's overrides, then the data, model and agent-loop overrides of
``Recipe.command`` (with the run folder's agent-loop file), then the user's.
GPU recipes are checked on 1 node x 8 GPUs and 4 nodes x 8 GPUs, with their
dynamic batch sizes and with ``use_dynamic_bsz=false`` (then verl needs the
micro-batch sizes); every recipe in the folder is covered, including ones
added later. A few checks verl makes only once GPUs are up (rollout replica
sizes, token budgets against the longest row) are made here too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from awm_train.recipes import list_recipes, load_recipe

SHAPES = [(1, 8), (4, 8)]  # nodes x GPUs per node


def _cases() -> list[Any]:
    cases = []
    for name in list_recipes():
        if load_recipe(name).requires == "gpu":
            for nodes, gpus in SHAPES:
                for dynamic in ("recipe", "false"):
                    extra = [f"trainer.nnodes={nodes}", f"trainer.n_gpus_per_node={gpus}"]
                    if dynamic == "false":
                        extra.append("actor_rollout_ref.actor.use_dynamic_bsz=false")
                    cases.append(
                        pytest.param(name, extra, id=f"{name}-{nodes}x{gpus}-dynamic_bsz={dynamic}")
                    )
        else:
            cases.append(pytest.param(name, [], id=f"{name}-as-written"))
    return cases


def _compose(name: str, extra: list[str], tmp_path: Path) -> Any:
    """verl's ``ppo_trainer`` config with the overrides ``awm train run NAME`` passes."""
    import verl
    from hydra import compose, initialize_config_dir

    recipe = load_recipe(name)
    run_dir = recipe.run_dir(extra, cwd=tmp_path)
    command = recipe.command(
        tmp_path / "data",
        model=recipe.model or str(tmp_path / "model"),
        extra=extra,
        agent_loop_path=recipe.write_agent_loop(run_dir),
        run_dir=run_dir,
    )
    overrides = command[command.index("verl.trainer.main_ppo") + 1 :]
    config_dir = Path(verl.__file__).parent / "trainer" / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose(config_name="ppo_trainer", overrides=overrides)


@pytest.mark.parametrize(("name", "extra"), _cases())
def test_verl_s_validate_config_accepts_the_recipe(
    name: str, extra: list[str], tmp_path: Path
) -> None:
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config
    from verl.utils.device import auto_set_device

    cfg = _compose(name, extra, tmp_path)
    auto_set_device(cfg)  # as main_ppo does before validating
    validate_config(
        config=cfg,
        use_reference_policy=need_reference_policy(cfg),
        use_critic=need_critic(cfg),
    )

    # what verl checks later, once the GPUs are up
    rollout = omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)  # RolloutConfig's checks
    gpus = cfg.trainer.nnodes * cfg.trainer.n_gpus_per_node
    replica = (
        rollout.tensor_model_parallel_size
        * rollout.data_parallel_size
        * rollout.pipeline_model_parallel_size
    )
    assert gpus % replica == 0, f"{gpus} GPUs do not split into rollout replicas of {replica}"
    assert replica % min(cfg.trainer.n_gpus_per_node, replica) == 0  # RolloutReplica's assert
    row = cfg.data.max_prompt_length + cfg.data.max_response_length
    if rollout.max_model_len is not None:
        assert rollout.max_model_len >= row, "vLLM would refuse a full-length turn"
    actor = cfg.actor_rollout_ref.actor
    if actor.use_dynamic_bsz:  # verl's rearrange_micro_batches: a row must fit one micro-batch
        assert actor.ppo_max_token_len_per_gpu >= row
        assert cfg.actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu >= row
        assert cfg.actor_rollout_ref.ref.log_prob_max_token_len_per_gpu >= row
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == "awm_agent"
    assert Path(cfg.actor_rollout_ref.rollout.agent.agent_loop_config_path).is_file()
    assert Path(cfg.trainer.default_local_dir).is_absolute()


def test_the_paper_recipe_as_it_was_fails_verl_s_validation(tmp_path: Path) -> None:
    """The check has teeth: without micro-batch sizes verl refuses the paper's overrides."""
    from hydra.errors import InstantiationException
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    unbatched = [
        "actor_rollout_ref.actor.use_dynamic_bsz=false",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=null",
    ]
    cfg = _compose("paper", unbatched, tmp_path)
    with pytest.raises(InstantiationException, match="ppo_micro_batch_size"):
        validate_config(cfg, need_reference_policy(cfg), need_critic(cfg))


def _required_by(dist: str, extras: tuple[str, ...] = ()) -> set[str]:
    """The distributions ``dist[extras]`` requires, transitively, by installed metadata."""
    import importlib.metadata as metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: set[str] = set()
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [(dist, frozenset(extras))]
    while todo:
        name, active = todo.pop()
        if (canonicalize_name(name), active) in seen:
            continue
        seen.add((canonicalize_name(name), active))
        found.add(canonicalize_name(name))
        try:
            requirements = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for line in requirements:
            req = Requirement(line)
            if req.marker and not any(req.marker.evaluate({"extra": e}) for e in active or {""}):
                continue
            todo.append((req.name, frozenset(req.extras)))
    return found


# What verl's V1 trainer imports beyond verl's own requirements (verl lists them under its
# verl-core extra): trainer_base, agent_loop_tq, replay_buffer, transferqueue_utils, the router
V1_IMPORTS = ("transfer_queue", "cachetools", "uvicorn", "fastapi", "zmq", "msgspec")


def test_awm_train_verl_alone_brings_what_verl_s_v1_trainer_imports() -> None:
    """Whatever else this venv holds, ``awm-train[verl]``'s own requirements bring these."""
    import importlib
    import importlib.metadata as metadata

    from packaging.utils import canonicalize_name

    for module in (
        "verl.trainer.main_ppo",
        "verl.trainer.ppo.v1.trainer_base",
        "verl.trainer.ppo.v1.agent_loop_tq",
        "verl.trainer.ppo.v1.replay_buffer",
        "verl.utils.transferqueue_utils",
        "verl.workers.rollout.router",
        *V1_IMPORTS,
    ):
        importlib.import_module(module)
    required = _required_by("awm-train", ("verl",))
    providers = metadata.packages_distributions()
    missing = {
        module: providers.get(module)
        for module in V1_IMPORTS
        if not any(canonicalize_name(d) in required for d in providers.get(module, []))
    }
    assert not missing, f"awm-train[verl] does not require the distributions of {missing}"
