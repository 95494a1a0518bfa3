"""Read a model's JSON answer into an artifact model, with errors the model can fix."""

from __future__ import annotations

import json
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from awm_core.llm.extract import extract_block
from awm_synth.errors import ArtifactParseError

M = TypeVar("M", bound=BaseModel)


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
