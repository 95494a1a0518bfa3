"""Reading a model's answer: the payload inside Markdown code fences, and JSON.

Models fence their answers (```json ... ```, ```sql ... ```) whether asked to or
not. Every package reads them here, two ways:

- :func:`extract_block`: the first block tagged with the wanted language (or
  untagged) anywhere in the answer, prose around it ignored; the whole answer
  when it has no fence. Synthesis reads its SQL, Python and JSON artifacts so.
- :func:`unfence`: the body when the whole answer is one fence (its closing
  fence may be missing: a reply cut at ``max_tokens`` keeps only the opening
  one). Judges, the simulator, structured output and tool-call repair read
  JSON answers so, and :func:`parse_json_text` decodes them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from awm_core.llm.base import LLMOutputError

_BLOCK = re.compile(r"```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)
_WHOLE = re.compile(r"^```(?:json)?\s*(.*?)\s*(?:```)?$", re.DOTALL | re.IGNORECASE)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of each fenced block in ``text``, in order (language ``""`` if untagged)."""
    return _BLOCK.findall(text)


def extract_block(text: str, language: str) -> str:
    """The first fenced block tagged ``language`` (or untagged); the whole text when unfenced.

    Raises :class:`LLMOutputError` naming the tags found when every block has another language.
    """
    blocks = fenced_blocks(text)
    for lang, body in blocks:
        if lang.lower() in (language, ""):
            return body.strip() + "\n"
    if blocks:
        langs = ", ".join(sorted({lang or "untagged" for lang, _ in blocks}))
        raise LLMOutputError(f"expected one ```{language} block; found blocks tagged: {langs}")
    return text.strip() + "\n"


def unfence(text: str) -> tuple[str, bool]:
    """``(body, True)`` when the whole (stripped) answer is one code fence, else ``(text stripped, False)``."""
    stripped = text.strip()
    fenced = _WHOLE.match(stripped)
    return (fenced.group(1), True) if fenced else (stripped, False)


def parse_json_text(text: str) -> Any:
    """Decode a JSON answer, tolerating a Markdown code fence around it."""
    body, _ = unfence(text)
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise LLMOutputError(f"the model's answer is not JSON ({exc}): {text[:200]!r}") from exc
