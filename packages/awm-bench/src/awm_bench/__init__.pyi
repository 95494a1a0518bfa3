# The public names of awm_bench, one line each: type checkers read them here, and
# awm_core.lazy.attach reads them to import each on first use (see __init__.py).

from .demo import DemoConfig as DemoConfig
from .demo import DemoResult as DemoResult
from .demo import run_demo as run_demo
from .evaluate import BUCKETS as BUCKETS
from .evaluate import EnvReport as EnvReport
from .evaluate import EpisodeOutcome as EpisodeOutcome
from .evaluate import PolicyFactory as PolicyFactory
from .evaluate import evaluate_environment as evaluate_environment
from .report_html import render_report as render_report

__version__: str
