"""AgentWorldModel-1K interop: import the official release's files, export ours in its format.

``read`` joins the release's JSONL files, ``repair`` fixes its known defects,
``convert`` turns one scenario into bundle files, ``importer`` imports a whole
release (resumably, each app loaded in a worker process), ``verifier_code``
tells a row's verifier mode from its function and writes the self-contained
``verifiers.py`` the sandbox runs, ``export`` writes bundles back in the release
layout with ``official_code`` making what the official code needs, and gives an
imported bundle back as it came in (the release's rows, the app without the shim
import wrote into it). ``compat`` serves only bundles imported by earlier versions
(their app.py imports it; new imports inline the shim, ``repair.SESSION_SHIM``)
and must stay light.
May import: :mod:`awm_envs.bundle`.
"""
