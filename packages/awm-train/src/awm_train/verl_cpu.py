"""verl on a machine without vLLM or SGLang: an ``LLMServerClient`` that generates with transformers.

verl's agent loops generate through ``self.server_manager`` (an
``LLMServerClient``); this subclass answers ``generate`` from a transformers
model in the same process, with the token ids and log-probs verl expects. For
CPU smoke runs and CI; a real run uses verl's vLLM or SGLang servers.
"""

from __future__ import annotations

from typing import Any

from verl.workers.rollout.llm_server import (  # type: ignore[import-not-found, unused-ignore]
    LLMServerClient,
)
from verl.workers.rollout.replica import (  # type: ignore[import-not-found, unused-ignore]
    TokenOutput,
)

from awm_train.tokens import TransformersGenerator

__all__ = ["TransformersServerClient", "build_agent_loop", "load_generator"]


class TransformersServerClient(LLMServerClient):  # type: ignore[misc, unused-ignore]  # verl is untyped
    """Generates for every agent loop of this worker with one local transformers model.

    Given no ``generator``, it loads ``actor_rollout_ref.model.path`` (fp32) on first
    use, in the process that generates: verl ships the client to its agent-loop
    workers (Ray actors) by pickling, and a model with its lock does not travel;
    the path does.
    """

    def __init__(
        self, config: Any, generator: TransformersGenerator | None = None, **kwargs: Any
    ) -> None:
        super().__init__(config, load_balancer_handle=None, **kwargs)
        self._generator = generator
        self._owns_generator = generator is None
        self.max_new_tokens = int(config.actor_rollout_ref.rollout.response_length)
        self.requests = 0

    @property
    def generator(self) -> TransformersGenerator:
        if self._generator is None:
            self._generator = load_generator(str(self.config.actor_rollout_ref.model.path))
        return self._generator

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if self._owns_generator:
            state["_generator"] = None  # reloaded from the model path where it lands
        return state

    async def generate(
        self,
        request_id: str,
        *,
        prompt_ids: list[int],
        sampling_params: dict[str, Any],
        **kwargs: Any,
    ) -> Any:
        self.requests += 1
        out = await self.generator.generate(
            list(prompt_ids),
            max_new_tokens=self.max_new_tokens,
            temperature=float(sampling_params.get("temperature", 1.0)),
        )
        version = {"global_steps": 0, "min_global_steps": 0, "max_global_steps": 0}
        return TokenOutput(
            token_ids=out.token_ids,
            log_probs=out.log_probs,
            stop_reason="completed",
            extra_fields=version,  # never updated: the weights it was loaded with
        )


def load_generator(model_path: str, *, seed: int | None = None) -> TransformersGenerator:
    """A fp32 :class:`TransformersGenerator` for a local model folder (the actor's weights)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from awm_train.offline import chatml_tokenizer

    tokenizer = chatml_tokenizer(AutoTokenizer.from_pretrained(model_path))
    model: Any = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    model.eval()
    return TransformersGenerator(model, tokenizer, seed=seed)


def build_agent_loop(config: Any, tokenizer: Any, generator: Any) -> tuple[Any, Any]:
    """``(agent loop, client)`` built exactly as verl's ``AgentLoopWorker`` builds one.

    The entries of ``config.actor_rollout_ref.rollout.agent.agent_loop_config_path`` go
    into verl's registry and ``awm_agent`` is instantiated through
    ``hydra.utils.instantiate``, with a :class:`TransformersServerClient` over
    ``generator`` as its ``server_manager``. For CPU runs and tests.
    """
    import hydra
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop import (  # type: ignore[import-not-found, unused-ignore]
        agent_loop as verl_agent_loop,
    )
    from verl.utils.dataset.rl_dataset import (  # type: ignore[import-not-found, unused-ignore]
        RLHFDataset,
    )

    registry = verl_agent_loop._agent_loop_registry
    for entry in OmegaConf.load(config.actor_rollout_ref.rollout.agent.agent_loop_config_path):
        registry[entry.name] = entry
    client = TransformersServerClient(config, generator)
    loop = hydra.utils.instantiate(
        config=registry["awm_agent"],
        trainer_config=verl_agent_loop.DictConfigWrap(config=config),
        server_manager=client,
        tokenizer=tokenizer,
        processor=None,
        hf_model_type=None,
        dataset_cls=RLHFDataset,
        data_config=verl_agent_loop.DictConfigWrap(config.data),
        tools=verl_agent_loop.ToolListWrap([]),
    )
    return loop, client
