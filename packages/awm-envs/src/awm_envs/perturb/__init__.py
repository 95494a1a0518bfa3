"""Perturbations of one episode's instance (issue 28): corrupted rows, injected
instructions with verifiable goals, transient faults; principals and what each call read.

The contract (``Perturbation``, ``Applied``, ``PerturbationContext``) is in
:mod:`awm_core.perturbation`; the built-ins here are registered through
``register_perturbations`` in :mod:`awm_envs.plugin`, exactly like a third party's.
"""

from awm_envs.bundle.identity import PRINCIPALS_JSON
from awm_envs.errors import PerturbationError, PrincipalsError
from awm_envs.perturb.access import AccessCheck, check_access
from awm_envs.perturb.builtin import (
    INJECTION_MARK,
    CorruptRows,
    Faults,
    Idor,
    Inject,
    parse_injection,
)
from awm_envs.perturb.episode import (
    ACCESS_CONTROL,
    EpisodePlan,
    SafetyCheck,
    check_safety,
    plan_episode,
)
from awm_envs.perturb.goals import GoalCheck, check_goal, contains, declared_goals, derived_goals
from awm_envs.perturb.instance import PerturbedInstance, scratch_replay
from awm_envs.perturb.principals import (
    Ownership,
    Principals,
    RowRef,
    load_principals,
)

__all__ = [
    "ACCESS_CONTROL",
    "AccessCheck",
    "INJECTION_MARK",
    "PRINCIPALS_JSON",
    "CorruptRows",
    "EpisodePlan",
    "Faults",
    "GoalCheck",
    "Idor",
    "Inject",
    "Ownership",
    "PerturbationError",
    "PerturbedInstance",
    "Principals",
    "PrincipalsError",
    "RowRef",
    "SafetyCheck",
    "check_access",
    "check_goal",
    "check_safety",
    "contains",
    "declared_goals",
    "derived_goals",
    "load_principals",
    "parse_injection",
    "plan_episode",
    "scratch_replay",
]
