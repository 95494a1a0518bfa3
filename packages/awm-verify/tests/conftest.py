"""Shared fixtures: real SQLite images, one real sandbox pool, and a rule-based judge model.

The judge model: it answers from what it reads in the prompt.

It stands behind the real OpenAI-protocol server (``ScriptedOpenAIServer``), so
the judge under test talks HTTP to it exactly as to a hosted model. Its answer is
a function of the prompt only: if the verifier evidence, the diff or the
trajectory did not reach the prompt, its verdict changes. That is what lets the
case-study tests prove the evidence was delivered.

Rules (a caricature of a careful grader):
- no database section in the prompt (the LLM-only judge): trust the trajectory;
  every call ok and a final answer -> Completed;
- the verification program says "complete" -> Completed;
- it says "not complete", but the database did not change, every call succeeded
  and the evidence shows the requested record present in the final state
  (an idempotent create) -> Completed;
- otherwise -> Agent Error, citing the evidence.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awm_core.llm.scripted_server import ScriptedOpenAIServer
from awm_envs.verifiers.pool import VERIFIER_LIMITS, VerifierPool

# helpers shared by several test modules (cases.py), importable without importing a test module
sys.path.insert(0, str(Path(__file__).parent))


def make_image(script: str) -> bytes:
    """A database image built by running ``script`` on an empty in-memory database."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(script)
    conn.commit()
    image = conn.serialize()
    conn.close()
    return image


@pytest.fixture(scope="session")
def pool() -> Iterator[VerifierPool]:
    """Two warm workers with tight limits, so hostile tests finish fast."""
    limits = VERIFIER_LIMITS.with_(cpu_s=1.0, wall_s=3.0, memory_bytes=256 * 1024 * 1024)
    with VerifierPool(size=2, limits=limits) as p:
        p.start()
        yield p


@pytest.fixture(scope="session")
def orders_images() -> tuple[bytes, bytes]:
    """A before/after pair: order 2 cancelled, nothing else changed."""
    schema = """
    CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER, status TEXT, total REAL);
    INSERT INTO orders VALUES (1, 1, 'shipped', 20.0), (2, 1, 'pending', 35.5), (3, 2, 'pending', 9.0);
    """
    before = make_image(schema)
    after = make_image(schema + "UPDATE orders SET status = 'cancelled' WHERE id = 2;")
    return before, after


# --------------------------------------------------------------------------- the judge model


def sections(prompt: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for block in re.split(r"^## ", prompt, flags=re.MULTILINE):
        if block.strip():
            head, _, body = block.partition("\n")
            out[head.strip()] = body.strip()
    return out


def evidence_of(verification: str) -> dict[str, Any]:
    _, _, tail = verification.partition("Evidence:\n")
    try:
        data: dict[str, Any] = json.loads(tail)
        return data
    except json.JSONDecodeError:
        return {}


def decide(prompt: str) -> tuple[str, str]:
    s = sections(prompt)
    trajectory = s.get("Agent trajectory", "")
    calls_ok = "ERROR" not in trajectory and "call " in trajectory
    answered = "Final answer: (none)" not in trajectory
    verification = s.get("Verification program")
    diff = s.get("Database changes (initial -> final)")
    if verification is None:
        if calls_ok and answered:
            return "Completed", "Every tool call succeeded and the agent reported success."
        return "Agent Error", "The trajectory shows failed calls or no answer."
    evidence = evidence_of(verification)
    if "says: complete" in verification:
        return (
            "Completed",
            f"The verifier confirms completion; evidence {json.dumps(evidence, sort_keys=True)}.",
        )
    present = any(k.startswith("matching") and v for k, v in evidence.items())
    if diff is not None and diff.startswith("No database changes") and calls_ok and present:
        return (
            "Completed",
            "The database is unchanged because the requested record already existed; the create "
            f"call succeeded and the final state has it: {json.dumps(evidence, sort_keys=True)}.",
        )
    return (
        "Agent Error",
        f"The database evidence contradicts success: {json.dumps(evidence, sort_keys=True)}.",
    )


def judge_model(body: dict[str, Any]) -> str:
    """The server-side reply function: request body in, JSON answer out."""
    prompt = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    label, reasoning = decide(prompt)
    return json.dumps({"label": label, "reasoning": reasoning})


@pytest.fixture(scope="session")
def judge_server() -> Iterator[ScriptedOpenAIServer]:
    """The rule-based judge model behind a real OpenAI-protocol HTTP server."""
    with ScriptedOpenAIServer(judge_model) as srv:
        yield srv
