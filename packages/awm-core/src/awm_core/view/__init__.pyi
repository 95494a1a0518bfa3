# The public names of awm_core.view, one line each: type checkers read them here, and
# awm_core.lazy.attach reads them to import each on first use (see __init__.py).

from .episodes import Episode as Episode
from .episodes import EpisodeFilter as EpisodeFilter
from .episodes import TrajectoryFileError as TrajectoryFileError
from .episodes import VerdictView as VerdictView
from .episodes import load_episodes as load_episodes
from .episodes import parse_verdict as parse_verdict
