# The public names of awm_synth, one line each: type checkers read them here, and
# awm_core.lazy.attach reads them to import each on first use (see __init__.py).

from .checks.sandbox import CheckLimits as CheckLimits
from .checks.sandbox import CheckSandbox as CheckSandbox
from .checks.sandbox import SandboxUnavailableError as SandboxUnavailableError
from .config import SynthConfig as SynthConfig
from .config import Thresholds as Thresholds
from .errors import ArtifactParseError as ArtifactParseError
from .errors import ReplayMissingError as ReplayMissingError
from .errors import RunDirError as RunDirError
from .errors import SynthError as SynthError
from .llm.client import SynthLLM as SynthLLM
from .llm.replay import ReplayBackend as ReplayBackend
from .pipeline import RunSummary as RunSummary
from .pipeline import make_llm as make_llm
from .pipeline import run_pipeline as run_pipeline
from .reporting.estimate import estimate_run as estimate_run
from .reporting.report import build_report as build_report
from .reporting.report import render_report as render_report
from .store.checkpoint import EnvStatus as EnvStatus
from .store.checkpoint import RunDir as RunDir

__version__: str
