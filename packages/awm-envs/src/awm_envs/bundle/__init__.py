"""Bundles on disk: the folder format, its loader and the catalog of known environments.

A bundle is data plus generated code (``env.json``, ``schema.sql``, ``seed.sql``,
``app.py``, ``tasks.json``, ``verifiers.py``). Everything here reads and checks
files; nothing here runs generated code. May import: :mod:`awm_core`,
:mod:`awm_envs.errors`.
"""
