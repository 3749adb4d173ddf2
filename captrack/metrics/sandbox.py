"""Run untrusted (model-written) Python in a separate, locked-down process. Never in this one.

Each program runs in a fresh interpreter (``python -I``) in an empty temporary folder with:
a wall-clock timeout (its whole process group is killed), CPU and address-space limits and no
forking (``resource`` limits set before exec), no network (its own network namespace via
``unshare -rn`` where the kernel allows it, and in every case an audit hook that blocks sockets),
and an audit hook that blocks subprocesses, ``os.system``, ``ctypes`` and opening files outside the
temporary folder and the Python installation. A blocked action ends the program with status
``blocked`` and names what it tried.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SandboxResult", "run_program"]

TIMEOUT_S = 10.0
MEMORY_BYTES = 1 << 30
_BLOCKED_EXIT = 97

_GUARD = r'''
import os, sys
_ALLOWED = tuple(p for p in sys.argv[2].split(os.pathsep) if p)
_BLOCK = ("socket.", "subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.fork", "os.spawn",
          "ctypes.", "os.kill", "os.killpg", "pty.", "shutil.rmtree", "os.remove", "os.rmdir", "os.unlink")
def _hook(event, args):
    if event.startswith(_BLOCK):
        _stop(event)
    if event == "open" and args and isinstance(args[0], (str, bytes)):
        path = os.path.realpath(os.fsdecode(args[0]))
        if not path.startswith(_ALLOWED):
            _stop(f"open {path}")
def _stop(what):
    sys.stderr.write(f"CAPTRACK_SANDBOX_BLOCKED {what}\n")
    sys.stderr.flush()
    os._exit(BLOCKED_EXIT)
source = open(sys.argv[1], encoding="utf-8").read()
code = compile(source, "program.py", "exec")
sys.addaudithook(_hook)
exec(code, {"__name__": "__main__"})
'''.replace("BLOCKED_EXIT", str(_BLOCKED_EXIT))


@dataclass(frozen=True)
class SandboxResult:
    """How a program ended: ``passed``, ``failed``, ``timeout``, ``blocked`` (with what) or ``error``."""

    status: str
    detail: str = ""

    @property
    def passed(self) -> bool:
        """Whether the program ran to the end with exit status 0."""
        return self.status == "passed"


@functools.cache
def _network_namespace() -> list[str]:
    """``unshare -rn`` when this machine lets an unprivileged user have its own network namespace."""
    tool = shutil.which("unshare")
    if tool is None:
        return []
    try:
        ok = subprocess.run([tool, "-rn", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return [tool, "-rn"] if ok else []


def _limits(timeout: float, memory: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_CPU, (int(timeout) + 1, int(timeout) + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (10 << 20, 10 << 20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _allowed_roots(workdir: str) -> str:
    roots = {workdir, sys.prefix, sys.base_prefix, sys.exec_prefix, "/dev/null", "/dev/urandom"}
    roots |= {p for p in sysconfig.get_paths().values() if p}
    return os.pathsep.join(os.path.realpath(r) for r in roots)


def run_program(program: str, timeout: float = TIMEOUT_S, memory: int = MEMORY_BYTES) -> SandboxResult:
    """Run `program` in a sandboxed child interpreter and report how it ended."""
    with tempfile.TemporaryDirectory(prefix="captrack-sandbox-") as workdir:
        Path(workdir, "program.py").write_text(program, encoding="utf-8")
        Path(workdir, "guard.py").write_text(_GUARD, encoding="utf-8")
        command = [*_network_namespace(), sys.executable, "-I", "-S", "guard.py", "program.py", _allowed_roots(workdir)]
        env = {"PATH": "/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir, "PYTHONHASHSEED": "0", "LANG": "C.UTF-8"}
        try:
            child = subprocess.Popen(
                command, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, start_new_session=True, preexec_fn=lambda: _limits(timeout, memory),
            )
        except OSError as exc:
            return SandboxResult("error", f"cannot start the sandbox: {exc}")
        try:
            _, stderr = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(child)
            return SandboxResult("timeout", f"ran past {timeout:g} s")
        finally:
            _kill_group(child)
    tail = stderr.decode("utf-8", "replace")[-2000:]
    if child.returncode == 0:
        return SandboxResult("passed")
    if child.returncode == _BLOCKED_EXIT and "CAPTRACK_SANDBOX_BLOCKED" in tail:
        return SandboxResult("blocked", tail.split("CAPTRACK_SANDBOX_BLOCKED", 1)[1].strip().splitlines()[0])
    if child.returncode < 0:
        return SandboxResult("failed", f"killed by signal {-child.returncode}: {tail.strip()[-300:]}")
    return SandboxResult("failed", tail.strip()[-300:])


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    child.wait()
