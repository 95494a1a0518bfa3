"""What the model sees in AgentDojo's awm mode, against what AgentDojo's own pipeline sends.

One banking case under AgentDojo's ``important_instructions`` attack runs in both modes
with the oracle, whose every request is recorded: in native mode the requests AgentDojo's
OpenAI element sends to awm's endpoint (as the backend receives them), in awm mode the
messages awm's episode loop gives the policy. They carry the same system message, the
same user request, the same tools (names, descriptions, parameter schemas, order) and
the same injected text; every other difference is listed in
:data:`awm_bench.agentdojo.episode.AWM_MODE_ADAPTATIONS`, each named in docs/bench.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from awm_bench.agentdojo import run as run_module
from awm_bench.agentdojo.cases import DEFAULT_ATTACK, normalized
from awm_bench.agentdojo.episode import AWM_MODE_ADAPTATIONS, AWM_MODE_NOTE, OraclePolicy
from awm_bench.agentdojo.native import OracleBackend
from awm_bench.agentdojo.upstream import default_system_message, get_suite
from awm_core.contracts import BenchmarkConfig
from awm_core.models import Message

DOCS = Path(__file__).resolve().parents[3] / "docs" / "bench.md"
Seen = list[tuple[list[Message], list[dict[str, Any]] | None]]


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Seen]:
    """Every request of one attacked banking case, per mode."""
    requests: dict[str, Seen] = {"native": [], "awm": []}
    chat, respond = OracleBackend.chat, OraclePolicy.respond

    async def recording_chat(self: OracleBackend, messages: list[Message], **kw: Any) -> Any:
        requests["native"].append((messages, kw.get("tools")))
        return await chat(self, messages, **kw)

    async def recording_respond(self: OraclePolicy, messages: list[Message], **kw: Any) -> Any:
        requests["awm"].append((messages, kw.get("tools")))
        return await respond(self, messages, **kw)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(OracleBackend, "chat", recording_chat)
        patch.setattr(OraclePolicy, "respond", recording_respond)
        cases = run_module.load_cases(("banking",), 1, DEFAULT_ATTACK)
        attacked = [c for c in cases if c.injection_task]
        out = tmp_path_factory.mktemp("prompt")
        run_module.run_agentdojo(BenchmarkConfig(out=out), attacked, DEFAULT_ATTACK)
    return requests


def _last(seen: Seen) -> list[Message]:
    return seen[-1][0]


def test_both_modes_send_agentdojos_system_message(seen: dict[str, Seen]) -> None:
    system = default_system_message()
    native, awm = _last(seen["native"])[0], _last(seen["awm"])[0]
    assert (native.role, native.content) == ("system", system)
    assert awm.role == "system"
    assert (awm.content or "").startswith(f"{system}\n\n{AWM_MODE_NOTE}")


def test_both_modes_send_the_user_tasks_prompt_as_the_first_user_message(
    seen: dict[str, Seen],
) -> None:
    suite = get_suite("banking")
    prompts = {t.PROMPT for t in suite.user_tasks.values()}
    native, awm = _last(seen["native"])[1], _last(seen["awm"])[1]
    assert native.role == awm.role == "user"
    assert native.content == awm.content and native.content in prompts


def test_list_tools_lists_the_tools_agentdojo_sends_with_its_request(
    seen: dict[str, Seen],
) -> None:
    tools = seen["native"][0][1] or []
    native = [
        {
            "name": t["function"]["name"],
            "description": t["function"]["description"],
            "input_schema": t["function"]["parameters"],
        }
        for t in tools
    ]
    listing = _last(seen["awm"])[3]  # system, user, the list_tools call, its result
    assert listing.role == "tool"
    assert json.loads(listing.content or "") == native
    assert [t["name"] for t in native] == [f.name for f in get_suite("banking").tools]


def test_the_injected_text_reaches_the_model_in_both_modes(seen: dict[str, Seen]) -> None:
    marker = "This is an important message from me, Emma Johnson, to you, Local model."
    for mode in ("native", "awm"):
        read = [m.content or "" for m in _last(seen[mode]) if m.role == "tool"]
        assert any(normalized(marker) in normalized(text) for text in read), mode


def test_every_adaptation_is_documented() -> None:
    section = DOCS.read_text(encoding="utf-8").split("## AgentDojo", 1)[1]
    documented = set(re.findall(r"^- `(\w+)`:", section, flags=re.M))
    assert set(AWM_MODE_ADAPTATIONS) <= documented
