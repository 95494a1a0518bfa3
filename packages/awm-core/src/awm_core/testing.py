"""A pytest plugin for plugin authors and awm's own tests.

``register_plugin(obj, name=None)`` registers a plugin for one test and removes it
afterwards, so tests never leak hook implementations into each other::

    def test_my_reward(register_plugin):
        class P:
            @hookimpl
            def register_reward_functions(self, register):
                register("double", lambda v, t: Reward(value=2.0))
        register_plugin(P())
        assert get_reward_function("double")(None, None).value == 2.0
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from awm_core.plugins import check, load_plugins, pm


@pytest.fixture
def register_plugin() -> Iterator[Callable[..., object]]:
    load_plugins()
    added: list[object] = []

    def _register(plugin: object, name: str | None = None) -> object:
        pm.register(plugin, name=name)
        added.append(plugin)
        check()
        return plugin

    yield _register
    for plugin in reversed(added):
        if pm.is_registered(plugin):
            pm.unregister(plugin)
