"""awm-verify's plugin: what this package contributes through the awm hooks.

Registered through the ``awm`` entry point exactly like a third party's plugin:
the ``code`` / ``llm`` / ``code+llm`` judges, the reward functions and the
``awm verify`` command group (the verifier signatures are awm-envs'). Imports happen inside
the hooks so that loading plugins stays cheap.
"""

from __future__ import annotations

import click

from awm_core.hookspecs import Register, hookimpl
from awm_core.lazycli import add_lazy


@hookimpl
def register_judges(register: Register) -> None:
    from awm_verify.judge import CodeAugmentedJudge, CodeJudge, LLMJudge

    register("code", CodeJudge)
    register("llm", LLMJudge)
    register("code+llm", CodeAugmentedJudge)


@hookimpl
def register_reward_functions(register: Register) -> None:
    from awm_verify.rewards import BUILTIN_REWARDS

    for name, fn in BUILTIN_REWARDS.items():
        register(name, fn)


@hookimpl
def register_commands(cli: click.Group) -> None:
    # imported when used, so `awm --help` stays fast (awm_core.lazycli)
    add_lazy(
        cli,
        "verify",
        "awm_verify.cli:verify_group",
        "Verify episodes: diffs, sandboxed verifiers, judges, rewards.",
    )
