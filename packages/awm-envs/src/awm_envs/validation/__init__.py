"""Proving a bundle: reference solutions replayed, verifiers run sandboxed, leaks looked for.

``awm envs validate`` and the synthesis pipeline's final gate both come here.
May import: :mod:`awm_envs.runtime`, :mod:`awm_envs.pool`, :mod:`awm_envs.bundle`,
:mod:`awm_envs.sandbox`.
"""
