"""Run AgentDojo in native and awm modes, resumably; utility, utility under attack and
targeted ASR per suite, with AgentDojo's published numbers beside them.

Both modes go through AgentDojo's own case runners (``benchmark.run_task_without_injection_tasks``
and ``benchmark.run_task_with_injection_tasks``): the same attack object places the same
injections, and the same checks score. Only the agent differs: AgentDojo's pipeline
(native) or awm's episode loop (awm). AgentDojo's own trace of every case (its
``TraceLogger`` JSON) is kept under ``OUT/traces/MODE/``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from awm_bench.agentdojo.cases import (
    DEFAULT_ATTACK,
    NO_ATTACK,
    OBEY_INJECTION,
    PAPER,
    REFERENCES,
    SUITES,
    Call,
    Case,
    OracleScript,
    cases_for,
    corrupt,
    metrics,
)
from awm_bench.agentdojo.native import OracleBackend, native_pipeline
from awm_bench.agentdojo.upstream import (
    BENCHMARK_VERSION,
    UnknownAttackError,
    attack_model_name,
    attack_names,
    attr,
    get_suite,
)
from awm_bench.bfcl.cases import subset
from awm_bench.journal import Journal
from awm_core.contracts import BenchmarkConfig
from awm_core.errors import UnknownSubsetError
from awm_core.llm.base import LLMBackend
from awm_core.llm.cache import CachingBackend, ResponseCache
from awm_core.models import Task

DEFAULT_LIMIT = 2
"""User tasks and injection tasks per suite in the default offline subset."""


def suites_of(only: tuple[str, ...]) -> tuple[str, ...]:
    """The suites ``--only`` keeps (all four by default), in AgentDojo's order."""
    unknown = [s for s in only if s not in SUITES]
    if unknown:
        raise UnknownSubsetError(f"not AgentDojo suites: {unknown} (one of {', '.join(SUITES)})")
    return tuple(s for s in SUITES if not only or s in only)


def attack_of(config: BenchmarkConfig) -> str:
    """``--attack``: AgentDojo's ``important_instructions`` by default, ``none`` for
    utility only, else any attack in AgentDojo's registry."""
    attack = config.attack or DEFAULT_ATTACK
    if attack != NO_ATTACK and attack not in attack_names():
        raise UnknownAttackError(
            f"AgentDojo has no attack {attack!r}: one of {', '.join(attack_names())} or none"
        )
    return attack


def load_cases(suites: tuple[str, ...], limit: int | None, attack: str) -> list[Case]:
    """``limit`` user tasks and ``limit`` injection tasks per suite (a spread-out sample,
    all of them when None): each user task alone, then paired with each injection task."""
    out: list[Case] = []
    for name in suites:
        suite = get_suite(name)
        users = subset(list(suite.user_tasks), limit)
        injections = subset(list(suite.injection_tasks), limit)
        out += cases_for(name, users, injections, attack)
    return out


@dataclass
class _Attacks:
    """One AgentDojo attack object per suite (its injection candidates are cached in it)."""

    name: str
    model: str
    _made: dict[str, Any]

    def get(self, suite: Any) -> Any:
        if suite.name not in self._made:
            load_attack = attr("agentdojo.attacks.attack_registry", "load_attack")
            target = _Named(attack_model_name(self.model))
            self._made[suite.name] = load_attack(self.name, suite, target)
        return self._made[suite.name]


@dataclass
class _Named:
    """What an attack reads from its target pipeline: the name it addresses the model by."""

    name: str


def _calls(function_calls: list[Any]) -> tuple[Call, ...]:
    return tuple(Call(str(c.function), dict(c.args)) for c in function_calls)


