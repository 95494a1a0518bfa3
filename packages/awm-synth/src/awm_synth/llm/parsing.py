"""Read a model's answer into an artifact: fenced blocks and JSON, with errors the model can fix."""

from __future__ import annotations

import json
import re
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from awm_synth.errors import ArtifactParseError

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)


def extract_block(text: str, language: str) -> str:
    """The first fenced block tagged ``language`` (or untagged); the whole text when unfenced."""
    blocks: list[tuple[str, str]] = _FENCE.findall(text)
    for lang, body in blocks:
        if lang.lower() in (language, ""):
            return body.strip() + "\n"
    if blocks:
        langs = ", ".join(sorted({lang or "untagged" for lang, _ in blocks}))
        raise ArtifactParseError(f"expected one ```{language} block; found blocks tagged: {langs}")
    return text.strip() + "\n"


def parse_json_model(text: str, model: type[M]) -> M:
    """Decode JSON (fenced or bare) and validate it as ``model``."""
    body = extract_block(text, "json")
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ArtifactParseError(
            f"the answer is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            f"answer with one JSON object shaped like {model.__name__}"
        ) from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
            for e in exc.errors()[:8]
        )
        raise ArtifactParseError(f"the JSON does not match {model.__name__}: {problems}") from exc
