"""A bundle's verifiers: how they are called, and where they run. Everything returns
awm-core's :class:`~awm_core.models.verification.VerifierResult`.

* :mod:`~awm_envs.verifiers.signatures` - which call convention a verifier uses
  (detected from its source, never by running it) and what its output means;
* :mod:`~awm_envs.verifiers.pool` - ``VerifierPool``: untrusted verifiers, each in a fresh
  fork of a sandbox template (:mod:`~awm_envs.verifiers.job` runs it under
  :mod:`~awm_envs.verifiers.policy`);
* :mod:`~awm_envs.verifiers.trusted` - ``run_trusted``: a trusted bundle's (the catalog's)
  verifiers, in this process.

A bundle's ``verifiers.py`` text is :attr:`awm_envs.Bundle.verifier_source`
(and :attr:`awm_envs.Environment.verifier_source`). Import each name from its module:
this package itself stays empty, because the sandboxed job imports it too and every
module it pulls in is copied into each forked job.
"""
