"""Generated code that hangs, kills its process or eats memory is a repairable error, never a dead run.

Each test hands the sandboxed code or verifier check a real candidate app (a
FastAPI module written to a real bundle folder and hosted by the awm-envs
sandbox worker) with one hostile line in it, and checks that the check comes
back within a bounded time with an error the correction loop feeds back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from awm_core.models import Complexity, Scenario
from awm_synth.checks.sandbox import GIB, CheckLimits, CheckSandbox
from awm_synth.config import SynthConfig
from awm_synth.stages.code import check_code_sandboxed
from awm_synth.stages.correction import Attempt, CheckResult, feedback_message
from awm_synth.stages.verifiers import check_verifiers_sandboxed
from awm_synth.store.artifacts import (
    DatabaseSchema,
    SeedData,
    TableDDL,
    TaskDraft,
    TaskSet,
    TaskSolution,
    ToolCode,
    ToolInterface,
    ToolInterfaceSpec,
    VerifierModule,
)
from awm_synth.store.bundle import manifest_json

pytestmark = pytest.mark.slow

LIMITS = CheckLimits(
    startup_s=4.0,
    call_s=2.0,
    check_s=20.0,
    memory_bytes=1 * GIB,
    verifier_cpu_s=0.5,
    verifier_wall_s=3.0,
)

APP = """
from fastapi import Depends, FastAPI
from sqlalchemy import Column, Integer, String, create_engine
from sqlalchemy.orm import Session, declarative_base, sessionmaker

engine = create_engine("sqlite://")
SessionLocal = sessionmaker(bind=engine)
Base = declarative_base()


class Item(Base):
    __tablename__ = "items"
    id = Column(Integer, primary_key=True)
    name = Column(String, nullable=False)


def get_db():
    db = SessionLocal()
    try:
        yield db
    finally:
        db.close()


app = FastAPI()


@app.get("/items", operation_id="list_items")
def list_items(db: Session = Depends(get_db)):
    return [{"id": i.id, "name": i.name} for i in db.query(Item).order_by(Item.id)]


@app.post("/items/rename", operation_id="rename_item")
def rename_item(item_id: int, name: str, db: Session = Depends(get_db)):
    item = db.get(Item, item_id)
    item.name = name
    db.commit()
    return {"id": item.id, "name": item.name}
