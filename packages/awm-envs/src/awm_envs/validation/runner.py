"""How validation runs one bundle's verifiers: in this process (trusted) or in the sandbox."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from awm_core.models.verification import VerifierResult
from awm_envs.verifiers.pool import VerifierPool
from awm_envs.verifiers.trusted import load_verifiers, missing_verifiers, run_trusted

# (verifier name, initial image, final image, final answer) -> result
Verify = Callable[[str, bytes, bytes, "str | None"], VerifierResult]


class VerifierRunner:
    """One bundle's verifiers as validation calls them: ``runner(function, initial, final,
    final_answer)`` returns awm-core's :class:`VerifierResult`, whichever way it ran.

    :meth:`for_bundle` picks the way: without a pool, ``verifiers.py`` is imported
    into this process (:func:`~awm_envs.verifiers.trusted.run_trusted`, for bundles we
    wrote); with one, its source runs in the pool's sandbox and never here.
    """

    def __init__(self, verify: Verify, *, sandboxed: bool) -> None:
        self._verify = verify
        self.sandboxed = sandboxed

    @classmethod
    def for_bundle(
        cls, bundle_dir: Path, source: str | None, pool: VerifierPool | None
    ) -> VerifierRunner:
        """The bundle's verifiers, run in ``pool`` or, without one, in this process.

        Raises :class:`~awm_envs.verifiers.trusted.VerifierLoadError` when the bundle has no
        ``verifiers.py`` or (trusted) it does not import.
        """
        if pool is None:
            return cls(functools.partial(run_trusted, load_verifiers(bundle_dir)), sandboxed=False)
        if source is None:
            raise missing_verifiers(bundle_dir)
        text = source

        def verify(
            function: str, initial: bytes, final: bytes, final_answer: str | None
        ) -> VerifierResult:
            return pool.run(
                text, initial=initial, final=final, function=function, final_answer=final_answer
            )

        return cls(verify, sandboxed=True)

    def __call__(
        self, function: str, initial: bytes, final: bytes, final_answer: str | None
    ) -> VerifierResult:
        result = self._verify(function, initial, final, final_answer)
        if not result.function:  # every message names the verifier that was asked for
            result.function = function or "(the task names no verifier)"
        return result

    def failure(self, result: VerifierResult) -> str | None:
        """Why ``result`` is no usable verdict (what validation reports), or None."""
        name = result.function or "the verifier"
        if result.error is not None:
            if not self.sandboxed:
                return result.error.message
            kind = result.error.kind.value
            return f"{name} failed in the sandbox ({kind}): {result.error.message}"
        if result.complete is None:
            return f"{name} returned evidence but no verdict ('complete')"
        return None
