"""The plugin system: loading, env-var filters, start-up checks, lookups by name."""

from __future__ import annotations

import json

import pytest

from awm_core import (
    Reward,
    get_backend,
    get_reward_function,
    hookimpl,
    list_backends,
    list_reward_functions,
)
from awm_core.errors import DuplicateNameError, PluginError, UnknownNameError
from awm_core.plugins import get_plugins, pm

GOOD_PLUGIN = """
from awm_core import hookimpl, Reward

@hookimpl
def register_reward_functions(register):
    register("always-half", lambda verdict, trajectory: Reward(value=0.5))
"""

TYPO_PLUGIN = """
from awm_core import hookimpl

@hookimpl
def register_reward_function(register):  # missing the final "s"
    register("oops", None)
"""


def test_builtin_plugin_registers_through_the_same_hooks_as_third_parties() -> None:
    infos = {i.name: i for i in get_plugins()}
    core = infos["awm_core.builtin"]
    assert core.origin == "builtin"
    assert "register_llm_backends" in core.hooks
    assert "scripted" in core.registers["llm_backends"]


def test_every_workspace_package_is_loaded_from_its_entry_point() -> None:
    packages = {i.package for i in get_plugins() if i.origin == "entry-point"}
    assert {"awm-envs", "awm-verify", "awm-synth", "awm-train", "awm-bench"} <= packages


def test_register_plugin_fixture_adds_and_removes_a_plugin(register_plugin) -> None:
    class Doubler:
        @hookimpl
        def register_reward_functions(self, register):
            register("double-test", lambda v, t: Reward(value=2.0))

    plugin = register_plugin(Doubler(), name="doubler-test")
    assert get_reward_function("double-test")(None, None).value == 2.0
    assert pm.is_registered(plugin)


def test_plugin_from_the_fixture_is_gone_in_the_next_test() -> None:
    assert "double-test" not in list_reward_functions()
    assert pm.get_plugin("doubler-test") is None


def test_misspelled_hook_is_rejected_naming_the_plugin(register_plugin) -> None:
    class Typo:
        @hookimpl
        def register_llm_backend(self, register):  # missing "s"
            pass

    with pytest.raises(PluginError, match="typo-plugin"):
        register_plugin(Typo(), name="typo-plugin")


def test_two_plugins_registering_one_name_is_an_error(register_plugin) -> None:
    class A:
        @hookimpl
        def register_reward_functions(self, register):
            register("clash", lambda v, t: Reward(value=0))

    class B(A):
        pass

    register_plugin(A(), name="clash-a")
    register_plugin(B(), name="clash-b")
    with pytest.raises(DuplicateNameError, match="clash"):
        list_reward_functions()


def test_unknown_backend_lists_the_known_ones() -> None:
    with pytest.raises(UnknownNameError) as err:
        get_backend("nonexistent:model")
    assert "scripted" in str(err.value)
    assert "scripted" in list_backends()


def test_installed_plugin_is_discovered_through_its_entry_point(run_awm, fake_dist) -> None:
    env = fake_dist("awm-halfer", "awm_halfer", GOOD_PLUGIN)
    out = run_awm("plugins", "--json", env=env)
    assert out.returncode == 0, out.stderr
    plugins = {p["name"]: p for p in json.loads(out.stdout)}
    assert plugins["awm-halfer"]["package"] == "awm-halfer"
    assert plugins["awm-halfer"]["version"] == "0.1"
    assert plugins["awm-halfer"]["registers"] == {"reward_functions": ["always-half"]}


def test_misspelled_hook_fails_at_startup_with_a_message_naming_it(run_awm, fake_dist) -> None:
    env = fake_dist("awm-typo", "awm_typo", TYPO_PLUGIN)
    out = run_awm("--help", env=env)
    assert out.returncode == 2
    assert "awm-typo" in out.stderr
    assert "register_reward_function" in out.stderr


def test_awm_disable_plugins_skips_a_plugin(run_awm, fake_dist) -> None:
    env = fake_dist("awm-halfer", "awm_halfer", GOOD_PLUGIN)
    env["AWM_DISABLE_PLUGINS"] = "awm-halfer,bench"
    names = {p["name"] for p in json.loads(run_awm("plugins", "--json", env=env).stdout)}
    assert "awm-halfer" not in names and "bench" not in names
    assert "envs" in names


def test_awm_load_plugins_loads_only_the_listed_entry_points(run_awm, fake_dist) -> None:
    env = fake_dist("awm-halfer", "awm_halfer", GOOD_PLUGIN)
    env["AWM_LOAD_PLUGINS"] = "awm-halfer"
    names = {p["name"] for p in json.loads(run_awm("plugins", "--json", env=env).stdout)}
    # built-in plugins of awm-core always load; entry points only when listed
    assert names == {"awm_core.builtin", "awm-halfer"}


BROKEN_COMMANDS_PLUGIN = """
from awm_core import hookimpl

@hookimpl
def register_commands(cli):
    raise RuntimeError("boom")
"""


def test_plugin_failing_to_add_commands_is_named_not_a_traceback(run_awm, fake_dist) -> None:
    env = fake_dist("awm-broken-cli", "awm_broken_cli", BROKEN_COMMANDS_PLUGIN)
    out = run_awm("--help", env=env)
    assert out.returncode == 2
    assert "awm-broken-cli" in out.stderr and "boom" in out.stderr
    assert "Traceback" not in out.stderr
