"""Run untrusted (model-written) Python isolated by the operating system. Never in this process.

**The sandbox (``bwrap``).** Each program runs under bubblewrap in new user, PID, network, IPC, UTS
and cgroup namespaces, as an unprivileged uid with every capability dropped, ``--die-with-parent``
and ``--new-session``. Its file system is read-only binds of ``/usr`` (and the ``/lib*``, ``/bin``
links) and of the Python installation (its ``site-packages`` hidden), a fresh ``/proc`` and a
minimal ``/dev``, and a size-capped tmpfs at ``/tmp`` as the only writable place: no evaluator venv,
project, home or ``/work``, no view of the evaluator's environment (``--clearenv``) or processes.
Inside, the harness (:mod:`captrack.metrics.sandbox_harness`) sets hard rlimits (CPU time, address
space, file size, open files, processes) and a seccomp filter (no fork/clone of processes, no execve,
no sockets, no signals, no ptrace, no namespaces) before the program's first line runs. The whole sandbox is
killed at the wall-clock timeout; stdout and stderr are read through bounded buffers.

**Who decides a pass.** The harness, never the exit status: it gets a random per-run token and the
tests on stdin (read before the program runs, so the tests are never a file the program can read),
runs the program then the tests, and only after the tests returned writes the token on its own pipe.
``sys.exit``, ``SystemExit``, ``os._exit``, ``atexit`` tricks and signals leave no token: scored 0,
with the reason.

**Residual risks** (documented in tasks/humaneval/README.md): the program shares the harness's
interpreter, so a program written against this harness can find the token or the tests in memory
(frames, ``gc``, ``ctypes``) and forge a pass, or fake test success in-process (objects whose
``__eq__`` is always true, patching modules the tests import). The harness stops the cheap forms
(it restores ``builtins`` and trace hooks before the tests and keeps its own ``exec``), but such
items are a scoring error, never harm outside the sandbox. The kernel itself is shared.

**Without bubblewrap** (or without user namespaces) code tasks refuse to run, naming the fix, unless
``CAPTRACK_UNSAFE_CODE_FALLBACK=1`` opts in to the weaker fallback: the same harness (rlimits,
seccomp, token) in a temporary folder, but with the evaluator's file system and network namespace
visible. Every :class:`SandboxResult` says which sandbox scored it.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import secrets
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from captrack.errors import CaptrackError
from captrack.metrics.sandbox_process import Outcome, run_contained

__all__ = [
    "FALLBACK_ENV", "SandboxResult", "SandboxUnavailable", "bwrap_problem", "run_batch", "run_program", "sandbox_kind",
]

TIMEOUT_S = 10.0
MEMORY_BYTES = 1 << 30
FILE_BYTES = 16 << 20
TMPFS_BYTES = 64 << 20
OPEN_FILES = 64
PROCESSES = 64
KEEP_BYTES = 64 << 10
OUTPUT_LIMIT = 16 << 20
FALLBACK_ENV = "CAPTRACK_UNSAFE_CODE_FALLBACK"
HARNESS_MARKER = "captrack-sandbox-harness"  # the harness's argv[1]: lets tests find sandboxed processes
_SANDBOX_UID = "65534"
_HARNESS = Path(__file__).with_name("sandbox_harness.py")
_LOG = logging.getLogger(__name__)


class SandboxUnavailable(CaptrackError):
    """bubblewrap cannot run here and the weaker fallback was not asked for."""


@dataclass(frozen=True)
class SandboxResult:
    """How a program ended, why, and which sandbox ran it (``bwrap`` or ``fallback``).

    ``status`` is ``passed`` (the harness saw the tests return), ``failed`` (the program or the
    tests raised, exited early, or flooded the output), ``exited`` (the process ended or was killed
    before the harness reported), ``timeout`` or ``error`` (the sandbox itself failed).
    """

    status: str
    detail: str = ""
    sandbox: str = "bwrap"

    @property
    def passed(self) -> bool:
        """Whether the harness reported, with this run's token, that the tests returned."""
        return self.status == "passed"


