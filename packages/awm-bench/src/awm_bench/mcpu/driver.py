"""MCP-Universe's side of the bridge: run by the Python of mcpuniverse's own venv.

mcpuniverse 1.1.3 pins ``mcp==1.13.1`` (awm needs mcp 2.x) and a stack of its own, so
it gets a venv of its own; awm starts this file there (``python -I driver.py``) and
talks to it in JSON lines on stdin/stdout, one request and one answer at a time.
Nothing of awm is imported here: everything below is MCP-Universe's own code.

Requests (``{"op": ..., ...}``), each answered with ``{"ok": true, ...}`` or
``{"ok": false, "error": ...}``:

- ``version``: mcpuniverse's version.
- ``needs`` (``task``, ``agent``, ``servers``, ``op_servers``, ``op_env``): what the
  task needs that is not set up, starting nothing: each server's (from MCP-Universe's
  server list) unset template variables and missing command, the variables its question
  and evaluators leave unrendered, and those the evaluator ops need (``op_servers`` /
  ``op_env``: op-name prefix to servers / variables, awm's table).
- ``open`` (``task``, ``agent``): load the task (``Task``), run its ``prepare``,
  start its servers through MCP-Universe's ``function_call`` agent (its MCP manager
  and clients), and return the agent's first request as the agent itself builds it
  (its prompt and its function-calling tools, recorded by running the agent against
  an LLM that records and stops) and the tools, named ``{server}__{tool}``.
- ``call`` (``name``, ``arguments``): call a tool the way the ``function_call`` agent
  does (``BaseAgent.call_tool``, traced) and return the text the agent would read.
- ``evaluate`` (``answer``): read the final message as the agent reads its own (the
  ``answer`` of its closing ``{"thought", "answer"}`` JSON; any other text as it is),
  score it with the task's own evaluators (``Task.evaluate``), then reset
  (``Task.reset`` with the calls' trace) and clean up.
- ``native`` (``task``, ``agent``, ``llm``): MCP-Universe's own ``BenchmarkRunner``
  on the one task, its ``function_call`` agent, an ``openai`` LLM at ``llm.base_url``.

``AWM_MCPU_SERVERS`` (the path of a server list in MCP-Universe's own
``server_list.json`` format) adds to and replaces entries of MCP-Universe's built-in
list for every ``MCPManager`` of the driver (the agent's, the runner's and the ones
the evaluators build), so a server can be swapped for a local stand-in.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import shutil
import sys
import tempfile
import traceback
from typing import Any, TextIO

AGENT_NAME = "awm-agent"
LLM_NAME = "awm-llm"
SERVERS_ENV = "AWM_MCPU_SERVERS"
TEMPLATE_VAR = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def _agent_config(agent: dict[str, Any], servers: list[dict[str, Any]]) -> dict[str, Any]:
    config = {k: v for k, v in agent.items() if k != "llm"}
    config["servers"] = servers
    config.setdefault("max_iterations", 20)
    return config


def use_server_list(path: str) -> None:
    """Every ``MCPManager`` built without a config of its own reads MCP-Universe's
    built-in server list with the entries of ``path`` added over it."""
    from mcpuniverse.mcp import manager

    builtin = os.path.join(os.path.dirname(os.path.realpath(manager.__file__)), "configs")
    with open(os.path.join(builtin, "server_list.json"), encoding="utf-8") as f:
        merged = json.load(f)
    with open(path, encoding="utf-8") as f:
        merged.update(json.load(f))
    load_configs = manager.MCPManager.load_configs

    def load_merged(self: Any, config: Any = None) -> None:
        load_configs(self, copy.deepcopy(merged) if config in (None, "") else config)

    manager.MCPManager.load_configs = load_merged


def _task_servers(req: dict[str, Any], task: Any) -> list[dict[str, Any]]:
    """The servers the agent gets: the task's own when it says so, else the benchmark's."""
    if task.use_specified_server():
        return list(task.get_mcp_servers())
    return list(req.get("servers") or task.get_mcp_servers())


def _tool_text(response: Any) -> tuple[str, bool]:
    """The text MCP-Universe's function_call agent puts in its tool message."""
    from mcp.types import TextContent

    content = response.content[0] if getattr(response, "content", None) else None
    if not isinstance(content, TextContent):
        return "Error: Tool output is not a text", True
    return content.text.strip(), bool(getattr(response, "isError", False))


class Episode:
    """One task opened for an awm episode: its agent (servers, tools) and its trace."""

    def __init__(self, task: Any, agent: Any, tracer: Any, collector: Any) -> None:
        self.task = task
        self.agent = agent
        self.tracer = tracer
        self.collector = collector


