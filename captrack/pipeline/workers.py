"""Independent stages (trainings, evaluations) side by side in worker processes, one torch thread each.

On a CPU the stages of `captrack run` that do not depend on each other — the three trainings, then the
four evaluations — run in as many worker processes as there are usable cores, each with a share of the
free cores as torch threads. A 135M model's small matrix products scale poorly from one thread to two
(a decode step: 206 ms on one thread, 132 ms on two), so two single-threaded workers finish more work
than one two-threaded process; and on a shared machine a single-threaded worker never waits at a
barrier for a thread the scheduler has parked. Each worker writes its output to
``<workdir>/logs/<stage>.log``; the parent records a stage's marker only when its worker succeeded.

    python -m captrack.pipeline.workers_main EXPERIMENT.pickle "evaluate base (seed 0)"   # one stage (internal)
"""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from rich.markup import escape

from captrack.errors import InputError
from captrack.files import write_atomic

if TYPE_CHECKING:
    from rich.console import Console

    from captrack.pipeline.experiment import Experiment
    from captrack.pipeline.stage import Stage

__all__ = ["PARENT_ENV", "die_with_parent", "run_side_by_side", "show_stage_warnings", "stage_warnings", "worker_count"]

PARENT_ENV = "CAPTRACK_PARENT_PID"
"""The PID of the `captrack run` that started a worker: the worker ends when that process is gone."""
_PR_SET_PDEATHSIG = 1


def _parent_gone(parent: int) -> bool:
    return os.getppid() != parent


def _watch_parent(parent: int, every_s: float) -> None:
    while True:
        time.sleep(every_s)
        if _parent_gone(parent):
            os._exit(1)


def die_with_parent(parent: int | None, every_s: float = 1.0) -> None:
    """Make this worker end with the `captrack run` that started it, however that ends (kill -9 included).

    On Linux the kernel sends SIGKILL when the parent dies (prctl PR_SET_PDEATHSIG); elsewhere, and as a
    second guard, a daemon thread checks every `every_s` seconds that the parent is still this process's
    parent. A parent that died before this was set up ends the worker at once.
    """
    if parent is None:
        return
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass  # no prctl here: the watching thread below still ends the worker
    if _parent_gone(parent):
        os._exit(1)
    import threading

    threading.Thread(target=_watch_parent, args=(parent, every_s), name="captrack-parent-watch", daemon=True).start()


def worker_count(stages: int, cores: int, env: dict[str, str] | None = None) -> int:
    """Workers for `stages` independent stages: one per usable core (CAPTRACK_WORKERS wins), 1 with a GPU."""
    env = dict(os.environ) if env is None else env
    value = env.get("CAPTRACK_WORKERS", "").strip()
    if value.isdigit() and int(value) > 0:
        return max(1, min(int(value), stages))
    if "torch" in sys.modules and sys.modules["torch"].cuda.is_available():
        return 1  # one accelerator: its stages queue on it anyway
    return max(1, min(cores, stages))


@dataclass
class _Running:
    stage: Stage
    process: subprocess.Popen[bytes]
    log: Path
    handle: IO[bytes]
    started: float


