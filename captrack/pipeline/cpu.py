"""CPU details of a stage run here: torch's thread count from the process floor's plan, and the CPU's bfloat16 features.

How many threads a stage may use is captrack.processes.plan_threads (the cores this process may run on and
the current load; ``OMP_NUM_THREADS`` / ``CAPTRACK_THREADS`` win); this module applies it to torch.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from captrack.processes import (
    ThreadPlan,
    busy_cores_now,
    plan_threads,
    prepare_openmp,
    usable_cores,
)

__all__ = ["ThreadPlan", "apply_thread_plan", "bf16_features", "busy_cores_now", "plan_threads", "prepare_openmp",
           "usable_cores"]


def apply_thread_plan(plan: ThreadPlan) -> None:
    """Set torch's intra-op threads to the plan (torch is imported here if it was not yet)."""
    if "torch" not in sys.modules:
        prepare_openmp()
    import torch

    torch.set_num_threads(plan.threads)


_BF16_FLAGS = ("amx_bf16", "avx512_bf16")


def bf16_features(cpuinfo: str | None = None, env: Mapping[str, str] | None = None, uses_bf16: bool = False) -> str:
    """The CPU features that make bfloat16 fast here (AMX, AVX512-BF16), for a stage header.

    Read from /proc/cpuinfo's flags (or `cpuinfo`); an ``ONEDNN_MAX_CPU_ISA`` cap is named too, since it
    switches AMX (or AVX512-BF16) kernels off whatever the CPU has. Where neither is there and the stage runs in
    bfloat16 (`uses_bf16`), the line says how to avoid the emulation; a float32 stage is not told.
    """
    env = os.environ if env is None else env
    if cpuinfo is None and env.get("CAPTRACK_CPU_FLAGS") is not None:  # stands in for /proc/cpuinfo (dtype_choice)
        cpuinfo = f"flags : {env['CAPTRACK_CPU_FLAGS']}\n"
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo") as handle:
                cpuinfo = handle.read()
        except OSError:
            return "CPU bfloat16 features: unknown (no /proc/cpuinfo)"
    flags = next((line.split(":", 1)[1].split() for line in cpuinfo.splitlines() if line.startswith("flags")), [])
    found = ", ".join(f"{flag} {'yes' if flag in flags else 'no'}" for flag in _BF16_FLAGS)
    cap = env.get("ONEDNN_MAX_CPU_ISA", "").strip()
    slow = not any(flag in flags for flag in _BF16_FLAGS)
    note = ("; no bfloat16 instructions, so bfloat16 is emulated (slow): `captrack run --dtype auto` (or float32), or "
            "dtype: auto in the experiment") if slow and uses_bf16 else ""
    return f"CPU bfloat16 features: {found}" + (f" (capped by ONEDNN_MAX_CPU_ISA={cap})" if cap else "") + note
