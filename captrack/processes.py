"""The ground floor for cores and child processes: how many threads and workers, and children that die with their parent.

Used by `captrack run`'s stage workers (captrack.pipeline) and the comparison's readers (captrack.compare.readers)
alike; it imports nothing of captrack's sub-packages.

Cores. On a shared CPU machine torch's OpenMP workers busy-wait for cores they do not get: training a 135M
model next to two CPU hogs ran 17-27x slower than idle. A stage therefore takes the cores that are free right
now (:func:`plan_threads`: at least 1, at most this process's affinity mask) and OpenMP waits passively
(:func:`prepare_openmp`). A user's own ``OMP_NUM_THREADS`` or ``CAPTRACK_THREADS`` wins, and
``CAPTRACK_WORKERS`` fixes the number of worker processes (:func:`worker_count`).

Children. :func:`spawn` starts a child that ends when its parent ends, however the parent ends (``kill -9``
included): the kernel sends it SIGKILL when the parent dies (Linux ``prctl(PR_SET_PDEATHSIG)``, set between
fork and exec, so it holds for any program), and a captrack child that calls :func:`die_with_parent` also
watches a lifeline pipe whose only writer is the parent (end of file: the parent is gone), the guard where
prctl does not exist.

Ends. :func:`stop_signals_as_interrupt` makes SIGTERM (how CI systems cancel a job) raise :class:`Terminated`, a
KeyboardInterrupt, so that a cancelled command cleans up as after Ctrl-C, and :func:`raise_if_stopped` raises a stop
signal again where a finalizer swallowed it; :func:`process_start` and
:func:`process_gone` tell whether the process that left something behind still runs (its PID alone could be reused).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = ["LIFELINE_ENV", "PARENT_ENV", "CpuMark", "Terminated", "ThreadPlan", "busy_cores_now", "busy_cores_since",
           "captrack_child_env", "die_with_parent", "plan_threads", "prepare_openmp", "process_gone", "process_start",
           "raise_if_stopped", "spawn", "stop_signals_as_interrupt", "usable_cores", "worker_count"]

PARENT_ENV = "CAPTRACK_PARENT_PID"
"""The PID of the process that started a captrack child with :func:`spawn`: the child ends when it is gone."""
LIFELINE_ENV = "CAPTRACK_LIFELINE_FD"
"""The file descriptor of the lifeline pipe a :func:`spawn`-ed child reads (end of file: the parent is gone)."""
_PR_SET_PDEATHSIG = 1


# -- cores and threads ---------------------------------------------------------------------------------------

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
        with open("/proc/stat") as handle:
            fields = [int(x) for x in handle.readline().split()[1:]]
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


@dataclass(frozen=True)
class CpuMark:
    """The machine's CPU jiffies and this process's CPU time at one moment (`mark`), for `busy_cores_since`."""

    jiffies: tuple[int, int] | None
    own_s: float
    wall_s: float

    @classmethod
    def mark(cls) -> CpuMark:
        """Now."""
        return cls(_cpu_jiffies(), time.process_time(), time.monotonic())


def busy_cores_since(mark: CpuMark, least_s: float = 0.5) -> float | None:
    """Cores other work kept busy since `mark`: the machine's busy share less this process's own CPU time (all its
    threads) over the same wall time; None where that cannot be told (no /proc/stat, under `least_s` elapsed).

    What busy_cores_now samples while this process sleeps, measured instead while it works: no wait."""
    after, wall = _cpu_jiffies(), time.monotonic() - mark.wall_s
    if mark.jiffies is None or after is None or wall < least_s or after[1] == mark.jiffies[1]:
        return None
    machine = (after[0] - mark.jiffies[0]) / (after[1] - mark.jiffies[1]) * (os.cpu_count() or 1)
    return max(0.0, machine - (time.process_time() - mark.own_s) / wall)


def prepare_openmp(env: MutableMapping[str, str] | None = None) -> None:
    """Ask OpenMP to wait passively and tokenizers not to fork threads (no effect once torch is imported)."""
    target: MutableMapping[str, str] = os.environ if env is None else env
    target.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    target.setdefault("TOKENIZERS_PARALLELISM", "false")


def worker_count(jobs: int, cores: int, env: Mapping[str, str] | None = None) -> int:
    """Worker processes for `jobs` independent CPU jobs: one per usable core (a whole number in CAPTRACK_WORKERS
    wins), never more than there are jobs."""
    env = os.environ if env is None else env
    value = env.get("CAPTRACK_WORKERS", "").strip()
    if value.isdigit() and int(value) > 0:
        return max(1, min(int(value), jobs))
    return max(1, min(cores, jobs))


# -- children that die with their parent ---------------------------------------------------------------------

_lifeline: tuple[int, int, int] | None = None  # (pid that made it, read end, write end)


def _lifeline_fds() -> tuple[int, int]:
    """This process's lifeline pipe (made once per process; the parent never writes, only holds the write end)."""
    global _lifeline
    if _lifeline is None or _lifeline[0] != os.getpid():
        read, write = os.pipe()  # neither end is inherited by children unless passed
        _lifeline = (os.getpid(), read, write)
    return _lifeline[1], _lifeline[2]