async def op_open(state: dict[str, Any], req: dict[str, Any]) -> dict[str, Any]:
    from mcpuniverse.agent.function_call import FunctionCall
    from mcpuniverse.benchmark.task import Task
    from mcpuniverse.common.context import Context
    from mcpuniverse.mcp.manager import MCPManager
    from mcpuniverse.tracer import Tracer
    from mcpuniverse.tracer.collectors.memory import MemoryCollector

    await _close(state)
    context = Context()
    task = Task(req["task"], context=context)
    await task.prepare()
    servers = _task_servers(req, task)
    agent = FunctionCall(
        MCPManager(context=context), None, _agent_config(req.get("agent") or {}, servers)
    )
    await agent.initialize()
    collector = MemoryCollector()
    state["episode"] = Episode(task, agent, Tracer(collector=collector), collector)
    tools = [
        {
            "name": f"{server}__{tool.name}",
            "description": tool.description or "",
            "input_schema": tool.inputSchema or {"type": "object"},
        }
        for server, listed in agent._tools.items()
        for tool in listed
    ]
    request = await _first_request(agent, task)
    return {"instruction": request["messages"][0]["content"], "request": request, "tools": tools}


class _FirstRequest:
    """Sits in the agent's LLM seat: keeps the first request and answers None, on which
    the function_call agent stops at once."""

    def __init__(self) -> None:
        self.request: dict[str, Any] = {}

    def generate(self, messages: list[dict[str, Any]], **kwargs: Any) -> None:
        if not self.request:
            self.request = {"messages": copy.deepcopy(messages), "tools": kwargs.get("tools")}

    def dump_config(self) -> dict[str, Any]:
        return {}


async def _first_request(agent: Any, task: Any) -> dict[str, Any]:
    """The agent's first request for ``task``, as its own ``execute`` builds it (the
    ``BenchmarkRunner`` call): its prompt as the one user message, its tools."""
    from mcpuniverse.tracer import Tracer

    recorder = _FirstRequest()
    agent._llm = recorder
    try:
        await agent.execute(
            task.get_question(), output_format=task.get_output_format(), tracer=Tracer()
        )
    finally:
        agent._llm = None
        agent.reset()
    return recorder.request


async def op_call(state: dict[str, Any], req: dict[str, Any]) -> dict[str, Any]:
    episode: Episode = state["episode"]
    try:
        server, tool = episode.agent._parse_function_call_name(req["name"])
        response = await episode.agent.call_tool(
            {"server": server, "tool": tool, "arguments": req.get("arguments") or {}},
            tracer=episode.tracer,
        )
        text, is_error = _tool_text(response)
    except Exception as exc:  # the agent turns any failure into an error message
        text, is_error = f"Error: {str(exc)[:300]}", True
    return {"text": text, "is_error": is_error}


def _results(evaluations: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "func": r.config.func,
            "op": r.config.op,
            "desc": r.config.desc,
            "passed": bool(r.passed),
            "reason": r.reason,
            "error": (r.error or "")[:2000],
        }
        for r in evaluations
    ]


async def _agents_answer(agent: Any, text: str) -> str:
    """What the function_call agent makes of ``text`` as its final message: the
    ``answer`` of its closing JSON (as the runner reads a response), else ``text``."""
    from mcpuniverse.tracer import Tracer

    response = await agent._handle_content_response(text.strip(), [], 0, [], Tracer())
    agent.reset()
    return text if response is None else str(response.get_response_str())


async def op_evaluate(state: dict[str, Any], req: dict[str, Any]) -> dict[str, Any]:
    episode: Episode = state["episode"]
    answer = await _agents_answer(episode.agent, req.get("answer") or "")
    evaluations = await episode.task.evaluate(answer)
    await episode.task.reset(episode.collector.get(episode.tracer.trace_id))
    await _close(state)
    return {"results": _results(evaluations), "answer": answer}


def _unset(*texts: Any) -> list[str]:
    """The ``{{ VAR }}`` left in MCP-Universe's rendered templates."""
    found = TEMPLATE_VAR.findall(json.dumps(texts, default=str))
    return sorted(set(found) - {"PORT"})


def _server_needs(manager: Any, name: str, why: str) -> dict[str, Any]:
    from mcpuniverse.mcp.config import ServerConfig

    need: dict[str, Any] = {"server": name, "why": why, "unknown": False, "env": []}
    need["command"], need["command_missing"] = "", False
    raw = getattr(manager, "_raw_configs", {}).get(name)
    if raw is None:
        need["unknown"] = True
        return need
    config = ServerConfig.from_dict(copy.deepcopy(raw))
    config.render_template(params=None)  # what build_client does before it starts one
    need["env"] = _unset(config.list_unspecified_params())
    need["command"] = config.stdio.command
    need["command_missing"] = bool(config.stdio.command) and not shutil.which(config.stdio.command)
    return need


