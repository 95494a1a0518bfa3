# The public names of awm_envs.sandbox, one line each: type checkers read them here, and
# awm_core.lazy.attach reads them to import each on first use (see __init__.py).

from .exits import describe_exit as describe_exit
from .forkserver import ForkServer as ForkServer
from .forkserver import SandboxStartError as SandboxStartError
from .forkserver import error_reply as error_reply
from .isolation import DISABLE_ENV as DISABLE_ENV
from .isolation import REQUIRE_ENV as REQUIRE_ENV
from .isolation import Isolation as Isolation
from .isolation import IsolationUnavailable as IsolationUnavailable
from .isolation import detect as detect
from .isolation import resolve as resolve
from .jobpool import JobPool as JobPool
from .limits import GIB as GIB
from .limits import MIB as MIB
from .limits import Limits as Limits
from .process import SandboxProcess as SandboxProcess
from .wire import ChannelClosed as ChannelClosed
from .wire import FrameReader as FrameReader
from .wire import ProtocolError as ProtocolError