def _prctl_deathsig() -> Any:
    """A callable setting PR_SET_PDEATHSIG=SIGKILL for the calling process (None off Linux or without prctl);
    resolved here, before any fork."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    import signal

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    sig = int(signal.SIGKILL)
    return lambda: prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)


def spawn(argv: Sequence[str], *, env: Mapping[str, str] | None = None, stdout: IO[Any] | int | None = None,
          stderr: IO[Any] | int | None = None, stdin: IO[Any] | int | None = subprocess.DEVNULL,
          cwd: str | None = None) -> subprocess.Popen[bytes]:
    """Start `argv` as a child of this process that dies with it (SIGKILL from the kernel; the lifeline pipe).

    The child's environment gets PARENT_ENV and LIFELINE_ENV, which :func:`die_with_parent` reads and removes
    (so that the child's own children are not misled by them).
    """
    read, _ = _lifeline_fds()
    parent = os.getpid()
    deathsig = _prctl_deathsig()

    def in_child() -> None:  # between fork and exec
        if deathsig is not None:
            deathsig()
        if os.getppid() != parent:  # the parent died before the signal was armed
            os._exit(1)

    child_env = {**(os.environ if env is None else env), PARENT_ENV: str(parent), LIFELINE_ENV: str(read)}
    return subprocess.Popen(list(argv), env=child_env, stdout=stdout, stderr=stderr, stdin=stdin, cwd=cwd,
                            pass_fds=(read,), preexec_fn=in_child)


def captrack_child_env() -> dict[str, str]:
    """This process's environment for a ``python -m captrack...`` child: with this captrack's folder first on
    PYTHONPATH when it is a source checkout (not an installed package, whose site-packages folder must not come
    before the standard library)."""
    package = Path(__file__).resolve().parents[1]
    installed = {Path(p).resolve() for p in (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])}
    if package in installed:
        return dict(os.environ)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(package), os.environ.get("PYTHONPATH", "")) if p)}


def _watch_lifeline(fd: int, parent: int, every_s: float) -> None:
    try:
        while os.read(fd, 1):
            pass
    except OSError:  # not the lifeline after all (closed on the way): watch the parent instead
        _watch_parent(parent, every_s)
    os._exit(1)  # end of file: every writer (the parent) is gone


def _watch_parent(parent: int, every_s: float) -> None:
    while True:
        time.sleep(every_s)
        if os.getppid() != parent:
            os._exit(1)


def die_with_parent(parent: int | None = None, every_s: float = 1.0) -> None:
    """Make this process end with its parent, however that ends (kill -9 included).

    Args:
        parent: the parent's PID; None: the one :func:`spawn` named in PARENT_ENV (nothing to do without it). A
            process whose parent is not the one that spawned it (a rank under torchrun, which passes its own
            environment on) gives its parent here: the lifeline is then not its own and is left alone.

    Arms PR_SET_PDEATHSIG (Linux), ends at once when the parent is already gone, and starts a daemon thread
    reading the lifeline pipe (or, without one, checking every `every_s` seconds that the parent is still the
    parent). PARENT_ENV and LIFELINE_ENV are removed from this process's environment.
    """
    named = os.environ.pop(PARENT_ENV, "")
    fd = os.environ.pop(LIFELINE_ENV, "")
    if parent is None:
        parent = int(named) if named.isdigit() else None
    if parent is None:
        return
    deathsig = _prctl_deathsig()
    if deathsig is not None:
        deathsig()
    if os.getppid() != parent:
        os._exit(1)
    if fd.isdigit() and named == str(parent):
        threading.Thread(target=_watch_lifeline, args=(int(fd), parent, every_s), name="captrack-lifeline",
                         daemon=True).start()
    else:
        threading.Thread(target=_watch_parent, args=(parent, every_s), name="captrack-parent-watch", daemon=True).start()


# -- ends: SIGTERM like Ctrl-C, and whether a process still runs ----------------------------------------------

class Terminated(KeyboardInterrupt):
    """SIGTERM received (see :func:`stop_signals_as_interrupt`): a KeyboardInterrupt, so whatever cleans up after Ctrl-C
    (``finally`` blocks, context managers, children stopped) cleans up after it too."""


_stop_signal: int | None = None  # the stop signal received inside stop_signals_as_interrupt, until its outermost exit
_stop_depth = 0


def _interrupt(signum: int) -> KeyboardInterrupt:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _raise_stop(signum: int, frame: object) -> None:
    global _stop_signal
    _stop_signal = signum
    if signum == signal.SIGTERM:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise _interrupt(signum)


@contextlib.contextmanager
def stop_signals_as_interrupt() -> Iterator[None]:
    """Inside: SIGTERM raises :class:`Terminated` in the main thread (a second one ends the process without cleanup)
    and SIGINT raises KeyboardInterrupt, each remembered for :func:`raise_if_stopped`; the previous handlers are
    restored after. SIGINT stays ignored where this process inherited it ignored (a shell's background job, by
    convention). Outside the main thread it does nothing (Python allows handlers only there)."""
    global _stop_signal, _stop_depth
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _stop_depth += 1
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _raise_stop)}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, _raise_stop)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _stop_depth -= 1
        if _stop_depth == 0:
            _stop_signal = None  # what came after the command is not stopped by it


def raise_if_stopped() -> None:
    """Raise again the interrupt of a stop signal received inside :func:`stop_signals_as_interrupt`.

    Python drops an exception raised while a finalizer (``__del__``, a weakref callback) runs, printing "Exception
    ignored in"; a Ctrl-C landing there would be lost and the run would go on. Loops that wait on jobs call this each
    round, so such a signal still stops them."""
    if _stop_signal is not None:
        raise _interrupt(_stop_signal)


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None without one."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rpartition(")")[2].split()
    except OSError:
        return None


def process_start(pid: int) -> str | None:
    """When process `pid` started (clock ticks after boot, /proc/PID/stat's 22nd field), None where not known: with the
    PID it names one process, even after the PID is reused."""
    fields = _proc_stat(pid)
    return fields[19] if fields is not None and len(fields) > 19 else None


def process_gone(pid: int, start: str | None = None) -> bool:
    """True when process `pid`, started at `start` (:func:`process_start`; None: not known), no longer runs: there is
    no such process, it is a zombie, or the PID now names a process started at another time. False whenever it may
    still run (another user's process included)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # a process of another user holds the PID
    except OSError:
        return False
    fields = _proc_stat(pid)
    if fields is None:
        return False
    return fields[0] == "Z" or (start is not None and len(fields) > 19 and fields[19] != start)
