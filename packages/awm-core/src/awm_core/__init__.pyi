# The public names of awm_core, one line each: type checkers read them here, and
# awm_core.lazy.attach reads them to import each on first use (see __init__.py).

from .hookspecs import hookimpl as hookimpl
from .models import Complexity as Complexity
from .models import EnvironmentManifest as EnvironmentManifest
from .models import Message as Message
from .models import Reward as Reward
from .models import Scenario as Scenario
from .models import Task as Task
from .models import ToolCall as ToolCall
from .models import ToolSpec as ToolSpec
from .models import Trajectory as Trajectory
from .models import Verdict as Verdict
from .models import VerdictLabel as VerdictLabel
from .registry import get_backend as get_backend
from .registry import get_benchmark as get_benchmark
from .registry import get_env_sources as get_env_sources
from .registry import get_judge as get_judge
from .registry import get_perturbation as get_perturbation
from .registry import get_reward_function as get_reward_function
from .registry import get_user_simulator as get_user_simulator
from .registry import get_verifier_signatures as get_verifier_signatures
from .registry import list_backends as list_backends
from .registry import list_benchmarks as list_benchmarks
from .registry import list_judges as list_judges
from .registry import list_perturbations as list_perturbations
from .registry import list_reward_functions as list_reward_functions
from .registry import list_user_simulators as list_user_simulators

__version__: str
