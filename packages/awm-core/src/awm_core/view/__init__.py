"""``awm view``: episodes found under a path, shown in full (text, JSON or a terminal browser).

:mod:`.episodes` finds trajectories and reads their verdicts, :mod:`.render`
turns an episode into text, :mod:`.tui` is the interactive browser (textual).
"""

from awm_core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, __file__)
