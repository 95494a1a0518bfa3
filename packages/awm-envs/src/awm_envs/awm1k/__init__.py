"""AgentWorldModel-1K interop: import the official release's files, export ours in its format.

``read`` joins the release's JSONL files, ``repair`` fixes its known defects,
``convert`` turns one scenario into bundle files, ``importer`` imports a whole
release (resumably, each app loaded in a worker process), ``verifier_code``
tells a row's verifier mode from its function and writes the self-contained
``verifiers.py`` the sandbox runs, ``export`` writes bundles back in the release
layout with ``official_code`` making what the official code needs. ``compat`` is
imported by imported apps at run time and must stay light (its
``run_official_verifier`` serves bundles imported before verifiers were inlined).
May import: :mod:`awm_envs.bundle`.
"""
