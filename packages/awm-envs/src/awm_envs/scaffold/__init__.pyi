# The public names of awm_envs.scaffold, one line each: type checkers read them here, and
# awm_core.lazy.attach reads them to import each on first use (see __init__.py).

from .init import ScaffoldError as ScaffoldError
from .init import init_bundle as init_bundle
