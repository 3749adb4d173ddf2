"""Distributed launch details shared by `captrack-eval` and the `captrack-ds` backend.

Launchers differ: `deepspeed` passes ``--local_rank=N`` on the command line and sets LOCAL_SIZE;
`torchrun` sets LOCAL_RANK and LOCAL_WORLD_SIZE only. A plain `python` run sets nothing.
"""

from __future__ import annotations

import atexit
import os
import socket
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Ranks", "cpu_allreduce_buffer", "ensure_process_env", "ranks", "remove_cpu_allreduce_buffer_at_exit",
           "strip_local_rank"]


@dataclass(frozen=True)
class Ranks:
    """Where this process sits in the launch."""

    rank: int
    local_rank: int
    world: int
    local_world: int


def ranks(env: MutableMapping[str, str] | None = None) -> Ranks:
    """Read the launch from the environment (one process when nothing is set)."""
    env = os.environ if env is None else env
    world = int(env.get("WORLD_SIZE", "1"))
    local_world = int(env.get("LOCAL_WORLD_SIZE", env.get("LOCAL_SIZE", str(world))))
    return Ranks(rank=int(env.get("RANK", "0")), local_rank=int(env.get("LOCAL_RANK", "0")),
                 world=world, local_world=local_world)


def strip_local_rank(argv: Sequence[str], env: MutableMapping[str, str] | None = None) -> list[str]:
    """Remove the `deepspeed` launcher's ``--local_rank N`` from argv, keeping it in LOCAL_RANK.

    lm-eval's CLI rejects unknown flags; the launcher adds this one unless run with --no_local_rank.
    """
    env = os.environ if env is None else env
    out: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        value = None
        if arg in ("--local_rank", "--local-rank") and i + 1 < len(args):
            value, i = args[i + 1], i + 2
        elif arg.startswith(("--local_rank=", "--local-rank=")):
            value, i = arg.split("=", 1)[1], i + 1
        else:
            out.append(arg)
            i += 1
            continue
        env.setdefault("LOCAL_RANK", value)
    return out


def _free_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def ensure_process_env(env: MutableMapping[str, str] | None = None) -> Ranks:
    """Fill in what DeepSpeed's process-group setup reads but the launcher did not set.

    A plain ``python``/``captrack-eval`` run becomes a world of one on localhost (DeepSpeed would
    otherwise go looking for MPI); under torchrun, LOCAL_SIZE (read by DeepSpeed's CPU accelerator
    and its shared-memory all-reduce) is copied from LOCAL_WORLD_SIZE.
    """
    env = os.environ if env is None else env
    if "WORLD_SIZE" not in env:
        for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_WORLD_SIZE", "1")):
            env.setdefault(key, value)
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    if "MASTER_PORT" not in env:
        env["MASTER_PORT"] = _free_port()
    env.setdefault("LOCAL_RANK", env.get("RANK", "0"))
    env.setdefault("LOCAL_SIZE", env.get("LOCAL_WORLD_SIZE", env["WORLD_SIZE"]))
    return ranks(env)


def cpu_allreduce_buffer(env: MutableMapping[str, str] | None = None) -> Path:
    """The shared-memory buffer DeepSpeed's CPU all-reduce creates for this rank (67 MB in /dev/shm, named by
    user id, MASTER_ADDR, MASTER_PORT and global rank; deepspeed/ops/csrc/cpu/comm/shm.cpp)."""
    env = os.environ if env is None else env
    name = f"deepspeed_allreduce_buffer_{os.getuid()}_{env.get('MASTER_ADDR', '')}_{env.get('MASTER_PORT', '')}_{env.get('RANK', '0')}"
    return Path("/dev/shm") / name


def remove_cpu_allreduce_buffer_at_exit() -> None:
    """Remove this rank's CPU all-reduce buffer when the process exits: DeepSpeed never unlinks it, so every CPU
    run left 67 MB of shared memory per rank behind (RAM, until reboot). The other ranks mapped it while
    the process group was set up, long before any rank exits."""
    atexit.register(cpu_allreduce_buffer().unlink, missing_ok=True)
