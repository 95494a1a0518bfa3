"""awm-verify: state diffs, judges, rewards, judge reliability and verified rollouts.

The names in ``__init__.pyi`` are the public API; each lives in a module named for its concept
(the diff engine, the verifier result models and the judge contract live in
awm-core, so that plugins can type against them without this package; a bundle's
verifiers are run by :mod:`awm_envs.verifiers`).
"""

from awm_core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, __file__)
