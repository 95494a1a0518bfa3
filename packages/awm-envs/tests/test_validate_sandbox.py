"""``awm envs validate`` contains a hostile verifier in a bundle outside the catalog.

The verifier sandbox belongs to awm-verify, which depends on awm-envs; the
validator finds it through the plugin registry. A verifier that shells out or
loops forever must come back as a failed check, not run, crash or hang.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from awm_envs.cli.validate import validate_command
from awm_envs.validation.validate import CATALOG_DIR, in_catalog, validate_environment
from awm_envs.verifiers.pool import VERIFIER_LIMITS, VerifierPool

pytest.importorskip("awm_verify", reason="the verifier sandbox comes with awm-verify")

APP = """
from fastapi import Depends, FastAPI
from sqlalchemy import create_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column


class Base(DeclarativeBase):
    pass


class Light(Base):
    __tablename__ = "lights"
    light_id: Mapped[int] = mapped_column(primary_key=True)
    lit: Mapped[int]


def get_db():
    with Session(create_engine("sqlite://")) as session:
        yield session


app = FastAPI()


@app.post("/lights/{light_id}/on", operation_id="switch_on")
def switch_on(light_id: int, db: Session = Depends(get_db)) -> dict:
    light = db.get(Light, light_id)
    light.lit = 1
    db.commit()
    return {"light_id": light_id, "on": True}
"""

CHECK = (
    "    on = final.execute('SELECT lit FROM lights WHERE light_id = 1').fetchone()[0]\n"
    "    return {'complete': on == 1, 'evidence': {'on': on}}\n"
)


def _bundle(root: Path, verifier_prelude: str) -> Path:
    root.mkdir()
    manifest = {
        "id": "lights",
        "name": "Lights",
        "description": "One light switch, to test the verifier sandbox.",
        "category": "test",
        "reference_time": "2025-01-01T00:00:00Z",
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    (root / "schema.sql").write_text(
        "CREATE TABLE lights (light_id INTEGER PRIMARY KEY, lit INTEGER NOT NULL);\n"
    )
    (root / "seed.sql").write_text("INSERT INTO lights (light_id, lit) VALUES (1, 0);\n")
    (root / "app.py").write_text(APP)
    (root / "verifiers.py").write_text(
        "def verify_light_on(initial, final, final_answer):\n" + verifier_prelude + CHECK
    )
    task = {
        "id": "light_on",
        "instruction": "Switch light 1 on.",
        "complexity": "easy",
        "reference_solution": [{"tool": "switch_on", "arguments": {"light_id": 1}}],
        "verifier": "verify_light_on",
    }
    (root / "tasks.json").write_text(json.dumps([task]))
    return root


def test_a_bundle_outside_the_catalog_is_not_in_the_catalog(tmp_path: Path) -> None:
    assert not in_catalog(_bundle(tmp_path / "b", ""))
    assert in_catalog(CATALOG_DIR / "shop")


def test_a_sound_verifier_passes_in_the_sandbox(tmp_path: Path) -> None:
    result = validate_environment(_bundle(tmp_path / "b", ""), sandbox=True)
    assert result.passed, result


def test_a_verifier_that_shells_out_is_contained_and_fails(tmp_path: Path) -> None:
    marker = tmp_path / "escaped"
    bundle = _bundle(tmp_path / "b", f"    import os\n    os.system('touch {marker}')\n")
    result = validate_environment(bundle)  # default: sandboxed, it is not a catalog bundle
    assert not result.passed
    (task,) = result.tasks
    # awm-verify hands verifiers an ``os`` without process functions: the call fails there.
    assert task.problems and all("failed in the sandbox" in p for p in task.problems)
    assert "system" in task.problems[0]
    assert not marker.exists()


def test_a_verifier_that_loops_forever_is_stopped_and_fails(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "b", "    while True:\n        pass\n")
    with VerifierPool(size=1, limits=VERIFIER_LIMITS.with_(cpu_s=0.3, wall_s=2.0)) as pool:
        result = validate_environment(bundle, verifier_pool=pool)
    (task,) = result.tasks
    assert not task.passed
    assert any("timeout" in p for p in task.problems), task.problems


def test_the_cli_reports_a_hostile_verifier_as_a_failed_check(tmp_path: Path) -> None:
    marker = tmp_path / "escaped"
    bundle = _bundle(tmp_path / "b", f"    import os\n    os.system('touch {marker}')\n")
    result = CliRunner().invoke(validate_command, [str(bundle), "--json"])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    (env,) = json.loads(result.output)
    assert env["passed"] is False
    assert "failed in the sandbox" in json.dumps(env["tasks"])
    assert not marker.exists()


def test_no_sandbox_runs_the_verifier_in_process(tmp_path: Path) -> None:
    marker = tmp_path / "ran_here"
    bundle = _bundle(tmp_path / "b", f"    open('{marker}', 'w').close()\n")
    result = CliRunner().invoke(validate_command, [str(bundle), "--no-sandbox", "--json"])
    assert result.exit_code == 0, result.output
    assert marker.exists()  # trusted path: the verifier really ran here