def _slug(title: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()


PROGRESS_EVERY_S = 20.0
"""How often the parent shows each running worker's latest progress line (its log's last line)."""


_PROGRESS = re.compile(r"\b\d+/\d+\b|\d+%\|")
_WARNING = re.compile(r"\bWARNING\b|\bwarn(?:ing)?s?\.warn|\w+Warning:")


def _latest_line(log: Path) -> str:
    """The stage's latest progress line in `log` (a training step, a requests bar; tqdm redraws with carriage
    returns), never a warning; "starting" until the stage printed one."""
    with log.open("rb") as handle:
        handle.seek(max(0, log.stat().st_size - 16384))
        tail = handle.read().decode("utf-8", errors="replace")
    parts = [p.strip() for p in re.split(r"[\r\n]+", tail) if p.strip()]
    progress = [p for p in parts if _PROGRESS.search(p) and not _WARNING.search(p)]
    return progress[-1][:160] if progress else "starting"


def stage_warnings(logs: list[Path]) -> list[str]:
    """The distinct warning lines of worker logs, in first-seen order, timestamps and source locations dropped."""
    seen: dict[str, None] = {}
    for log in logs:
        for line in log.read_text(errors="replace").splitlines():
            if _WARNING.search(line):
                text = re.sub(r"^\S+ WARNING\s+\[[^\]]*\]\s*", "", line.strip())
                seen.setdefault(text[:300], None)
    return list(seen)


def show_stage_warnings(logs: list[Path], console: Console) -> None:
    """Each distinct warning of these worker logs not shown before in this process, once."""
    from rich.markup import escape

    from captrack.lmeval.quiet import mark_shown, shown_warnings

    shown = shown_warnings()
    found = [w for w in stage_warnings(logs) if w not in shown]
    mark_shown(found)
    if found:
        folder = logs[0].parent
        console.print(f"[yellow]{len(found)} warning(s) from these stages, each shown once per run (full logs in "
                      f"{escape(str(folder))}):[/]")
        for warning in found[:20]:
            console.print(f"[dim]  {escape(warning)}[/]", highlight=False)


def _show_progress(running: list[_Running], console: Console) -> None:
    for job in running:
        line = escape(_latest_line(job.log))
        console.print(f"[dim]{escape(job.stage.title)} ({time.perf_counter() - job.started:.0f} s): {line}[/]", highlight=False)


def run_side_by_side(experiment: Experiment, stages: list[Stage], workers: int, threads: int, console: Console,
                     finish: Callable[[Stage, float], None]) -> None:
    """Run `stages` (each `needs` only stages in this list or done ones) in `workers` processes of `threads` threads.

    Raises:
        InputError: a stage failed (its log's last lines quoted); the others are stopped.
    """
    work = experiment.work
    logs = work.logs
    logs.mkdir(parents=True, exist_ok=True)
    frozen = work.frozen_experiment
    frozen.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(frozen, pickle.dumps(experiment))
    waiting, done = list(stages), set[str]()
    running: list[_Running] = []
    pending = {s.title for s in stages}
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "CAPTRACK_THREADS": str(threads), "OMP_WAIT_POLICY": "PASSIVE",
           "TOKENIZERS_PARALLELISM": "false", PARENT_ENV: str(os.getpid())}
    console.print(f"[dim]{len(stages)} stage(s) side by side: {workers} worker process(es) x {threads} torch thread(s); "
                  f"logs in {escape(str(logs))}[/]")
    shown = time.perf_counter()
    try:
        while waiting or running:
            ready = sorted((s for s in waiting if all(n in done or n not in pending for n in s.needs)), key=lambda s: -s.cost)
            while ready and len(running) < workers:
                stage = ready.pop(0)
                waiting.remove(stage)
                if stage.done():  # what it needed ran again and left its inputs as they were
                    console.print(f"[dim]{escape(stage.title)}: unchanged, reusing[/]")
                    done.add(stage.title)
                    continue
                log = work.log(_slug(stage.title))
                handle = log.open("wb")
                process = subprocess.Popen([sys.executable, "-m", "captrack.pipeline.workers_main", str(frozen), stage.title],
                                           stdout=handle, stderr=subprocess.STDOUT, env=env)
                running.append(_Running(stage, process, log, handle, time.perf_counter()))
                console.print(f"started {stage.title} (log: {log.name})", markup=False)
            time.sleep(0.2)
            if running and time.perf_counter() - shown >= PROGRESS_EVERY_S:
                _show_progress(running, console)
                shown = time.perf_counter()
            for job in [j for j in running if j.process.poll() is not None]:
                running.remove(job)
                job.handle.close()
                if job.process.returncode != 0:
                    tail = job.log.read_text(errors="replace").strip().splitlines()[-15:]
                    raise InputError(f"stage {job.stage.title!r} failed (exit {job.process.returncode}); "
                                     f"last lines of {job.log}:\n" + "\n".join(tail))
                done.add(job.stage.title)
                finish(job.stage, time.perf_counter() - job.started)
    finally:
        for job in running:
            job.process.kill()
            job.process.wait()
            job.handle.close()
    show_stage_warnings([work.log(_slug(s.title)) for s in stages if work.log(_slug(s.title)).is_file()], console)
