"""Token-level generation: the one seam between awm's episode loop and an RL trainer.

A trainer needs the exact token ids a model was prompted with and produced, and
their log-probabilities; awm's episode loop speaks messages. A
:class:`TokenGenerator` is the trainer's side (verl's ``server_manager``, vLLM,
or :class:`TransformersGenerator` on a CPU); :class:`awm_train.policy.TokenPolicy`
turns it into an awm policy and records every turn.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from awm_core.models import Task

__all__ = [
    "GeneratedTokens",
    "ScriptedGenerator",
    "TokenGenerator",
    "TransformersGenerator",
    "reference_replies",
]


@dataclass(frozen=True)
class GeneratedTokens:
    """One generation: the new token ids (the stop token included) and their log-probs."""

    token_ids: list[int]
    log_probs: list[float] | None = None
    stop_reason: str | None = None


class TokenGenerator(Protocol):
    """Generates a continuation of ``prompt_ids``; what a trainer's rollout engine provides."""

    async def generate(
        self, prompt_ids: list[int], *, max_new_tokens: int, temperature: float
    ) -> GeneratedTokens: ...


class TransformersGenerator:
    """A transformers model generating on this machine (CPU or one GPU), with log-probs.

    For tests, CPU smoke runs and small experiments; a training run on GPUs uses its
    rollout engine through the same :class:`TokenGenerator` interface.
    """

    def __init__(self, model: Any, tokenizer: Any, *, seed: int | None = 0) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.seed = seed
        self._calls = 0  # a seeded generator draws seed, seed + 1, ...: reproducible, never one
        # sample repeated (reseeding every call with the same seed made n samples of a prompt equal)
        self._lock = threading.Lock()  # one generate at a time per model

    async def generate(
        self, prompt_ids: list[int], *, max_new_tokens: int, temperature: float
    ) -> GeneratedTokens:
        return await asyncio.to_thread(self._generate, prompt_ids, max_new_tokens, temperature)

    def _generate(
        self, prompt_ids: list[int], max_new_tokens: int, temperature: float
    ) -> GeneratedTokens:
        import torch

        sample = temperature > 0
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_new_tokens,
            "do_sample": sample,
            "output_scores": True,
            "return_dict_in_generate": True,
            "pad_token_id": self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
            "eos_token_id": self.tokenizer.eos_token_id,
        }
        if sample:
            kwargs.update(temperature=temperature, top_p=1.0, top_k=0)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        with self._lock, torch.inference_mode():
            if self.seed is not None:
                torch.manual_seed(self.seed + self._calls)
                self._calls += 1
            ids = torch.tensor([prompt_ids], dtype=torch.long)
            out = self.model.generate(ids, attention_mask=torch.ones_like(ids), **kwargs)
            new = out.sequences[0, len(prompt_ids) :]
            # log-probs of the chosen tokens under the (temperature-scaled) sampling distribution
            steps = torch.stack(out.scores, dim=0)[:, 0, :].float()
            log_probs = torch.log_softmax(steps, dim=-1).gather(1, new[:, None])[:, 0]
        token_ids = [int(t) for t in new]
        stop = "stop" if token_ids and token_ids[-1] == self.tokenizer.eos_token_id else "length"
        return GeneratedTokens(token_ids, [float(x) for x in log_probs], stop)

    async def score(self, prompt_ids: list[int], token_ids: list[int]) -> list[float]:
        """The log-probs this model gives ``token_ids`` after ``prompt_ids`` (teacher forcing).

        What a trainer needs for tokens the model did not sample itself (a scripted or
        expert turn) to sit in the same batch as sampled ones, at temperature 1.
        """
        return await asyncio.to_thread(self._score, prompt_ids, token_ids)

    def _score(self, prompt_ids: list[int], token_ids: list[int]) -> list[float]:
        import torch

        with self._lock, torch.inference_mode():
            ids = torch.tensor([[*prompt_ids, *token_ids]], dtype=torch.long)
            logits = self.model(ids, attention_mask=torch.ones_like(ids)).logits[0].float()
            # logits[t] predicts token t + 1: the continuation starts at len(prompt_ids)
            steps = logits[len(prompt_ids) - 1 : ids.shape[1] - 1]
            chosen = torch.tensor(token_ids, dtype=torch.long)[:, None]
            log_probs = torch.log_softmax(steps, dim=-1).gather(1, chosen)[:, 0]
        return [float(x) for x in log_probs]


class ScriptedGenerator:
    """Answers with fixed texts, one per turn, tokenized: the model edge for offline tests.

    The log-probs are None (no model produced them); everything downstream (the
    episode loop, the environment, verification, row building) is real.
    """

    def __init__(self, tokenizer: Any, replies: Sequence[str]) -> None:
        self.tokenizer = tokenizer
        self.replies = list(replies)
        self.prompts: list[list[int]] = []

    @classmethod
    def reference(cls, tokenizer: Any, task: Task) -> ScriptedGenerator:
        """What a perfect model would write for ``task``: its reference solution, in Hermes format."""
        return cls(tokenizer, reference_replies(task))

    async def generate(
        self, prompt_ids: list[int], *, max_new_tokens: int, temperature: float
    ) -> GeneratedTokens:
        self.prompts.append(list(prompt_ids))
        text = self.replies.pop(0) if self.replies else "I have nothing more to do."
        ids = list(self.tokenizer.encode(text, add_special_tokens=False))[:max_new_tokens]
        return GeneratedTokens([*ids, int(self.tokenizer.eos_token_id)], None, "stop")


def reference_replies(task: Task) -> list[str]:
    """``task``'s reference solution as the assistant turns a perfect model writes (Hermes);
    for a conversational task, its reference conversation's agent turns (the scripted user
    ends it after the last one)."""
    from awm_core.conversation import conversation_plan
    from awm_core.episode import ReferencePolicy
    from awm_core.toolcalls import HermesFormat

    ref, fmt = ReferencePolicy(task), HermesFormat()
    replies = []
    steps = task.reference_solution or []
    turns = len(steps) + 2  # list_tools, the calls, the final answer
    if task.user is not None:  # list_tools, then the calls among the messages to the user
        turns = 1 + len(conversation_plan(steps, task.user.reference_messages))
    for _ in range(turns):
        turn = ref.respond([], fmt=fmt, tools=None)
        try:  # the reference policy never waits on anything: step it without an event loop
            turn.send(None)
        except StopIteration as done:
            replies.append(done.value.content)
        else:  # pragma: no cover - only if ReferencePolicy starts awaiting
            turn.close()
            raise RuntimeError("ReferencePolicy.respond suspended")
    return replies
