"""The one place that imports ``bfcl_eval`` (the ``awm-bench[bfcl]`` extra).

bfcl-eval creates ``result/`` and ``score/`` folders under ``BFCL_PROJECT_ROOT`` when
imported, and its OpenAI handler builds a client at construction, which wants an API
key even when it is only used to decode and score. Both are given harmless defaults
here, before the first import, so importing never writes next to the installed
package and scoring never needs a key.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from awm_core.errors import AWMError

BFCL_VERSION = "2025.8.6.2"
INSTALL_HINT = f"pip install 'awm-bench[bfcl]' (bfcl-eval=={BFCL_VERSION}), or run `nox -s bench`"

# Model names registered in bfcl-eval's MODEL_CONFIG_MAPPING (no "_" and no "/": bfcl
# turns "_" into "/" when it looks a name up). "native": tool names reach the model as
# OpenAI wants them ("." -> "_") and bfcl maps them back; "episode": awm maps its tool
# names back to BFCL's own before scoring.
NATIVE_MODEL = "awm-native-FC"
EPISODE_MODEL = "awm-episode-FC"


class BfclUnavailableError(AWMError):
    """bfcl-eval is not installed (or not the pinned v3 release)."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(
            f"the BFCLv3 benchmark needs bfcl-eval=={BFCL_VERSION}: {INSTALL_HINT}"
            + (f" ({detail})" if detail else "")
        )


def project_root() -> Path:
    """Where bfcl-eval may write (``$BFCL_PROJECT_ROOT``, default a folder under the temp dir)."""
    root = os.environ.get("BFCL_PROJECT_ROOT")
    if not root:
        root = str(Path(tempfile.gettempdir()) / "awm-bfcl")
        os.environ["BFCL_PROJECT_ROOT"] = root
    Path(root).mkdir(parents=True, exist_ok=True)
    return Path(root)


def available() -> str | None:
    """None when bfcl-eval (the pinned release) can be used, else what to install."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("bfcl-eval")
    except PackageNotFoundError:
        return f"bfcl-eval is not installed: {INSTALL_HINT}"
    if found != BFCL_VERSION:
        return f"bfcl-eval {found} is installed; BFCLv3 needs {BFCL_VERSION}: {INSTALL_HINT}"
    return None


class _Upstream:
    """bfcl-eval's modules, imported on first use."""

    def __init__(self) -> None:
        self._loaded: dict[str, ModuleType] = {}

    def module(self, name: str) -> ModuleType:
        if name not in self._loaded:
            project_root()
            os.environ.setdefault("OPENAI_API_KEY", "EMPTY")  # only to construct the handler
            import importlib

            try:
                self._loaded[name] = importlib.import_module(name)
            except ImportError as exc:
                raise BfclUnavailableError(str(exc)) from exc
        return self._loaded[name]

    def attr(self, module: str, name: str) -> Any:
        return getattr(self.module(module), name)


bfcl = _Upstream()


def register_models() -> None:
    """Add awm's two model configs to bfcl-eval's MODEL_CONFIG_MAPPING (idempotent)."""
    mapping = bfcl.attr("bfcl_eval.constants.model_config", "MODEL_CONFIG_MAPPING")
    config = bfcl.attr("bfcl_eval.constants.model_config", "ModelConfig")
    handler = bfcl.attr(
        "bfcl_eval.model_handler.api_inference.openai_completion", "OpenAICompletionsHandler"
    )
    for name, to_dot in ((NATIVE_MODEL, True), (EPISODE_MODEL, False)):
        if name not in mapping:
            mapping[name] = config(
                model_name=name,
                display_name=f"awm ({'native' if to_dot else 'awm episode'} mode)",
                url="",
                org="awm",
                license="Apache-2.0",
                model_handler=handler,
                is_fc_model=True,
                underscore_to_dot=to_dot,
            )


def forget_instances(model_name: str, case_id: str) -> None:
    """Drop the tool-class instances bfcl-eval keeps for ``(model_name, case_id)``.

    bfcl's multi-turn executor caches each case's instances in its module globals
    under a name built from the model name and the case id; a second run of the
    same case in one process would otherwise start from the first run's state.
    """
    module = bfcl.module("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils")
    prefix = model_name.replace("-", "_").replace(".", "_").replace("/", "_")
    marker = f"_{case_id}_"
    for key in [k for k in vars(module) if k.startswith(prefix) and marker in k]:
        del vars(module)[key]