def sandbox_kind() -> str:
    """``bwrap`` when bubblewrap works here, ``fallback`` when it does not and the user opted in.

    Raises:
        SandboxUnavailable: bubblewrap is missing or cannot create namespaces, and
            ``CAPTRACK_UNSAFE_CODE_FALLBACK`` is not ``1``; the message names the fix.
    """
    problem = bwrap_problem()
    if problem is None:
        return "bwrap"
    if os.environ.get(FALLBACK_ENV) == "1":
        _warn_fallback(problem)
        return "fallback"
    raise SandboxUnavailable(
        f"model-written code is only run inside bubblewrap, and {problem}. Fix: install it "
        "(`apt-get install bubblewrap`, or `make test` as root) and allow unprivileged user namespaces "
        "(`sysctl -w kernel.unprivileged_userns_clone=1` / `user.max_user_namespaces>0`, or a container "
        f"started with them); or set {FALLBACK_ENV}=1 to accept the weaker fallback (no file-system or "
        "network isolation), which is recorded with every result."
    )


def bwrap_problem() -> str | None:
    """Why bubblewrap cannot sandbox a program here (missing, or no user namespaces), or None when it can."""
    return _bwrap_problem(shutil.which("bwrap"))


@functools.cache
def _warn_fallback(problem: str) -> None:
    _LOG.warning("%s; %s=1: code is scored in the weaker fallback sandbox", problem, FALLBACK_ENV)


