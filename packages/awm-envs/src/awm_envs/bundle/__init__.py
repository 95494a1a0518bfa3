"""Bundles on disk: the folder format, its loader and the catalog of known environments.

A bundle is data plus generated code (the files :mod:`awm_envs.bundle.identity`
lists: ``manifest.json``, ``schema.sql``, ``seed.sql``, ``app.py``, ``tools.json``,
``tasks.json``, ``verifiers.py``). Everything here reads and checks
files; nothing here runs generated code. May import: :mod:`awm_core`,
:mod:`awm_envs.errors`.
"""
