# The public names of awm_core.models, one line each: type checkers read them here, and
# awm_core.lazy.attach reads them to import each on first use (see __init__.py).

from .manifest import CreatedWith as CreatedWith
from .manifest import EnvironmentManifest as EnvironmentManifest
from .message import Message as Message
from .message import Role as Role
from .message import ToolCall as ToolCall
from .scenario import Scenario as Scenario
from .task import AgentMessage as AgentMessage
from .task import Complexity as Complexity
from .task import HiddenFact as HiddenFact
from .task import NegativeExample as NegativeExample
from .task import SpokenFact as SpokenFact
from .task import Task as Task
from .task import ToolCallStep as ToolCallStep
from .task import UserSection as UserSection
from .task import complexity_for_calls as complexity_for_calls
from .tool import ToolSpec as ToolSpec
from .trajectory import StepRecord as StepRecord
from .trajectory import Termination as Termination
from .trajectory import TokenUsage as TokenUsage
from .trajectory import ToolResult as ToolResult
from .trajectory import Trajectory as Trajectory
from .verdict import Reward as Reward
from .verdict import Verdict as Verdict
from .verdict import VerdictLabel as VerdictLabel
from .verification import VerifierError as VerifierError
from .verification import VerifierErrorKind as VerifierErrorKind
from .verification import VerifierResult as VerifierResult
