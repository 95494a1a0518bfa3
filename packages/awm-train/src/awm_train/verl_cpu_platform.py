"""A CPU platform for verl 0.9.1, loaded through verl's own plug-in hook.

``VERL_USE_EXTERNAL_MODULES=awm_train.verl_cpu_platform VERL_PLATFORM=cpu``: verl
imports this module, which registers a ``cpu`` platform (gloo, no accelerator:
``.to(device)`` gets ``torch.device("cpu")``) and makes verl's FSDP engines
available for it. Enough for world-size-1 FSDP2 in fp32: log-probs and actor
updates on a CPU, for tests and smoke runs.
"""

from __future__ import annotations

import contextlib
from types import ModuleType
from typing import Any, cast

import torch
from verl.plugin.platform.platform_base import (  # type: ignore[import-not-found, unused-ignore]
    PlatformBase,
)
from verl.plugin.platform.platform_manager import (  # type: ignore[import-not-found, unused-ignore]
    PlatformRegistry,
)


class _CpuDeviceModule:
    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def current_device() -> int:
        return 0

    @staticmethod
    def device_count() -> int:
        return 1

    @staticmethod
    def max_memory_allocated(*a: Any, **k: Any) -> int:
        return 0

    @staticmethod
    def max_memory_reserved(*a: Any, **k: Any) -> int:
        return 0

    @staticmethod
    def memory_allocated(*a: Any, **k: Any) -> int:
        return 0

    @staticmethod
    def memory_reserved(*a: Any, **k: Any) -> int:
        return 0

    @staticmethod
    def reset_peak_memory_stats(*a: Any, **k: Any) -> None:
        return None

    @staticmethod
    def mem_get_info(*a: Any, **k: Any) -> tuple[int, int]:
        return (8 << 30, 16 << 30)

    @staticmethod
    def get_device_name(*a: Any, **k: Any) -> str:
        return "cpu"

    @staticmethod
    def synchronize(*a: Any, **k: Any) -> None:
        return None

    @staticmethod
    def empty_cache() -> None:
        return None

    @staticmethod
    def manual_seed(seed: int) -> None:
        torch.manual_seed(seed)

    manual_seed_all = manual_seed

    @staticmethod
    def set_device(*a: Any) -> None:
        return None

    @staticmethod
    def get_rng_state(*a: Any, **k: Any) -> Any:
        return torch.get_rng_state()

    @staticmethod
    def set_rng_state(state: Any, *a: Any, **k: Any) -> None:
        torch.set_rng_state(state)


@PlatformRegistry.register(platform="cpu")  # type: ignore[misc, unused-ignore]
class PlatformCPU(PlatformBase):  # type: ignore[misc, unused-ignore]  # verl is untyped
    device_name = "cpu"
    vendor_name = "cpu"

    @property
    def device_module(self) -> ModuleType:
        return cast(ModuleType, _CpuDeviceModule)

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        return True

    def current_device(self) -> Any:
        return torch.device("cpu")  # .to(device=...) with an int means an accelerator

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: int | None = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "AWM_CPU_VISIBLE_DEVICES"

    @contextlib.contextmanager
    def nvtx_range(self, msg: str):  # type: ignore[no-untyped-def]
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        # verl places one worker rank per accelerator slot: on a CPU the slots are logical
        # GPUs declared to Ray (``+ray_kwargs.ray_init.num_gpus=N``, the cpu-smoke recipe)
        return "GPU"

    def ray_resource_options(self, num_gpus: float) -> dict[str, Any]:
        return {"num_gpus": num_gpus}

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> Any:
        return None


def _register_engines() -> None:
    """verl registers its FSDP engines for cuda and npu only; they run on a CPU as they are."""
    from verl.workers.engine.base import (  # type: ignore[import-not-found, unused-ignore]
        EngineRegistry,
    )
    from verl.workers.engine.fsdp.transformer_impl import (  # type: ignore[import-not-found, unused-ignore]
        FSDPEngineWithLMHead,
        FSDPEngineWithValueHead,
    )

    engines = (("language_model", FSDPEngineWithLMHead), ("value_model", FSDPEngineWithValueHead))
    for model_type, cls in engines:
        for backend in ("fsdp", "fsdp2"):
            EngineRegistry._engines[model_type].setdefault(backend, {})["cpu"] = cls


_register_engines()


def _gloo_only_process_group() -> None:
    """verl asks for ``cpu:gloo,<device>:<backend>``; on a CPU that names cpu twice, which
    torch rejects. Worker processes get plain ``gloo`` (verl imports the function by name
    into its worker modules after this plug-in loads, so patching the source is enough)."""
    import verl.utils.distributed as dist_utils

    original = dist_utils.initialize_global_process_group_ray

    def initialize(timeout_second: Any = None, backend: str | None = None) -> Any:
        return original(timeout_second=timeout_second, backend=backend or "gloo")

    dist_utils.initialize_global_process_group_ray = initialize


_gloo_only_process_group()


def _register_rollout() -> None:
    """``rollout.name=hf``: a transformers rollout server, so ``main_ppo`` can run here.

    By name and a lazy loader: :mod:`awm_train.verl_cpu_rollout` imports verl, and verl
    imports this plug-in while it loads, so importing that module here would be circular.
    """
    from verl.workers.rollout import base as rollout_base
    from verl.workers.rollout.replica import RolloutReplicaRegistry

    def load_replica() -> Any:
        from awm_train.verl_cpu_rollout import HFReplica

        return HFReplica

    rollout_base._ROLLOUT_REGISTRY[("hf", "async")] = "awm_train.verl_cpu_rollout.HFRolloutAdapter"
    RolloutReplicaRegistry.register("hf", load_replica)


_register_rollout()
