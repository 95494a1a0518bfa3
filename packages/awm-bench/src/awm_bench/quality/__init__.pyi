# The public names of awm_bench.quality, one line each: type checkers read them here, and
# awm_core.lazy.attach reads them to import each on first use (see __init__.py).

from .database import EnvData as EnvData
from .database import TableInfo as TableInfo
from .display import print_quality as print_quality
from .display import render_quality_html as render_quality_html
from .entities import extract_literals as extract_literals
from .env_errors import ENV_ERROR_TYPES as ENV_ERROR_TYPES
from .env_errors import EnvErrors as EnvErrors
from .env_errors import ToolErrors as ToolErrors
from .env_errors import classify_step as classify_step
from .env_errors import count_env_errors as count_env_errors
from .evidence import LiteralLookup as LiteralLookup
from .evidence import TaskEvidence as TaskEvidence
from .evidence import gather_evidence as gather_evidence
from .evidence import render_evidence as render_evidence
from .judge import SYSTEM_PROMPT as SYSTEM_PROMPT
from .judge import ChecksJudge as ChecksJudge
from .judge import LLMQualityJudge as LLMQualityJudge
from .judge import QualityJudge as QualityJudge
from .judge import make_judge as make_judge
from .ratings import CRITERIA as CRITERIA
from .ratings import DEFAULT_THRESHOLD as DEFAULT_THRESHOLD
from .ratings import SHORT as SHORT
from .ratings import QualityScores as QualityScores
from .ratings import TaskQuality as TaskQuality
from .report import EnvQuality as EnvQuality
from .report import Progress as Progress
from .report import QualityReport as QualityReport
from .report import assess_quality as assess_quality
from .rollouts import QualityError as QualityError
from .rollouts import read_trajectories as read_trajectories
from .rollouts import replay_references as replay_references
