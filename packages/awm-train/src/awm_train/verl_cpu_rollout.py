"""A transformers rollout for verl 0.9.1's ``main_ppo`` on a CPU (``actor_rollout_ref.rollout.name=hf``).

verl registers only vLLM, SGLang and TensorRT-LLM rollouts; none runs without a
GPU. This module is a fourth, which the CPU platform plug-in
(:mod:`awm_train.verl_cpu_platform`) registers by name:

- :class:`HFServer`, a Ray actor holding a transformers model that answers
  ``generate`` on token ids with log-probs, the call verl's ``LLMServerClient``
  makes;
- :class:`HFReplica`, the ``RolloutReplica`` that starts one server per replica
  (``RolloutReplicaRegistry``);
- :class:`HFRolloutAdapter`, the ``BaseRollout`` verl builds inside the actor
  worker; ``update_weights`` sends the trained weights to the server (verl's
  naive, colocated weight sync), sleep and wake are no-ops.

For smoke runs and CI (``awm train run cpu-smoke``); not fast, not for training.
"""

from __future__ import annotations

import asyncio
from typing import Any

import ray
from verl.workers.rollout.base import BaseRollout  # type: ignore[import-not-found, unused-ignore]
from verl.workers.rollout.replica import (  # type: ignore[import-not-found, unused-ignore]
    RolloutReplica,
    TokenOutput,
)

__all__ = ["NAME", "HFReplica", "HFRolloutAdapter", "HFServer"]

NAME = "hf"


def _server_name(replica_rank: int) -> str:
    return f"awm_hf_rollout_server_{replica_rank}"


def _model_path(model_config: Any) -> str:
    """The model folder, from verl's ``HFModelConfig`` or the raw ``DictConfig`` replicas get."""
    path = getattr(model_config, "local_path", None) or getattr(model_config, "path", None)
    if path is None and hasattr(model_config, "get"):
        path = model_config.get("local_path") or model_config.get("path")
    return str(path)


class HFServer:
    """One transformers model serving ``generate`` for a replica (a Ray actor)."""

    def __init__(self, model_path: str, max_new_tokens: int) -> None:
        from awm_train.verl_cpu import load_generator

        self.generator = load_generator(model_path)
        self.max_new_tokens = max_new_tokens
        self.weight_version = 0

    async def generate(
        self,
        request_id: str,
        *,
        prompt_ids: list[int],
        sampling_params: dict[str, Any],
        **kwargs: Any,
    ) -> Any:
        out = await self.generator.generate(
            list(prompt_ids),
            max_new_tokens=int(sampling_params.get("max_tokens") or self.max_new_tokens),
            temperature=float(sampling_params.get("temperature", 1.0)),
        )
        return TokenOutput(
            token_ids=out.token_ids,
            log_probs=out.log_probs,
            stop_reason="completed",
            extra_fields={
                "global_steps": self.weight_version,
                "min_global_steps": self.weight_version,
                "max_global_steps": self.weight_version,
            },
        )

    def load_weights(self, state: dict[str, Any], version: int) -> int:
        """The actor's weights after an update; returns how many tensors were loaded."""
        model = self.generator.model
        own = model.state_dict()
        loaded = {k: v for k, v in state.items() if k in own}
        model.load_state_dict(loaded, strict=False)
        self.weight_version = version
        print(f"awm hf rollout: loaded {len(loaded)} of {len(own)} tensors, weights v{version}")
        return len(loaded)

    # what verl's replica and checkpoint manager call around weight syncs
    async def wake_up(self) -> None:
        return None

    async def sleep(self) -> None:
        return None

    async def clear_kv_cache(self) -> None:
        return None

    async def abort_all_requests(self, reject_request: bool = False) -> None:
        return None

    async def resume_generation(self) -> None:
        return None


class HFReplica(RolloutReplica):  # type: ignore[misc, unused-ignore]  # verl is untyped
    """A replica of one :class:`HFServer`, started next to verl's actor workers."""

    def rollout_worker_use_gpu(self) -> bool:
        return False

    async def launch_servers(self) -> None:
        name = _server_name(self.replica_rank)
        server = (
            ray.remote(HFServer)
            .options(name=name, num_cpus=0, max_concurrency=64)
            .remote(_model_path(self.model_config), int(self.config.response_length))
        )
        await server.__ray_ready__.remote()
        self._server_handle = server
        self._server_address = f"hf://{name}"
        self.servers = [server]


class HFRolloutAdapter(BaseRollout):  # type: ignore[misc, unused-ignore]
    """verl's rollout object inside the actor worker: forwards weight updates to the server."""

    def __init__(self, config: Any, model_config: Any, device_mesh: Any, *args: Any, **kw: Any):
        super().__init__(config, model_config, device_mesh)
        self.replica_rank = int(kw.get("replica_rank", 0))
        self.version = 0

    async def resume(self, tags: list[str]) -> None:
        return None

    async def release(self) -> None:
        return None

    async def update_weights(self, weights: Any, **kwargs: Any) -> None:
        state = {name: tensor.detach().to("cpu").clone() for name, tensor in weights}
        steps = kwargs.get("global_steps")
        self.version = int(steps) if steps is not None else self.version + 1
        server = ray.get_actor(_server_name(self.replica_rank))
        await asyncio.wrap_future(server.load_weights.remote(state, self.version).future())
