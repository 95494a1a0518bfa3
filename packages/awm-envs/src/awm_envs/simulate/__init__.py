"""Simulated environments: the same tools and tasks, answered by an LLM (the paper's baseline).

May import: :mod:`awm_envs.runtime`, :mod:`awm_envs.bundle`.
"""
