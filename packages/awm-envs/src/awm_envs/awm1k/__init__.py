"""AgentWorldModel-1K interop: import the official release's files, export ours in its format.

``read`` joins the release's JSONL files, ``repair`` fixes its known defects,
``convert`` turns one scenario into bundle files, ``importer`` imports a whole
release (resumably, each app loaded in a worker process), ``export`` writes
bundles back in the release layout. ``compat`` is imported by imported bundles
at run time and must stay light.
May import: :mod:`awm_envs.bundle`.
"""
