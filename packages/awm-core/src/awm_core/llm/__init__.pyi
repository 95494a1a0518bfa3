# The public names of awm_core.llm, one line each: type checkers read them here, and
# awm_core.lazy.attach reads them to import each on first use (see __init__.py).

from .base import BackendStats as BackendStats
from .base import ChatResponse as ChatResponse
from .base import LLMBackend as LLMBackend
from .base import LLMConfigError as LLMConfigError
from .base import LLMError as LLMError
from .base import LLMOutputError as LLMOutputError
from .base import LLMRequestError as LLMRequestError
from .base import LLMRetriesExhaustedError as LLMRetriesExhaustedError
from .sampling import Sampling as Sampling
