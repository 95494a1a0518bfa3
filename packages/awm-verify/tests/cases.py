"""The paper's verification case studies as data, and a judge by name, for several test modules."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from awm_core import get_judge
from awm_core.llm.scripted_server import ScriptedOpenAIServer
from awm_core.models import Task, Trajectory

CASES = Path(__file__).parent / "fixtures" / "case_studies"


def load_case(name: str) -> dict[str, object]:
    folder = CASES / name
    conn = sqlite3.connect(":memory:")
    conn.executescript((folder / "initial.sql").read_text())
    initial = conn.serialize()
    conn.executescript((folder / "changes.sql").read_text())
    conn.commit()
    return {
        "task": Task.model_validate_json((folder / "task.json").read_text()),
        "trajectory": Trajectory.model_validate_json((folder / "trajectory.json").read_text()),
        "initial": initial,
        "final": conn.serialize(),
        "verifier_source": (folder / "verifiers.py").read_text(),
    }


def judge_for(name: str, srv: ScriptedOpenAIServer):  # type: ignore[no-untyped-def]
    if name == "code":
        return get_judge("code")
    return get_judge(
        name, model="openai:judge", backend_options={"base_url": srv.base_url, "api_key": "test"}
    )