"""

SCHEMA = DatabaseSchema(
    tables=[
        TableDDL(
            name="items", ddl="CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)"
        )
    ]
)
SEED = SeedData(inserts=["INSERT INTO items (id, name) VALUES (1, 'lamp')"])


def _tool(tool_name: str, method: str, path: str, **examples: object) -> ToolInterface:
    params = [
        {
            "name": k,
            "type": "integer" if isinstance(v, int) else "string",
            "location": "query",
            "example": v,
        }
        for k, v in examples.items()
    ]
    return ToolInterface.model_validate(
        {
            "name": tool_name,
            "method": method,
            "path": path,
            "description": f"the {tool_name} tool",
            "params": params,
        }
    )


BASE_TOOLS = [
    _tool("list_items", "GET", "/items"),
    _tool("rename_item", "POST", "/items/rename", item_id=1, name="desk lamp"),
]


def _files(source: str) -> dict[str, str]:
    scenario = Scenario(
        name="sandbox_probe", description="a probe for the sandbox", category="test"
    )
    return {
        "manifest.json": manifest_json(scenario, SynthConfig()),
        "schema.sql": SCHEMA.sql(),
        "seed.sql": SEED.sql(),
        "app.py": source,
    }


def _with_tool(body: str, name: str = "hostile") -> tuple[str, ToolInterfaceSpec]:
    source = APP + f'\n\n@app.post("/{name}", operation_id="{name}")\ndef {name}():\n' + body
    spec = ToolInterfaceSpec(tools=[*BASE_TOOLS, _tool(name, "POST", f"/{name}")])
    return source, spec


@pytest.fixture
async def sandbox() -> AsyncIterator[CheckSandbox]:
    async with CheckSandbox(slots=2, limits=LIMITS) as sb:
        yield sb


async def _check_code(sandbox: CheckSandbox, source: str, spec: ToolInterfaceSpec) -> CheckResult:
    code = ToolCode(source=source)
    result = await check_code_sandboxed(sandbox, _files(source), code, spec)
    assert not result.ok
    feedback = feedback_message(Attempt(1, "```python\n...```", code, result), 0.0)
    for error in result.errors[:12]:
        assert error in feedback  # what the model reads next
    return result


async def test_a_well_behaved_app_passes(sandbox: CheckSandbox) -> None:
    code = ToolCode(source=APP)
    result = await check_code_sandboxed(
        sandbox, _files(APP), code, ToolInterfaceSpec(tools=BASE_TOOLS)
    )
    assert result.ok, result.errors
    assert code.tools == ["list_items", "rename_item"]


async def test_an_app_that_hangs_at_import_is_a_fatal_startup_error(sandbox: CheckSandbox) -> None:
    source = APP + "\nwhile True:\n    pass\n"
    result = await _check_code(sandbox, source, ToolInterfaceSpec(tools=BASE_TOOLS))
    assert result.fatal and result.causes == ["startup_timeout"]
    assert "did not finish within 4 s" in result.errors[0]


async def test_a_tool_that_calls_os_exit_is_a_tool_crash(sandbox: CheckSandbox) -> None:
    source, spec = _with_tool("    import os\n    os._exit(3)\n")
    result = await _check_code(sandbox, source, spec)
    assert not result.fatal and result.causes == ["tool_crash"]
    assert result.errors[0].startswith("hostile({}) killed the app's process")
    assert "exited with status 3" in result.errors[0]


async def test_a_tool_that_allocates_without_bound_is_a_memory_error() -> None:
    source, spec = _with_tool(
        # big steps: the limit is reached in a few allocations; the call deadline is far
        # above that, so a busy runner cannot turn the memory error into a timeout
        "    hoard = []\n    while True:\n        hoard.append(bytearray(256 * 1024 * 1024))\n"
    )
    async with CheckSandbox(slots=1, limits=dataclasses.replace(LIMITS, call_s=60.0)) as sb:
        result = await _check_code(sb, source, spec)
    assert not result.fatal and len(result.causes) == 1
    assert result.causes[0] in ("tool_memory", "tool_crash")
    assert result.errors[0].startswith("hostile({})")


async def test_a_tool_that_hangs_is_a_timeout_and_later_tools_still_run(
    sandbox: CheckSandbox,
) -> None:
    source, spec = _with_tool("    while True:\n        pass\n", name="a_hang")
    spec.tools.append(_tool("list_again", "GET", "/items"))  # after the hang: no route
    result = await _check_code(sandbox, source, spec)
    assert result.causes == ["tool_timeout", "missing_tool"]
    assert "did not answer within 2 s" in result.errors[0]


async def test_a_crashing_tool_is_reported_with_its_app_py_line(sandbox: CheckSandbox) -> None:
    source, spec = _with_tool("    return {'n': 1 / 0}\n", name="divide")
    result = await _check_code(sandbox, source, spec)
    assert result.causes == ["tool_500"]
    line = source.splitlines().index("    return {'n': 1 / 0}") + 1
    assert result.errors[0] == (
        f"divide({{}}) crashed: ZeroDivisionError: division by zero "
        f"(app.py line {line}: return {{'n': 1 / 0}})"
    )


async def test_an_import_error_names_the_line(sandbox: CheckSandbox) -> None:
    source = APP + "\nfrobnicate()\n"
    result = await _check_code(sandbox, source, ToolInterfaceSpec(tools=BASE_TOOLS))
    line = len(source.splitlines())
    assert result.fatal and result.causes == ["import_error"]
    assert result.errors[0] == (
        "app.py failed to import: NameError: name 'frobnicate' is not defined "
        f"(app.py line {line}: frobnicate())"
    )


def _verifier_case(verifier_body: str) -> tuple[VerifierModule, TaskSet]:
    source = (
        "def verify_rename(initial, final, final_answer):\n"
        + verifier_body
        + "    row = final.execute('SELECT name FROM items WHERE id = 1').fetchone()\n"
        + "    return {'complete': row[0] == 'desk lamp', 'evidence': {'name': row[0]}}\n"
    )
    module = VerifierModule(
        source=source,
        solutions={
            "rename_lamp": TaskSolution.model_validate(
                {
                    "verifier": "verify_rename",
                    "reference_solution": [
                        {"tool": "rename_item", "arguments": {"item_id": 1, "name": "desk lamp"}}
                    ],
                }
            )
        },
    )
    tasks = TaskSet(
        tasks=[
            TaskDraft(
                id="rename_lamp",
                instruction="Rename item 1 to 'desk lamp'.",
                complexity=Complexity.EASY,
                solution_plan=["rename it"],
            )
        ]
    )
    return module, tasks


async def test_a_sound_verifier_proves_its_task(sandbox: CheckSandbox) -> None:
    module, tasks = _verifier_case("")
    result = await check_verifiers_sandboxed(sandbox, _files(APP), module, tasks)
    assert result.ok, result.errors


async def test_a_verifier_that_loops_forever_is_a_verifier_error(sandbox: CheckSandbox) -> None:
    module, tasks = _verifier_case("    while True:\n        pass\n")
    result = await check_verifiers_sandboxed(sandbox, _files(APP), module, tasks)
    assert module.failed_tasks == ["rename_lamp"]
    assert set(result.causes) == {"verifier_error"}
    assert "CPU time limit" in result.errors[0]


async def test_a_verifier_that_imports_os_cannot_be_imported(
    sandbox: CheckSandbox, tmp_path: Path
) -> None:
    marker = tmp_path / "escaped"
    module, tasks = _verifier_case("")
    module.source = f"import os\nos.system('touch {marker}')\n" + module.source
    result = await check_verifiers_sandboxed(sandbox, _files(APP), module, tasks)
    assert result.fatal and result.causes == ["verifier_import_error"]
    assert "os" in result.errors[0]
    assert not marker.exists()
