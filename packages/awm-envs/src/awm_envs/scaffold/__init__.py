"""``awm envs init NAME``: a new, valid environment bundle to start from.

:func:`init_bundle` writes every file of the bundle format from the templates
in ``template/`` and derives ``tools.json`` from the new app's routes, so the
bundle passes ``awm envs validate`` as generated.
"""

from awm_core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, __file__)
