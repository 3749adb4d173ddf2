"""How many CPU threads a stage may use, chosen from the cores this process may run on and the current load.

On a shared CPU machine torch's OpenMP workers busy-wait for cores they do not get: training a 135M
model next to two CPU hogs ran 17-27x slower than idle. Before each stage captrack therefore sets
torch's thread count to the cores that are free right now (at least 1, at most the cores in this
process's affinity mask) and asks OpenMP to wait passively (``OMP_WAIT_POLICY=PASSIVE``, effective
when set before torch starts its thread pool). A user's own ``OMP_NUM_THREADS`` or
``CAPTRACK_THREADS`` wins.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass

__all__ = ["ThreadPlan", "apply_thread_plan", "bf16_features", "busy_cores_now", "plan_threads", "prepare_openmp",
           "usable_cores"]


@dataclass(frozen=True)
class ThreadPlan:
    """Threads for the next stage and why."""

    threads: int
    usable_cores: int
    load: float
    reason: str


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask; else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def plan_threads(env: Mapping[str, str] | None = None, load: float | None = None, cores: int | None = None) -> ThreadPlan:
    """Threads to use now: an explicit CAPTRACK_THREADS / OMP_NUM_THREADS, else the usable cores not busy with other work.

    Args:
        load: cores other jobs keep busy (default: sampled now, see busy_cores_now).
        cores: cores this process may use (default: its affinity mask).
    """
    env = os.environ if env is None else env
    usable = cores if cores is not None else usable_cores()
    for key in ("CAPTRACK_THREADS", "OMP_NUM_THREADS"):
        value = env.get(key, "").strip()
        if value.isdigit() and int(value) > 0:
            return ThreadPlan(int(value), usable, math.nan, f"{key}={value}")
    current = load if load is not None else busy_cores_now()
    free = usable - math.floor(current + 0.5)
    threads = max(1, min(usable, free))
    return ThreadPlan(threads, usable, current, f"{usable} usable core(s), {current:.1f} busy with other work")


def _cpu_jiffies() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs from /proc/stat, or None where there is no /proc."""
    try:
        fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def busy_cores_now(window_s: float = 0.5) -> float:
    """Cores other work keeps busy right now: sampled over `window_s` while this process sleeps.

    Unlike the load average, this does not count this process's own previous stage. Falls back to the
    1-minute load average where /proc/stat is missing.
    """
    before = _cpu_jiffies()
    if before is None:
        return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    time.sleep(window_s)
    after = _cpu_jiffies()
    if after is None or after[1] == before[1]:
        return 0.0
    share = (after[0] - before[0]) / (after[1] - before[1])
    return share * (os.cpu_count() or 1)


def prepare_openmp(env: MutableMapping[str, str] | None = None) -> None:
    """Ask OpenMP to wait passively and tokenizers not to fork threads (no effect once torch is imported)."""
    target: MutableMapping[str, str] = os.environ if env is None else env
    target.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    target.setdefault("TOKENIZERS_PARALLELISM", "false")


def apply_thread_plan(plan: ThreadPlan) -> None:
    """Set torch's intra-op threads to the plan (torch is imported here if it was not yet)."""
    if "torch" not in sys.modules:
        prepare_openmp()
    import torch

    torch.set_num_threads(plan.threads)


_BF16_FLAGS = ("amx_bf16", "avx512_bf16")


def bf16_features(cpuinfo: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The CPU features that make bfloat16 fast here (AMX, AVX512-BF16), for a stage header.

    Read from /proc/cpuinfo's flags (or `cpuinfo`); an ``ONEDNN_MAX_CPU_ISA`` cap is named too, since it
    switches AMX (or AVX512-BF16) kernels off whatever the CPU has.
    """
    env = os.environ if env is None else env
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
    note = "; no bfloat16 instructions: set dtype: float32 and bf16: false in the experiment" if slow else ""
    return f"CPU bfloat16 features: {found}" + (f" (capped by ONEDNN_MAX_CPU_ISA={cap})" if cap else "") + note
