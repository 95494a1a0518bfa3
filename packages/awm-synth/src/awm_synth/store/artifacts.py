"""The typed artifacts each stage produces and the next consumes.

They are pydantic models because they cross files (stage checkpoints) and the
wire (JSON answers of the model). SQL and Python artifacts keep the source
text as written, plus what execution learned about it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from awm_core.models import Complexity, NegativeExample, Scenario, ToolCallStep


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


# -- scenarios -----------------------------------------------------------------------------------


class ScenarioBatch(_Model):
    """The expansion stage's answer: new scenarios proposed from seeds and examples."""

    scenarios: list[Scenario]


class ScenarioVerdict(_Model):
    name: str
    suitable: bool
    reason: str = ""


class ScenarioVerdicts(_Model):
    """The classifier's answer: which scenarios suit a database-backed CRUD environment."""

    verdicts: list[ScenarioVerdict]


class ScenarioSelection(_Model):
    """The scenario stage's result: kept scenarios and why the others were dropped."""

    scenarios: list[Scenario]
    rejected: list[ScenarioVerdict] = Field(default_factory=list)
    duplicates: list[dict[str, Any]] = Field(default_factory=list)
    capped: list[str] = Field(default_factory=list)
    embedder: str = ""
    requested: int = 0


# -- tasks -----------------------------------------------------------------------------------------


class TaskDraft(_Model):
    """A task before tools exist: the instruction plus a plan in words."""

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    instruction: str = Field(min_length=10)
    complexity: Complexity
    solution_plan: list[str] = Field(min_length=1)
    expects_refusal: bool = False
    success_criteria: list[str] = Field(default_factory=list)
    failure_criteria: list[str] = Field(default_factory=list)


class TaskSet(_Model):
    tasks: list[TaskDraft]


# -- database --------------------------------------------------------------------------------------


class TableDDL(_Model):
    name: str
    ddl: str


class DatabaseSchema(_Model):
    """Tables (and their indexes) that executed; ``dropped`` failed and were tolerated."""

    tables: list[TableDDL]
    indexes: list[str] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list)

    def sql(self) -> str:
        parts = [t.ddl.rstrip().rstrip(";") + ";" for t in self.tables]
        parts += [i.rstrip().rstrip(";") + ";" for i in self.indexes]
        return "\n\n".join(parts) + "\n"


class SeedData(_Model):
    """INSERTs in foreign-key order that executed; ``dropped`` failed and were tolerated."""

    inserts: list[str]
    dropped: list[str] = Field(default_factory=list)
    frozen: list[tuple[str, str]] = Field(default_factory=list)

    def sql(self) -> str:
        return "\n".join(s.rstrip().rstrip(";") + ";" for s in self.inserts) + "\n"


# -- tool interface ------------------------------------------------------------------------------------

ParamType = Literal["string", "integer", "number", "boolean", "array", "object"]


class ToolParam(_Model):
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    type: ParamType
    location: Literal["path", "query", "body"]
    required: bool = False
    description: str = ""
    example: Any = None


class ToolInterface(_Model):
    """One tool as designed: where it is served, what it takes and returns, which tables it touches."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
    path: str = Field(pattern=r"^/")
    description: str = Field(min_length=5)
    params: list[ToolParam] = Field(default_factory=list)
    response: dict[str, Any] = Field(default_factory=dict)
    tables: list[str] = Field(default_factory=list)
    tasks: list[str] = Field(default_factory=list, description="Task ids this tool serves.")


class ToolInterfaceSpec(_Model):
    tools: list[ToolInterface]


# -- code and verifiers -----------------------------------------------------------------------------------


class ToolCode(_Model):
    """The app's source and the tool names it was found to serve."""

    source: str
    tools: list[str] = Field(default_factory=list)


class TaskSolution(_Model):
    """How one task is proven: its verifier, a replayable solution, and a wrong one."""

    verifier: str
    reference_solution: list[ToolCallStep] = Field(default_factory=list)
    reference_answer: str | None = None
    wrong_solution: NegativeExample | None = None


class VerifierModule(_Model):
    """The verifiers' source (metadata stripped) and each task's solution."""

    source: str
    solutions: dict[str, TaskSolution]
    failed_tasks: list[str] = Field(
        default_factory=list, description="Tasks whose proof failed (not shipped)."
    )
