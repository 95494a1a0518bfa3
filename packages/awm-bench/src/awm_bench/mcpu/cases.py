"""MCP-Universe tasks as awm sees them, and the oracle built from their expected calls.

Nothing here imports ``mcpuniverse`` (it lives in its own venv, see
:mod:`awm_bench.mcpu.upstream`): reading task and benchmark files (MCP-Universe's
format: task JSON, benchmark YAML), the oracle's calls and answer, the corruptions and
the success-rate arithmetic are awm's own logic, tested in the main suite. Scoring is
MCP-Universe's ``Evaluator``, run by the driver in its venv.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awm_core.errors import UnknownSubsetError

TASKS_DIR = Path(__file__).parent / "tasks"
"""awm's offline task set (awm-authored, in MCP-Universe's format; see its README)."""

DOMAINS = ("calculator", "echo", "date", "multi_server")
"""The offline set's domains, one benchmark YAML each."""

ORACLE_FILE = "oracle.json"
RESULT_REF = re.compile(r"\$result\[(\d+)\]((?:\.[A-Za-z_]\w*|\[\d+\])*)")
"""``$result[i]``, optionally followed by a path into the result's JSON
(``$result[1].places[0].name``)."""
PATH_STEP = re.compile(r"\.([A-Za-z_]\w*)|\[(\d+)\]")

# MCP-Universe's function_call agent finishes with this JSON (its function_call_prompt.j2)
FINAL_ANSWER_KEYS = ("thought", "answer")


class TaskFileError(ValueError):
    """A task or benchmark file is not in MCP-Universe's format."""


@dataclass(frozen=True)
class ExpectedCall:
    """One call of a task's ground truth: ``tool`` is ``{server}__{tool}``."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Oracle:
    """A task's expected calls and the answer built from their results."""

    calls: tuple[ExpectedCall, ...]
    answer: Any


@dataclass(frozen=True)
class McpuTask:
    """One MCP-Universe task: its file, its domain and the agent its benchmark gives it.

    ``agent`` is the ``function_call`` agent's config from the benchmark YAML
    (instruction, servers, max_iterations, ...); ``servers`` the MCP servers the
    agent is given (the agent's, else the task's own ``mcp_servers``).
    """

    id: str
    domain: str
    path: Path
    question: str
    output_format: dict[str, Any]
    servers: tuple[dict[str, Any], ...]
    agent: dict[str, Any]
    oracle: Oracle | None = None


def parse_oracle(data: Mapping[str, Any]) -> Oracle:
    """An ``oracle.json`` entry: ``{"calls": [{"tool", "arguments"}], "answer": ...}``."""
    calls = tuple(
        ExpectedCall(str(c["tool"]), dict(c.get("arguments") or {})) for c in data["calls"]
    )
    return Oracle(calls, data.get("answer"))


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TaskFileError(f"{path}: not a readable JSON task ({exc})") from exc
    if not isinstance(data, dict) or "question" not in data:
        raise TaskFileError(f"{path}: an MCP-Universe task needs a 'question'")
    return data


def _oracles(folder: Path) -> dict[str, Oracle]:
    path = folder / ORACLE_FILE
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: parse_oracle(v) for k, v in data.items() if not k.startswith("_")}


def _task(path: Path, root: Path, agent: dict[str, Any], oracles: Mapping[str, Oracle]) -> McpuTask:
    data = _read_json(path)
    try:
        rel = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = path.name
    servers = agent.get("servers") or data.get("mcp_servers") or []
    if data.get("use_specified_server"):
        servers = data.get("mcp_servers") or []
    return McpuTask(
        id=rel.removesuffix(".json"),
        domain=path.parent.name,
        path=path.resolve(),
        question=str(data["question"]),
        output_format=dict(data.get("output_format") or {}),
        servers=tuple(dict(s) for s in servers),
        agent=dict(agent),
        oracle=oracles.get(rel),
    )


def _resolve(task: str, yaml_path: Path) -> Path:
    """A benchmark YAML's task path: MCP-Universe writes them relative to its configs
    folder, so try the YAML's folder and each folder above it."""
    candidate = Path(task)
    if candidate.is_absolute():
        return candidate
    for base in [yaml_path.parent, *yaml_path.parent.parents]:
        if (base / candidate).exists():
            return base / candidate
    raise TaskFileError(f"{yaml_path}: task {task} not found next to it or in a folder above")


def load_benchmark(yaml_path: Path) -> list[McpuTask]:
    """The tasks of an MCP-Universe benchmark YAML (``kind: benchmark``), each with the
    agent config the benchmark names; ``oracle.json`` next to the YAML, if any."""
    import yaml

    docs = [d for d in yaml.safe_load_all(yaml_path.read_text(encoding="utf-8")) if d]
    agents = {
        d["spec"]["name"]: dict(d["spec"].get("config") or {})
        for d in docs
        if str(d.get("kind", "")).lower() == "agent"
    }
    benchmarks = [d["spec"] for d in docs if str(d.get("kind", "")).lower() == "benchmark"]
    if not benchmarks:
        raise TaskFileError(f"{yaml_path}: no 'kind: benchmark' document")
    oracles = _oracles(yaml_path.parent)
    out = []
    for spec in benchmarks:
        agent = agents.get(spec.get("agent", ""), {})
        for task in spec.get("tasks") or []:
            out.append(_task(_resolve(str(task), yaml_path), yaml_path.parent, agent, oracles))
    return out


