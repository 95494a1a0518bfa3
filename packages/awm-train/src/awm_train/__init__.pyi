# The public names of awm_train, one line each: type checkers read them here, and
# awm_core.lazy.attach reads them to import each on first use (see __init__.py).

from .bundles import BundleMismatchError as BundleMismatchError
from .bundles import BundleNotFoundError as BundleNotFoundError
from .bundles import BundleRef as BundleRef
from .bundles import check_bundles as check_bundles
from .envs import ENVS_DIR as ENVS_DIR
from .episode import TrainingEpisode as TrainingEpisode
from .episode import TurnRow as TurnRow
from .episode import run_training_episode as run_training_episode
from .export import ActorCheckpoint as ActorCheckpoint
from .export import ActorShardsMissingError as ActorShardsMissingError
from .export import CheckpointExportError as CheckpointExportError
from .export import ExportedModel as ExportedModel
from .export import ExportTargetExistsError as ExportTargetExistsError
from .export import NoSuchRunError as NoSuchRunError
from .export import NoSuchStepError as NoSuchStepError
from .export import checkpoint_steps as checkpoint_steps
from .export import export_checkpoint as export_checkpoint
from .export import find_actor_checkpoint as find_actor_checkpoint
from .offline import save_smollm2 as save_smollm2
from .policy import TokenPolicy as TokenPolicy
from .policy import TokenTurn as TokenTurn
from .prepare import EmptySplitError as EmptySplitError
from .prepare import PreparedTask as PreparedTask
from .prepare import prepare_dataset as prepare_dataset
from .prepare import select_tasks as select_tasks
from .prepare import split_by_environment as split_by_environment
from .prepare import split_by_task as split_by_task
from .recipes import Recipe as Recipe
from .recipes import list_recipes as list_recipes
from .recipes import load_recipe as load_recipe
from .safety import SAFETY_VIOLATION_REWARD as SAFETY_VIOLATION_REWARD
from .safety import EnvSafety as EnvSafety
from .safety import PerturbationMix as PerturbationMix
from .safety import PerturbationMixError as PerturbationMixError
from .safety import TaskFilter as TaskFilter
from .safety import safe_reward as safe_reward
from .tokens import GeneratedTokens as GeneratedTokens
from .tokens import ScriptedGenerator as ScriptedGenerator
from .tokens import TokenGenerator as TokenGenerator
from .tokens import TransformersGenerator as TransformersGenerator
from .tokens import reference_replies as reference_replies

__version__: str