async def op_needs(state: dict[str, Any], req: dict[str, Any]) -> dict[str, Any]:
    from mcpuniverse.benchmark.task import Task
    from mcpuniverse.mcp.manager import MCPManager

    task = Task(req["task"])
    manager = MCPManager()
    wanted = {str(s["name"]): "the agent's servers" for s in _task_servers(req, task)}
    ops = [e._config.op for e in task.get_evaluators() if e._config.op]
    env: set[str] = set()
    for op in ops:
        for prefix, names in (req.get("op_servers") or {}).items():
            if op.startswith(prefix):
                for name in names:
                    wanted.setdefault(name, f"the evaluator {op}")
        for prefix, names in (req.get("op_env") or {}).items():
            if op.startswith(prefix):
                env.update(n for n in names if not os.environ.get(n))
    configs = [e._config for e in task.get_evaluators()]
    env.update(_unset(task.get_question(), [(c.value, c.op_args) for c in configs]))
    servers = [_server_needs(manager, name, why) for name, why in wanted.items()]
    return {"servers": servers, "env": sorted(env)}


async def _close(state: dict[str, Any]) -> None:
    episode: Episode | None = state.pop("episode", None)
    if episode is None:
        return
    try:
        await episode.task.cleanup()
    finally:
        await episode.agent.cleanup()


def _benchmark_yaml(req: dict[str, Any], servers: list[dict[str, Any]]) -> str:
    import yaml

    llm = req["llm"]
    llm_config = {
        "model_name": llm["model"],
        "base_url": llm["base_url"],
        "api_key": llm.get("api_key") or "EMPTY",
        "timeout": int(llm.get("timeout", 900)),
    }
    for key in ("temperature", "top_p", "max_completion_tokens", "seed"):
        if llm.get(key) is not None:
            llm_config[key] = llm[key]
    agent = _agent_config(req.get("agent") or {}, servers)
    agent["llm"] = LLM_NAME
    docs = [
        {"kind": "llm", "spec": {"name": LLM_NAME, "type": "openai", "config": llm_config}},
        {"kind": "agent", "spec": {"name": AGENT_NAME, "type": "function_call", "config": agent}},
        {
            "kind": "benchmark",
            "spec": {"description": "awm", "agent": AGENT_NAME, "tasks": [req["task"]]},
        },
    ]
    return yaml.safe_dump_all(docs, sort_keys=False)


async def op_native(state: dict[str, Any], req: dict[str, Any]) -> dict[str, Any]:
    from mcpuniverse.benchmark.runner import BenchmarkRunner
    from mcpuniverse.benchmark.task import Task
    from mcpuniverse.tracer.collectors.memory import MemoryCollector

    await _close(state)
    task = Task(req["task"])
    servers = _task_servers(req, task)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(_benchmark_yaml(req, servers))
    try:
        collector = MemoryCollector()
        outputs = await BenchmarkRunner(f.name).run(trace_collector=collector)
    finally:
        os.unlink(f.name)
    result = outputs[0].task_results[req["task"]]
    trace_id = outputs[0].task_trace_ids[req["task"]]
    calls, answer = [], None
    for record in collector.get(trace_id):
        for data in (r.data for r in record.records):
            if data.get("type") == "tool":
                calls.append(
                    {
                        "tool": f"{data.get('server', '')}__{data.get('tool_name', '')}",
                        "arguments": data.get("arguments"),
                        "error": data.get("error", ""),
                    }
                )
            elif "response" in data and "messages" in data:
                answer = data["response"]
    return {
        "results": _results(result["evaluation_results"]),
        "calls": calls,
        "answer": answer,
    }


async def op_version(state: dict[str, Any], req: dict[str, Any]) -> dict[str, Any]:
    from importlib.metadata import version

    return {"version": version("mcpuniverse")}


OPS = {
    "version": op_version,
    "needs": op_needs,
    "open": op_open,
    "call": op_call,
    "evaluate": op_evaluate,
    "native": op_native,
}


async def serve(out: TextIO) -> None:
    """Answer requests until stdin closes."""
    loop = asyncio.get_running_loop()
    state: dict[str, Any] = {}
    try:
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                break
            if not line.strip():
                continue
            try:
                req = json.loads(line)
                answer = {"ok": True, **(await OPS[req["op"]](state, req))}
            except Exception as exc:
                traceback.print_exc()
                answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            out.write(json.dumps(answer, default=str) + "\n")
            out.flush()
    finally:
        await _close(state)


def main() -> None:
    # the protocol owns the real stdout; anything printed (logs, banners) goes to stderr
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if os.environ.get(SERVERS_ENV):
        use_server_list(os.environ[SERVERS_ENV])
    asyncio.run(serve(out))


if __name__ == "__main__":
    main()