@functools.cache
def _bwrap_problem(bwrap: str | None) -> str | None:
    """Why bubblewrap cannot sandbox a program here, or None when it can (tried once per path)."""
    if bwrap is None:
        return "bubblewrap (`bwrap`) is not on PATH"
    try:
        probe = subprocess.run(
            [*_bwrap_command(bwrap), "-c", "pass"], capture_output=True, timeout=60, env=_environment("/tmp"),
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"`{bwrap}` could not be started ({exc})"
    if probe.returncode != 0:
        said = probe.stderr.decode("utf-8", "replace").strip()[-300:]
        return f"`{bwrap}` cannot create its namespaces here ({said or f'exit status {probe.returncode}'})"
    return None


def _interpreter() -> str:
    """The real interpreter behind this (maybe virtual) environment: the one the sandbox runs."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def _interpreter_flags() -> list[str]:
    flags = ["-S", "-s", "-B"]  # no site (no site-packages), no user site, no bytecode writes
    return [*flags, "-P"] if sys.version_info >= (3, 11) else flags


def _environment(home: str) -> dict[str, str]:
    """The whole environment the program sees: nothing of the evaluator's."""
    return {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}


def _system_binds() -> list[str]:
    """``/usr`` read-only, and the top-level library/binary folders as the host has them (links or binds)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    return args


def _python_binds() -> list[str]:
    """The Python installation read-only (outside /usr), with its site-packages hidden under empty tmpfs."""
    roots = {os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix)}
    roots.add(os.path.dirname(os.path.dirname(_interpreter())))
    roots = {r for r in roots if not (r + "/").startswith("/usr/")}
    args = [arg for root in sorted(roots) for arg in ("--ro-bind", root, root)]
    base = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}
    hidden = {os.path.realpath(sysconfig.get_paths(vars=base)[key]) for key in ("purelib", "platlib")}
    for path in sorted(hidden):
        if os.path.isdir(path) and any((path + "/").startswith(root + "/") for root in roots | {"/usr"}):
            args += ["--size", "4096", "--tmpfs", path, "--remount-ro", path]
    return args


def _bwrap_command(bwrap: str) -> list[str]:
    """bubblewrap's command line up to and including the interpreter and its flags."""
    isolation = ["--unshare-all", "--unshare-user", "--uid", _SANDBOX_UID, "--gid", _SANDBOX_UID,
                 "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--hostname", "sandbox"]
    environment = ["--clearenv"] + [a for k, v in _environment("/tmp").items() for a in ("--setenv", k, v)]
    mounts = [*_system_binds(), *_python_binds(), "--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev",
              "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp", "--remount-ro", "/", "--chdir", "/tmp"]
    return [bwrap, *isolation, *environment, *mounts, _interpreter(), *_interpreter_flags()]


def run_program(program: str, tests: str = "", timeout: float = TIMEOUT_S, memory: int = MEMORY_BYTES) -> SandboxResult:
    """Run `program`, then `tests` in its namespace, sandboxed; passed only if the tests returned.

    Raises:
        SandboxUnavailable: see :func:`sandbox_kind`.
    """
    kind = sandbox_kind()
    token = secrets.token_hex(16)
    report = os.pipe()
    job = {"token": token, "report_fd": report[1], "program": program, "tests": tests, "cpu_s": int(timeout) + 1,
           "memory": memory, "file_bytes": FILE_BYTES, "open_files": OPEN_FILES,
           "processes": PROCESSES if kind == "bwrap" else None}
    harness = ["-c", _HARNESS.read_text(encoding="utf-8"), HARNESS_MARKER]
    stdin = json.dumps(job).encode("utf-8")
    try:
        if kind == "bwrap":
            command = [*_bwrap_command(shutil.which("bwrap") or "bwrap"), *harness]
            outcome = run_contained(command, stdin, report, env=_environment("/tmp"), cwd="/", timeout=timeout,
                                    keep=KEEP_BYTES, output_limit=OUTPUT_LIMIT)
        else:
            with tempfile.TemporaryDirectory(prefix="captrack-sandbox-") as workdir:
                command = [_interpreter(), *_interpreter_flags(), *harness]
                outcome = run_contained(command, stdin, report, env=_environment(workdir), cwd=workdir,
                                        timeout=timeout, keep=KEEP_BYTES, output_limit=OUTPUT_LIMIT)
    except OSError as exc:
        return SandboxResult("error", f"cannot start the sandbox: {exc}", kind)
    return _verdict(outcome, token, timeout, kind)


def _verdict(outcome: Outcome, token: str, timeout: float, kind: str) -> SandboxResult:
    """Turn what the sandbox did into a result: a pass needs this run's token from the harness."""
    if outcome.timed_out:
        return SandboxResult("timeout", f"ran past {timeout:g} s of wall-clock time; the sandbox was killed", kind)
    if outcome.flooded:
        return SandboxResult("failed", f"wrote more than {OUTPUT_LIMIT} bytes of output; the sandbox was killed", kind)
    reports = [_parse(line) for line in outcome.report.splitlines()]
    if any(r.get("token") == token and r.get("status") == "passed" for r in reports):
        return SandboxResult("passed", "", kind)
    said = [r for r in reports if r.get("status") in ("failed", "error") and "token" not in r]
    stderr = outcome.stderr.decode("utf-8", "replace").strip()
    if said:
        status = "error" if said[-1]["status"] == "error" else "failed"
        return SandboxResult(status, f"{said[-1].get('detail', '')}\n{stderr[-300:]}".strip(), kind)
    if stderr.startswith("bwrap:"):
        return SandboxResult("error", f"bubblewrap failed: {stderr[:300]}", kind)
    code = outcome.returncode
    how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"
    if code is not None and code > 128 and kind == "bwrap":
        how = f"killed by signal {code - 128}"
    return SandboxResult(
        "exited", f"the process ended ({how}) before the harness reported; early exits, limits "
        f"(CPU {int(timeout) + 1} s, memory) and signals never count as a pass. {stderr[-300:]}".strip(), kind)


def _parse(line: bytes) -> dict[str, str]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def run_batch(
    jobs: Sequence[tuple[str, str]], timeout: float = TIMEOUT_S, memory: int = MEMORY_BYTES,
    workers: int | None = None,
) -> list[SandboxResult]:
    """Run (program, tests) pairs in parallel sandboxes, at most one per CPU core; results in order."""
    if not jobs:
        return []
    sandbox_kind()  # refuse before starting any thread
    count = workers or min(os.cpu_count() or 1, len(jobs))
    with ThreadPoolExecutor(max_workers=count, thread_name_prefix="captrack-sandbox") as pool:
        return list(pool.map(lambda job: run_program(job[0], job[1], timeout, memory), jobs))