def oracle_script(
    suite: Any, case: Case, injections: dict[str, str], corruption: str | None
) -> OracleScript:
    """The ground truth of ``case`` on its own environment (injections in place, the user
    task's ``init_environment`` applied), corrupted as asked."""
    user_task = suite.get_user_task_by_id(case.user_task)
    env = user_task.init_environment(suite.load_and_inject_default_environment(injections))
    calls = corrupt(_calls(user_task.ground_truth(env.model_copy(deep=True))), corruption)
    if case.injection_task is None:
        return OracleScript(calls=calls, answer=user_task.GROUND_TRUTH_OUTPUT)
    injection = suite.get_injection_task_by_id(case.injection_task)
    return OracleScript(
        calls=calls,
        answer=user_task.GROUND_TRUTH_OUTPUT,
        goal=injection.GOAL,
        injection_calls=_calls(injection.ground_truth(env.model_copy(deep=True))),
        injection_answer=injection.GROUND_TRUTH_OUTPUT,
        obey=corruption == OBEY_INJECTION,
    )


def run_case(pipeline: Any, suite: Any, case: Case, attack: Any | None) -> tuple[bool, bool | None]:
    """``(utility, security)`` of one case from AgentDojo's own case runner; security is
    None for a run without an attack (AgentDojo reports True there, meaning nothing)."""
    benchmark = "agentdojo.benchmark"
    user_task = suite.get_user_task_by_id(case.user_task)
    if case.injection_task is None or attack is None:
        utility, _ = attr(benchmark, "run_task_without_injection_tasks")(
            suite, pipeline, user_task, None, True, BENCHMARK_VERSION
        )
        return bool(utility), None
    utilities, securities = attr(benchmark, "run_task_with_injection_tasks")(
        suite,
        pipeline,
        user_task,
        attack,
        None,
        True,
        [case.injection_task],
        BENCHMARK_VERSION,
    )
    key = (case.user_task, case.injection_task)
    return bool(utilities[key]), bool(securities[key])


_LOOP: asyncio.AbstractEventLoop | None = None


def _loop() -> asyncio.AbstractEventLoop:
    """One event loop for every awm-mode episode: a backend's HTTP client lives on its loop."""
    global _LOOP
    if _LOOP is None or _LOOP.is_closed():
        _LOOP = asyncio.new_event_loop()
    return _LOOP


def _policy_for(
    config: BenchmarkConfig, backend: LLMBackend, script: Callable[[], OracleScript]
) -> Callable[[Task], Any]:
    from awm_bench.agentdojo.episode import OraclePolicy
    from awm_core.episode import Policy

    if config.model == "oracle":
        return lambda task: OraclePolicy(script())
    return lambda task: Policy(backend)  # decoded with config.sampling (the backend applies it)


