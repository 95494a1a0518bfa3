"""The contracts in awm-core: a wrong registration fails at registration, naming its plugin."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from awm_core import hookimpl
from awm_core.argcheck import check_arguments
from awm_core.contracts import (
    CODE_JUDGE,
    DEFAULT_JUDGE,
    Benchmark,
    BenchmarkConfig,
    EnvSource,
    Judge,
    JudgeRequest,
    default_judge,
)
from awm_core.errors import DuplicateNameError, PluginRegistrationError, UnknownNameError
from awm_core.models import Verdict, VerdictLabel
from awm_core.registry import (
    BENCHMARKS,
    ENV_SOURCES,
    JUDGES,
    VERIFIER_SIGNATURES,
    collect,
    get_benchmark,
    get_env_sources,
    get_judge,
    list_benchmarks,
)
from awm_core.toolcalls import validate_call

Register = Callable[..., object]


class _Source:
    def list_ids(self) -> list[str]:
        return ["one"]

    def path(self, env_id: str) -> Path:
        return Path("/nowhere") / env_id


class _Benchmark:
    name = "toy"
    title = "Toy"
    modes = ("awm",)

    def available(self) -> str | None:
        return None

    def convert(self, dest: Path, *, limit: int | None = None) -> list[Path]:
        return [dest / "toy"]

    def run(self, config: BenchmarkConfig) -> dict[str, Any]:
        return {"benchmark": self.name, "modes": {}}


class _Judge:
    name = "always"

    async def judge(self, request: JudgeRequest) -> Verdict:
        return Verdict(label=VerdictLabel.COMPLETED, reasoning="always")


def test_a_valid_plugin_registers_every_kind(register_plugin: Register) -> None:
    class Plugin:
        @hookimpl
        def register_env_sources(self, register: Any) -> None:
            register("toy-source", _Source())

        @hookimpl
        def register_benchmarks(self, register: Any) -> None:
            register("toy", _Benchmark())

        @hookimpl
        def register_judges(self, register: Any) -> None:
            register("always", _Judge)

    register_plugin(Plugin(), name="toy-plugin")
    assert isinstance(get_env_sources()["toy-source"], EnvSource)
    assert isinstance(get_benchmark("toy"), Benchmark)
    assert "toy" in list_benchmarks()
    judge = get_judge("always")
    assert isinstance(judge, Judge) and judge.name == "always"


@pytest.mark.parametrize(
    ("hook", "thing", "kind", "says"),
    [
        ("register_env_sources", object(), ENV_SOURCES, "missing: list_ids, path"),
        ("register_benchmarks", _Source(), BENCHMARKS, "missing: available, convert, run"),
        ("register_judges", "code", JUDGES, "expected a judge factory"),
        ("register_verifier_signatures", _Judge(), VERIFIER_SIGNATURES, "VerifierSignature"),
    ],
)
def test_a_wrong_object_fails_at_registration_naming_the_plugin(
    register_plugin: Register, hook: str, thing: object, kind: Any, says: str
) -> None:
    def hook_fn(register: Any) -> None:
        register("bad", thing)

    plugin = type("Plugin", (), {hook: staticmethod(hookimpl(hook_fn))})()
    register_plugin(plugin, name="clumsy-plugin")
    with pytest.raises(PluginRegistrationError) as info:
        collect(kind)
    message = str(info.value)
    assert "'clumsy-plugin'" in message and "'bad'" in message and says in message
    assert info.value.plugin == "clumsy-plugin"


def test_a_duplicate_name_names_both_plugins(register_plugin: Register) -> None:
    class Plugin:
        @hookimpl
        def register_judges(self, register: Any) -> None:
            register("code", _Judge)

    register_plugin(Plugin(), name="copycat")
    with pytest.raises(DuplicateNameError, match="'verify' and 'copycat'|'copycat' and 'verify'"):
        collect(JUDGES)


def test_an_exception_in_a_hook_is_annotated_with_the_plugin(register_plugin: Register) -> None:
    class Plugin:
        @hookimpl
        def register_env_sources(self, register: Any) -> None:
            raise RuntimeError("boom")

    register_plugin(Plugin(), name="exploding")
    with pytest.raises(RuntimeError, match="boom") as info:
        get_env_sources()
    assert any("'exploding'" in note for note in info.value.__notes__)


def test_a_factory_that_builds_no_judge_is_reported(register_plugin: Register) -> None:
    class Plugin:
        @hookimpl
        def register_judges(self, register: Any) -> None:
            register("broken", lambda **_: object())

    register_plugin(Plugin(), name="half-done")
    with pytest.raises(
        PluginRegistrationError, match="'half-done'.*not an awm_core.contracts.Judge"
    ):
        get_judge("broken")
    with pytest.raises(UnknownNameError, match="unknown judge 'nope'"):
        get_judge("nope")


def test_one_argument_checker_reaches_the_agent() -> None:
    """The episode loop and the environment runtime give the same, detailed message."""
    schema = {
        "type": "object",
        "properties": {"product_id": {"type": "integer"}, "quantity": {"type": "integer"}},
        "required": ["product_id"],
        "additionalProperties": False,
    }
    from awm_core.models import ToolCall

    call = ToolCall(id="c1", name="add_to_cart", arguments={"product_id": "three"})
    failure = validate_call(call, {"add_to_cart": schema})
    assert failure is not None
    message = failure[1]
    assert message == check_arguments("add_to_cart", schema, {"product_id": "three"})
    assert "argument 'product_id' should be of type integer" in message
    assert message.endswith("Expected add_to_cart(product_id: integer, quantity?: integer)")


def test_the_default_judge_asks_a_model_only_when_one_is_given() -> None:
    assert default_judge(None) == CODE_JUDGE == "code"
    assert default_judge("openai:gpt-4o") == DEFAULT_JUDGE == "code+llm"
