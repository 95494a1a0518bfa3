"""Many instances at once: ``EnvPool`` over in-process, sandboxed-worker or Ray backends.

Workers are long-lived sandboxed processes (:mod:`awm_envs.sandbox`) that each
host a :mod:`awm_envs.runtime` environment and answer on the sandbox wire; the
parent never imports a bundle's ``app.py``. May import: :mod:`awm_envs.runtime`,
:mod:`awm_envs.bundle`, :mod:`awm_envs.sandbox`.
"""
