"""What an MCP-Universe task needs before it can run: its servers' keys and commands.

The paper's domains reach real services (Google Maps, GitHub, Yahoo Finance, Blender,
Notion, a browser, search APIs). Before a run starts, awm asks the driver what each
task needs that is not set up here: the servers the agent gets and the ones its
evaluators call (:data:`EVALUATOR_NEEDS`), each server's unset template variables in
MCP-Universe's server list (``{{GOOGLE_MAPS_API_KEY}}``...) and missing command
(``npx``, ``docker``), and the variables left unrendered in the task's question and
evaluators (``{{GITHUB_PERSONAL_ACCOUNT_NAME}}``). Anything missing stops the run with
:class:`McpuServicesMissingError`, which names every variable and server, before a
single task runs. A service that is set up but unreachable (no network) is not
detected here; its tasks fail as they would in MCP-Universe.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from awm_bench.mcpu.cases import McpuTask
from awm_bench.mcpu.upstream import SERVERS_ENV, Driver
from awm_core.errors import AWMError

EVALUATOR_NEEDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "google_maps.": (("google-maps",), ()),
    "github.": (("github",), ()),
    "notion.": (("notion",), ()),
    "blender.": ((), ("BLENDER_APP_PATH",)),
    "google_search.llm_as_a_judge": ((), ("OPENAI_API_KEY",)),
    "deepresearch.": ((), ("OPENAI_API_KEY",)),
}
"""Evaluator op-name prefix -> (servers it calls, variables it reads), as read from
mcpuniverse 1.1.3's ``mcpuniverse/evaluator/*/functions.py``: the Google Maps, GitHub
and Notion checks call those MCP servers themselves, the Blender checks run Blender,
the LLM-as-judge checks call OpenAI."""


@dataclass(frozen=True)
class Missing:
    """One thing a task needs that is not set up: a server's (``server``, with ``why``
    it is needed) or the task's own (``server`` empty)."""

    server: str
    why: str = ""
    env: tuple[str, ...] = ()
    command: str = ""
    unknown: bool = False

    def describe(self) -> str:
        parts = []
        if self.unknown:
            parts.append(f"no server named {self.server} in MCP-Universe's server list")
        if self.command:
            parts.append(f"command {self.command} not found")
        if self.env:
            parts.append("set " + ", ".join(self.env))
        where = f"server {self.server} ({self.why})" if self.server else "the task"
        return f"{where}: {'; '.join(parts)}"


@dataclass
class TaskNeeds:
    """What one task lacks (empty when it can run)."""

    task_id: str
    missing: list[Missing] = field(default_factory=list)


def parse_needs(task_id: str, answer: Mapping[str, Any]) -> TaskNeeds:
    """The driver's ``needs`` answer as :class:`TaskNeeds` (only what is missing)."""
    missing = []
    for server in answer.get("servers") or []:
        item = Missing(
            server=str(server["server"]),
            why=str(server.get("why", "")),
            env=tuple(server.get("env") or ()),
            command=str(server.get("command", "")) if server.get("command_missing") else "",
            unknown=bool(server.get("unknown")),
        )
        if item.unknown or item.command or item.env:
            missing.append(item)
    if answer.get("env"):
        missing.append(Missing(server="", env=tuple(answer["env"])))
    return TaskNeeds(task_id, missing)


class McpuServicesMissingError(AWMError):
    """MCP-Universe tasks need keys or services that are not set up; nothing ran.

    ``needs`` holds every task that lacks something; the message groups the tasks by
    what they lack and names each variable, command and server."""

    def __init__(self, needs: Sequence[TaskNeeds]) -> None:
        self.needs = [n for n in needs if n.missing]
        groups: dict[str, list[str]] = {}
        for need in self.needs:
            for item in need.missing:
                groups.setdefault(item.describe(), []).append(need.task_id)
        lines = []
        for what, tasks in groups.items():
            shown = ", ".join(tasks[:2]) + (f" and {len(tasks) - 2} more" if len(tasks) > 2 else "")
            lines.append(f"  - {what} [{len(tasks)} task(s): {shown}]")
        super().__init__(
            f"{len(self.needs)} MCP-Universe task(s) need services that are not set up "
            "here, so nothing was run:\n" + "\n".join(lines) + "\nSet them (docs/bench.md, "
            f"MCP-Universe, lists each domain's), or point {SERVERS_ENV} at a server list "
            "that replaces those servers."
        )

    @property
    def variables(self) -> list[str]:
        """Every missing variable, once."""
        return sorted({v for n in self.needs for m in n.missing for v in m.env})

    @property
    def servers(self) -> list[str]:
        """Every server that lacks something, once."""
        return sorted({m.server for n in self.needs for m in n.missing if m.server})


async def task_needs(driver: Driver, task: McpuTask) -> TaskNeeds:
    """Ask the driver what ``task`` lacks (nothing is started)."""
    answer = await driver.request(
        "needs",
        task=str(task.path),
        agent=task.agent,
        servers=list(task.servers),
        op_servers={k: list(v[0]) for k, v in EVALUATOR_NEEDS.items() if v[0]},
        op_env={k: list(v[1]) for k, v in EVALUATOR_NEEDS.items() if v[1]},
    )
    return parse_needs(task.id, answer)


async def require_services(driver: Driver, tasks: Sequence[McpuTask]) -> None:
    """Raise :class:`McpuServicesMissingError` when any task lacks a key or service."""
    needs = [await task_needs(driver, task) for task in tasks]
    if any(n.missing for n in needs):
        raise McpuServicesMissingError(needs)
