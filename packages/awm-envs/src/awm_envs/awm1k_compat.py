"""Old home of :mod:`awm_envs.awm1k.compat`, kept because bundles imported before 0.2 import it.

Bundles written by ``awm envs import-awm`` since the layered layout import the new
path; re-import a bundle to drop this dependency.
"""

from awm_envs.awm1k.compat import install_session_shim, run_official_verifier

__all__ = ["install_session_shim", "run_official_verifier"]
