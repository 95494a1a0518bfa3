"""In-process environments: one FastAPI app, many isolated SQLite instances.

``Environment`` imports a bundle's app once; each ``Instance`` owns an in-memory
database, resets by deserializing a snapshot, and dispatches tool calls straight
into the app's endpoints. Trusted code only: untrusted bundles run in
:mod:`awm_envs.pool` workers. May import: :mod:`awm_core`, :mod:`awm_envs.bundle`.
"""
