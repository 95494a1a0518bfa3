"""``awm envs init NAME``: a new, valid environment bundle to start from.

:func:`init_bundle` writes every file of the bundle format from the templates
in ``template/`` and derives ``tools.json`` from the new app's routes, so the
bundle passes ``awm envs validate`` as generated.
"""

from __future__ import annotations

from awm_envs.scaffold.init import ScaffoldError, init_bundle

__all__ = ["ScaffoldError", "init_bundle"]