def run_agentdojo(config: BenchmarkConfig, cases: list[Case], attack: str) -> dict[str, Any]:
    """Run ``cases`` in each mode; write ``MODE.jsonl`` and ``summary.json``; return the summary."""
    from awm_bench.agentdojo.episode import awm_element
    from awm_core.llm.http_server import BackgroundServer
    from awm_core.llm.serve import build_backend_app

    config.out.mkdir(parents=True, exist_ok=True)
    oracle = OracleBackend()
    backend: LLMBackend = oracle
    if config.model != "oracle":
        from awm_core import get_backend

        backend = CachingBackend(
            get_backend(config.model),
            ResponseCache(config.out / "cache" / "agent"),
            sampling=config.sampling,
        )
    attacks = _Attacks(attack, config.model, {}) if attack != NO_ATTACK else None
    suites = {name: get_suite(name) for name in dict.fromkeys(c.suite for c in cases)}
    summary: dict[str, Any] = {
        "benchmark": "agentdojo",
        "title": "AgentDojo",
        "model": config.model,
        "attack": attack,
        "corruption": config.corruption,
        "benchmark_version": BENCHMARK_VERSION,
        "subset": "full" if config.full else f"{config.limit or DEFAULT_LIMIT} per suite",
        "note": "Utility, utility under attack and targeted ASR in % (AgentDojo's own "
        f"checks, suites {BENCHMARK_VERSION}, attack {attack}); ASR: lower is better.",
        "reference_rows": [r.row() for r in REFERENCES],
        "reference_source": PAPER,
        "modes": {},
    }
    logger_cls = attr("agentdojo.logging", "OutputLogger")
    current: dict[str, OracleScript] = {"script": OracleScript()}  # the oracle's case
    with BackgroundServer(build_backend_app(backend, model_name="agent")) as server:
        for mode in config.modes:
            started = time.perf_counter()
            journal = Journal(
                config.out / f"{mode}.jsonl",
                "key",
                (c.key for c in cases),
                label=f"agentdojo {mode}",
                progress=config.progress,
            )
            name = f"{mode}-{config.model}"
            if mode == "native":
                pipeline = native_pipeline(
                    server.base_url, "agent", name=name, max_turns=config.max_steps
                )
            else:
                pipeline = awm_element(
                    _policy_for(config, backend, lambda: current["script"]),
                    name=name,
                    loop=_loop(),
                    max_turns=config.max_steps,
                )
            with logger_cls(str(config.out / "traces" / mode)):
                for case in [c for c in cases if c.key not in journal]:
                    suite = suites[case.suite]
                    attacker = attacks.get(suite) if attacks and case.injection_task else None
                    if config.model == "oracle":
                        injections = (
                            attacker.attack(
                                suite.get_user_task_by_id(case.user_task),
                                suite.get_injection_task_by_id(case.injection_task),
                            )
                            if attacker
                            else {}
                        )
                        script = oracle_script(suite, case, injections, config.corruption)
                        current["script"] = oracle.script = script
                    t0 = time.perf_counter()
                    utility, security = run_case(pipeline, suite, case, attacker)
                    journal.add(
                        {
                            "key": case.key,
                            "suite": case.suite,
                            "user_task": case.user_task,
                            "injection_task": case.injection_task,
                            "attack": attack if case.injection_task else NO_ATTACK,
                            "utility": utility,
                            "security": security,
                            "wall_s": round(time.perf_counter() - t0, 3),
                        }
                    )
            rows = [journal.done[c.key] for c in cases if c.key in journal.done]
            summary["modes"][mode] = mode_summary(rows, time.perf_counter() - started)
    summary["terminal"] = terminal_lines(summary)
    (config.out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


def mode_summary(rows: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
    """One mode's numbers: :func:`~awm_bench.agentdojo.cases.metrics`, the report's flat
    ``table`` (per suite, then pooled) and the headline (utility)."""
    numbers = metrics(rows)
    table: dict[str, Any] = {}
    for suite, m in numbers["suites"].items():
        table[f"{suite} utility"] = m["utility"]
        table[f"{suite} utility under attack"] = m["utility_under_attack"]
        table[f"{suite} targeted ASR"] = m["targeted_asr"]
    table["utility"] = numbers["utility"]
    table["utility under attack"] = numbers["utility_under_attack"]
    table["targeted ASR"] = numbers["targeted_asr"]
    return {
        "cases": len(rows),
        "correct": sum(bool(r["utility"]) for r in rows),
        **numbers,
        "table": table,
        "headline": numbers["utility"],
        "wall_s": round(wall_s, 2),
    }


def terminal_lines(summary: dict[str, Any]) -> list[str]:
    """The summary as the terminal shows it: each mode's three numbers per suite, then
    AgentDojo's published numbers."""

    def pct(value: Any) -> str:
        return f"{100 * value:.1f}%" if isinstance(value, int | float) else "-"

    lines = []
    for mode, data in summary.get("modes", {}).items():
        for suite, m in data.get("suites", {}).items():
            lines.append(
                f"  [{mode}] {suite:<9} utility {pct(m['utility'])}  under attack "
                f"{pct(m['utility_under_attack'])}  targeted ASR {pct(m['targeted_asr'])}"
            )
    for ref in summary.get("reference_rows", []):
        lines.append(
            f"  published: {ref['label']} [{ref['attack']}] utility {pct(ref['utility'])}  "
            f"under attack {pct(ref['utility_under_attack'])}  "
            f"targeted ASR {pct(ref['targeted_asr'])}"
        )
    if summary.get("reference_rows"):
        lines.append(f"  (published: {summary.get('reference_source', '')})")
    return lines
