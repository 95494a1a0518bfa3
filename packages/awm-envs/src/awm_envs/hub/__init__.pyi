# The public names of awm_envs.hub, one line each: type checkers read them here, and
# awm_core.lazy.attach reads them to import each on first use (see __init__.py).

from .cache import hub_cache_dir as hub_cache_dir
from .client import PulledBundle as PulledBundle
from .client import PushedBundle as PushedBundle
from .client import pull_bundle as pull_bundle
from .client import push_bundle as push_bundle
from .errors import BundleIntegrityError as BundleIntegrityError
from .errors import HubConnectionError as HubConnectionError
from .errors import HubError as HubError
from .errors import HubPermissionError as HubPermissionError
from .errors import HubRepoNotFoundError as HubRepoNotFoundError
from .errors import HubUnavailableError as HubUnavailableError
from .errors import NotABundleRepoError as NotABundleRepoError
from .errors import PulledBundleConflictError as PulledBundleConflictError
from .errors import PushRefusedError as PushRefusedError
