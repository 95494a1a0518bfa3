"""A wrong name gets a suggestion, a missing package is named, a bad local model fails fast."""

from __future__ import annotations

import subprocess
import sys

import click
from click.testing import CliRunner

from awm_core.cli import _Root, build_cli


def test_a_command_from_a_package_that_is_not_installed_names_the_package() -> None:
    light = _Root(name="awm")  # what `awm` is with awm-core alone: no demo, no verify
    light.add_command(click.Command("run", callback=lambda: None))
    for name, package in (("demo", "awm-bench"), ("verify", "awm-verify")):
        result = CliRunner().invoke(light, [name])
        assert result.exit_code == 2
        assert f"comes with {package}" in result.output and "install" in result.output
    result = CliRunner().invoke(light, ["rnu"])
    assert "Did you mean 'run'?" in result.output


def test_a_model_name_where_a_backend_spec_belongs_is_explained() -> None:
    from awm_core import get_backend
    from awm_core.errors import UnknownNameError

    try:
        get_backend("gpt-4o")
    except UnknownNameError as exc:
        assert "openai:gpt-4o" in str(exc)
    else:
        raise AssertionError("gpt-4o is not a backend spec")


def test_typos_in_environment_and_task_names_get_a_suggestion() -> None:
    from awm_core.errors import UnknownNameError

    assert UnknownNameError("environment", "shpo", ["bank", "shop"]).suggestions == ["shop"]
    result = CliRunner().invoke(build_cli(), ["run", "--env", "shpo", "--reference"])
    assert "did you mean 'shop'?" in str(result.exception)


def test_a_task_of_another_environment_names_that_environment() -> None:
    result = CliRunner().invoke(
        build_cli(), ["run", "--task", "aeropress_stock", "--reference", "--no-save"]
    )
    message = str(result.exception)
    assert "--env defaults to fake_notes" in message and "pass --env shop" in message


def test_an_unknown_local_model_fails_before_torch_is_imported() -> None:
    code = (
        "import sys\n"
        "from awm_core import get_backend\n"
        "from awm_core.llm.base import LLMConfigError\n"
        "try:\n"
        "    get_backend('local:smollm')\n"
        "except LLMConfigError as exc:\n"
        "    print(exc)\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "did you mean 'smollm2'?" in out.stdout and out.stdout.strip().endswith("False")