def load_folder(folder: Path) -> list[McpuTask]:
    """Every task of a folder: its benchmark YAMLs if it has any, else each task JSON
    (recursively) with a plain ``function_call`` agent on the task's own servers."""
    yamls = sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.yml"))
    if yamls:
        return [t for y in yamls for t in load_benchmark(y)]
    oracles = _oracles(folder)
    files = sorted(p for p in folder.rglob("*.json") if p.name != ORACLE_FILE)
    return [_task(p, folder, {}, oracles) for p in files]


def load_source(source: Path) -> list[McpuTask]:
    """A benchmark YAML, a task folder, or one task JSON."""
    if source.is_dir():
        return load_folder(source)
    if source.suffix in (".yaml", ".yml"):
        return load_benchmark(source)
    return [_task(source, source.parent, {}, _oracles(source.parent))]


def load_offline(domains: Sequence[str] = DOMAINS) -> list[McpuTask]:
    """awm's offline task set (``tasks/DOMAIN.yaml``), in file order."""
    return [t for d in domains for t in load_benchmark(TASKS_DIR / f"{d}.yaml")]


def select(
    tasks: Sequence[McpuTask], only: Sequence[str], per_domain: int | None
) -> list[McpuTask]:
    """The tasks of the domains in ``only`` (all when empty), the first ``per_domain``
    of each (the offline set's first task of a domain is its simplest)."""
    domains = list(dict.fromkeys(t.domain for t in tasks))
    unknown = [d for d in only if d not in domains]
    if unknown:
        raise UnknownSubsetError(
            f"not MCP-Universe domains here: {unknown} (one of {', '.join(domains)})"
        )
    out: list[McpuTask] = []
    for domain in domains:
        if only and domain not in only:
            continue
        mine = [t for t in tasks if t.domain == domain]
        out += mine if per_domain is None else mine[:per_domain]
    return out


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _walk(value: Any, path: str) -> Any:
    """``value`` followed along ``path`` (``.key`` and ``[index]`` steps); ``""`` where
    a step does not exist (a failed call's error text has no fields)."""
    for key, index in PATH_STEP.findall(path):
        if key and isinstance(value, dict) and key in value:
            value = value[key]
        elif index and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            return ""
    return value


def fill_answer(answer: Any, results: Sequence[str]) -> Any:
    """The oracle's answer with ``$result[i]`` replaced by the i-th call's result text:
    a string that is only the reference becomes the result parsed as JSON (when it is
    JSON), a reference inside a longer string the raw text; a missing result is ``""``.
    A path after the reference (``$result[2].places[0].name``) picks a value out of
    the parsed result (``""`` when it is not there)."""

    def value(match: re.Match[str]) -> Any:
        i, path = int(match.group(1)), match.group(2)
        text = results[i] if i < len(results) else ""
        return _walk(_parsed(text), path) if path else _parsed(text)

    def inline(match: re.Match[str]) -> str:
        found = value(match)
        if not match.group(2):
            i = int(match.group(1))
            return results[i] if i < len(results) else ""
        return found if isinstance(found, str) else json.dumps(found)

    if isinstance(answer, str):
        whole = RESULT_REF.fullmatch(answer)
        if whole:
            return value(whole)
        return RESULT_REF.sub(inline, answer)
    if isinstance(answer, list):
        return [fill_answer(a, results) for a in answer]
    if isinstance(answer, dict):
        return {k: fill_answer(v, results) for k, v in answer.items()}
    return answer


def awm_tool_name(name: str) -> str:
    """An MCP-Universe tool name (``{server}__{tool}``) as a valid awm tool name: awm's
    names are identifiers, and servers such as ``google-maps`` have dashes."""
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return cleaned if re.match(r"[A-Za-z_]", cleaned) else f"_{cleaned}"


def answer_text(answer: Any) -> str:
    """The answer as the agent's response string (MCP-Universe json-dumps a dict answer)."""
    return answer if isinstance(answer, str) else json.dumps(answer)


def final_message(answer: Any) -> str:
    """The function_call agent's closing message carrying ``answer``."""
    return json.dumps({"thought": "The expected calls are done.", "answer": answer})


def corrupt_calls(calls: Sequence[ExpectedCall], how: str | None) -> list[ExpectedCall]:
    """The oracle with one fault: ``drop_argument`` (the first call with arguments loses
    its first one) or ``rename_tool`` (the first call's tool renamed)."""
    out = list(calls)
    if how is None:
        return out
    for i, call in enumerate(out):
        if how == "rename_tool":
            out[i] = ExpectedCall(f"{call.tool}_renamed", call.arguments)
            return out
        if how == "drop_argument" and call.arguments:
            first = next(iter(call.arguments))
            out[i] = ExpectedCall(
                call.tool, {k: v for k, v in call.arguments.items() if k != first}
            )
            return out
    return out


def task_success(results: Sequence[Mapping[str, Any]]) -> bool:
    """MCP-Universe's task success: every evaluator passed (and there was one)."""
    return bool(results) and all(bool(r.get("passed")) for r in results)


def evaluator_score(results: Sequence[Mapping[str, Any]]) -> float:
    """The share of a task's evaluators that passed (the paper's evaluator score)."""
    return sum(bool(r.get("passed")) for r in results) / len(results) if results else 0.0


def domain_scores(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per domain: tasks, SR (success rate) and AE (mean evaluator score), from case rows
    (``domain``, ``success``, ``evaluator_score``)."""
    out: dict[str, dict[str, Any]] = {}
    for domain in dict.fromkeys(str(r["domain"]) for r in rows):
        mine = [r for r in rows if r["domain"] == domain]
        out[domain] = {
            "tasks": len(mine),
            "SR": sum(bool(r["success"]) for r in mine) / len(mine),
            "AE": sum(float(r["evaluator_score"]) for r in mine) / len(mine),
        }
    return out
