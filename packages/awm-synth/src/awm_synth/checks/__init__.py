"""Executing what the LLM wrote: SQL scripts, generated apps and verifiers, always sandboxed.

Every check here runs untrusted code through :mod:`awm_envs.sandbox` (``isolated`` is
the job a sandboxed fork runs) and answers with errors a stage can feed back.
May import: :mod:`awm_synth.errors`, awm-envs' public API.
"""
