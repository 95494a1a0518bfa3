"""Look things up by name across every plugin's ``register_*`` hook, typed.

Each kind of registrable thing is a :class:`Kind` constant (``JUDGES``,
``LLM_BACKENDS``, ...) that knows its hook and how to check what a plugin
registers against :mod:`awm_core.contracts`. Hooks are called one plugin at a
time, so a duplicate name or a wrong object is reported with the plugin that
registered it. Registries are rebuilt on each lookup: it is cheap, and it means
a plugin registered for one test (see :mod:`awm_core.testing`) is seen at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from awm_core.errors import DuplicateNameError, PluginRegistrationError, UnknownNameError
from awm_core.plugins import load_plugins, pm

if TYPE_CHECKING:
    from awm_core.contracts import (
        BackendFactory,
        Benchmark,
        EnvSource,
        Judge,
        JudgeFactory,
        RewardFunction,
        UserSimulator,
        UserSimulatorFactory,
        VerifierSignature,
    )
    from awm_core.llm.base import LLMBackend
    from awm_core.models import Task
    from awm_core.perturbation import Perturbation

T = TypeVar("T")


@dataclass(frozen=True)
class Kind(Generic[T]):
    """One kind of registrable thing: its label, its hook and its registration check."""

    label: str
    hook: str
    problem: Callable[[object], str | None]  # why ``thing`` is not a valid one, or None

    def __repr__(self) -> str:
        return f"Kind({self.label!r})"


def _callable(what: str) -> Callable[[object], str | None]:
    def problem(thing: object) -> str | None:
        return None if callable(thing) else f"expected {what}, got {type(thing).__name__}"

    return problem


def _implements(protocol_name: str) -> Callable[[object], str | None]:
    def problem(thing: object) -> str | None:
        from awm_core import contracts

        protocol = getattr(contracts, protocol_name)
        if isinstance(thing, protocol):
            return None
        members = sorted(
            m for m in dir(protocol) if not m.startswith("_") and not hasattr(thing, m)
        )
        missing = f" (missing: {', '.join(members)})" if members else ""
        return (
            f"expected an awm_core.contracts.{protocol_name}, got {type(thing).__name__}{missing}"
        )

    return problem


LLM_BACKENDS: Kind[BackendFactory] = Kind(
    "llm backend",
    "register_llm_backends",
    _callable("a factory(model, **options) -> LLMBackend"),
)
ENV_SOURCES: Kind[EnvSource] = Kind(
    "environment source", "register_env_sources", _implements("EnvSource")
)
VERIFIER_SIGNATURES: Kind[VerifierSignature] = Kind(
    "verifier signature",
    "register_verifier_signatures",
    _implements("VerifierSignature"),
)
JUDGES: Kind[JudgeFactory] = Kind(
    "judge", "register_judges", _callable("a judge factory(**options) -> Judge")
)
REWARD_FUNCTIONS: Kind[RewardFunction] = Kind(
    "reward function",
    "register_reward_functions",
    _callable("a reward function(verdict, trajectory) -> Reward"),
)
BENCHMARKS: Kind[Benchmark] = Kind("benchmark", "register_benchmarks", _implements("Benchmark"))
USER_SIMULATORS: Kind[UserSimulatorFactory] = Kind(
    "user simulator",
    "register_user_simulators",
    _callable("a user simulator factory(task, **options) -> UserSimulator"),
)


def _perturbation_problem(thing: object) -> str | None:
    from awm_core.perturbation import Perturbation

    if isinstance(thing, Perturbation):
        return None
    missing = [m for m in ("name", "kind", "description", "apply") if not hasattr(thing, m)]
    return (
        f"expected an awm_core.perturbation.Perturbation, got {type(thing).__name__}"
        f" (missing: {', '.join(missing)})"
    )


PERTURBATIONS: Kind[Perturbation] = Kind(
    "perturbation", "register_perturbations", _perturbation_problem
)

KINDS: tuple[Kind[Any], ...] = (
    LLM_BACKENDS,
    ENV_SOURCES,
    VERIFIER_SIGNATURES,
    JUDGES,
    REWARD_FUNCTIONS,
    BENCHMARKS,
    USER_SIMULATORS,
    PERTURBATIONS,
)


def collect(kind: Kind[T]) -> dict[str, T]:
    """Return ``{name: thing}`` for one kind, checking each registration as it is made."""
    return _collect(kind)[0]


def _collect(kind: Kind[T]) -> tuple[dict[str, T], dict[str, str]]:
    """``({name: thing}, {name: plugin})``."""
    load_plugins()
    found: dict[str, T] = {}
    owner: dict[str, str] = {}
    # oldest registration first, like pluggy's own call order reversed: first come, first named
    for impl in reversed(getattr(pm.hook, kind.hook).get_hookimpls()):
        plugin = impl.plugin_name

        def register(name: str, thing: Any, /, *, _plugin: str = plugin) -> None:
            if not isinstance(name, str) or not name:
                raise PluginRegistrationError(
                    _plugin, kind.label, repr(name), "the name must be a non-empty string"
                )
            if name in found:
                raise DuplicateNameError(
                    f"two plugins registered the {kind.label} {name!r}: "
                    f"{owner[name]!r} and {_plugin!r}"
                )
            problem = kind.problem(thing)
            if problem is not None:
                raise PluginRegistrationError(_plugin, kind.label, name, problem)
            found[name] = cast(T, thing)
            owner[name] = _plugin

        try:
            impl.function(register=register)
        except (PluginRegistrationError, DuplicateNameError):
            raise
        except Exception as exc:
            exc.add_note(f"raised by the awm plugin {plugin!r} in its {kind.hook} hook")
            raise
    return found, owner


def lookup(kind: Kind[T], name: str) -> T:
    """Return the thing registered under ``name`` or raise :class:`UnknownNameError`."""
    things = collect(kind)
    try:
        return things[name]
    except KeyError:
        raise UnknownNameError(kind.label, name, list(things)) from None


# --------------------------------------------------------------------------- typed accessors
# Every lookup by name lives here; ``awm_core`` re-exports them (``from awm_core import get_backend``).


def get_backend(spec: str, **options: Any) -> LLMBackend:
    """Build the LLM backend named by ``spec`` (``PREFIX`` or ``PREFIX:MODEL``, e.g. ``openai:gpt-4o``)."""
    prefix, _, model = spec.partition(":")
    try:
        factory = lookup(LLM_BACKENDS, prefix)
    except UnknownNameError as exc:
        if ":" in spec:
            raise
        # ``--model gpt-4o``: a model name where a backend spec belongs
        raise UnknownNameError(
            exc.kind,
            prefix,
            exc.known,
            hint=f"a backend spec is PREFIX:MODEL, e.g. openai:{spec} or local:{spec}",
        ) from None
    backend: LLMBackend = factory(model, **options)
    return backend


def list_backends() -> list[str]:
    """Prefixes of every registered LLM backend (``openai``, ``local``, ...)."""
    return sorted(collect(LLM_BACKENDS))


def get_judge(name: str, **options: Any) -> Judge:
    """Build the judge registered as ``name`` (``code``, ``llm``, ``code+llm``, a plugin's)."""
    from awm_core.contracts import Judge

    factories, owner = _collect(JUDGES)
    if name not in factories:
        raise UnknownNameError(JUDGES.label, name, list(factories))
    judge = factories[name](**options)
    if not isinstance(judge, Judge):
        raise PluginRegistrationError(
            owner[name],
            JUDGES.label,
            name,
            f"its factory returned {type(judge).__name__}, not an awm_core.contracts.Judge",
        )
    return judge


def list_judges() -> list[str]:
    """The names of every registered judge, sorted."""
    return sorted(collect(JUDGES))


def get_reward_function(name: str) -> RewardFunction:
    """The reward function registered as ``name`` (``default``, ``binary``, a plugin's)."""
    fn: RewardFunction = lookup(REWARD_FUNCTIONS, name)
    return fn


def list_reward_functions() -> list[str]:
    """The names of every registered reward function, sorted."""
    return sorted(collect(REWARD_FUNCTIONS))


def get_env_sources() -> dict[str, EnvSource]:
    """Every registered environment source, by name."""
    return collect(ENV_SOURCES)


def get_verifier_signatures() -> list[VerifierSignature]:
    """Every registered verifier signature, in the order they are tried."""
    return sorted(collect(VERIFIER_SIGNATURES).values(), key=lambda s: (s.priority, s.name))


def get_benchmark(name: str) -> Benchmark:
    """The benchmark registered as ``name`` (``bfcl``, ``tau2``, ...)."""
    return lookup(BENCHMARKS, name)


def list_benchmarks() -> list[str]:
    """The names of every registered benchmark, sorted."""
    return sorted(collect(BENCHMARKS))


def get_perturbation(name: str) -> Perturbation:
    """The perturbation registered as ``name`` (``corrupt-rows``, ``inject``, ``faults``, a plugin's)."""
    return lookup(PERTURBATIONS, name)


def list_perturbations() -> list[str]:
    """The names of every registered perturbation, sorted."""
    return sorted(collect(PERTURBATIONS))


def get_user_simulator(name: str, task: Task, **options: Any) -> UserSimulator:
    """Build the user simulator registered as ``name`` (``scripted``, ``llm``) for ``task``."""
    from awm_core.contracts import UserSimulator

    factories, owner = _collect(USER_SIMULATORS)
    if name not in factories:
        raise UnknownNameError(USER_SIMULATORS.label, name, list(factories))
    simulator = factories[name](task, **options)
    if not isinstance(simulator, UserSimulator):
        raise PluginRegistrationError(
            owner[name],
            USER_SIMULATORS.label,
            name,
            f"its factory returned {type(simulator).__name__}, "
            "not an awm_core.contracts.UserSimulator",
        )
    return simulator


def list_user_simulators() -> list[str]:
    """The names of every registered user simulator, sorted."""
    return sorted(collect(USER_SIMULATORS))
