# The public names of awm_verify, one line each: type checkers read them here, and
# awm_core.lazy.attach reads them to import each on first use (see __init__.py).

from .gym import GymEpisode as GymEpisode
from .gym import Observation as Observation
from .gym import StepResult as StepResult
from .gym import TaskEnv as TaskEnv
from .judge import JudgeError as JudgeError
from .judge import JudgeOutputError as JudgeOutputError
from .judge import judge_many as judge_many
from .reliability import ReliabilityReport as ReliabilityReport
from .reliability import cohens_kappa as cohens_kappa
from .reliability import fleiss_kappa as fleiss_kappa
from .reliability import reliability_report as reliability_report
from .rewards import WeightedSum as WeightedSum
from .rewards import compose as compose
from .rewards import resolve_reward as resolve_reward
from .rollout import Rollout as Rollout
from .rollout import rollout_episode as rollout_episode
from .rollout import verify_rollout as verify_rollout
from .verify import Episode as Episode
from .verify import VerificationReport as VerificationReport
from .verify import verify_episode as verify_episode
from .verify import verify_many as verify_many

__version__: str
