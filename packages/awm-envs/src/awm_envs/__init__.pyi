# The public names of awm_envs, one line each: type checkers read them here, and
# awm_core.lazy.attach reads them to import each on first use (see __init__.py).

from .bundle.loader import Bundle as Bundle
from .bundle.loader import load_bundle as load_bundle
from .bundle.sources import CATALOG_DIR as CATALOG_DIR
from .bundle.sources import FolderSource as FolderSource
from .bundle.sources import list_envs as list_envs
from .bundle.sources import resolve_env as resolve_env
from .bundle.sqlscript import split_statements as split_statements
from .bundle.timefreeze import freeze_now as freeze_now
from .bundle.toolspecs import derive_tool_specs as derive_tool_specs
from .errors import BundleError as BundleError
from .errors import BundleProblem as BundleProblem
from .errors import EnvironmentNotFoundError as EnvironmentNotFoundError
from .hub.client import pull_bundle as pull_bundle
from .hub.errors import HubError as HubError
from .pool.envpool import EnvPool as EnvPool
from .pool.fleet import EnvFleet as EnvFleet
from .pool.remote import RemoteInstance as RemoteInstance
from .pool.remote import WorkerDied as WorkerDied
from .pool.remote import WorkerPool as WorkerPool
from .pool.remote import WorkerRequestError as WorkerRequestError
from .pool.source import SessionFolderSource as SessionFolderSource
from .runtime.environment import Environment as Environment
from .runtime.environment import load_environment as load_environment
from .runtime.instance import Instance as Instance
from .simulate.simulator import SimulatedEnvironment as SimulatedEnvironment
from .validation.record import validation_record as validation_record
from .validation.validate import EnvValidation as EnvValidation
from .validation.validate import TaskValidation as TaskValidation
from .validation.validate import catalog_env_ids as catalog_env_ids
from .validation.validate import validate_environment as validate_environment

__version__: str
