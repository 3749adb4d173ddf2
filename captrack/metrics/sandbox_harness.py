"""The harness that runs inside the sandbox: limits, seccomp filter, program, tests, pass report.

This file is not imported by captrack: :mod:`captrack.metrics.sandbox` reads its source and hands it
to a fresh interpreter (``python -S -c``) inside the sandbox, so it may use the standard library only.

It reads one JSON job from stdin (token, report fd, limits, program, tests) before any model-written
code runs, then: points stdin at /dev/null, lowers its resource limits (hard limits, so they cannot be
raised again), installs a seccomp filter (no new processes, no execve, no sockets, no signals to other
processes, no ptrace, no namespaces), runs the program and then the tests in one namespace, and writes
``{"token": ..., "status": "passed"}`` on the report fd only after the tests returned. Every other
ending (an exception, SystemExit, ``os._exit``, a signal) leaves no valid pass report.
"""

from __future__ import annotations

import builtins
import ctypes
import json
import os
import resource
import struct
import sys
import traceback
from collections.abc import Callable
from typing import Any

_ALLOW = 0x7FFF0000
_KILL_PROCESS = 0x80000000
_ERRNO = 0x00050000
_EPERM, _ENOSYS = 1, 38
_CLONE_THREAD = 0x00010000
# machine -> (audit arch, syscalls refused with EPERM, clone, clone3, x32 bit or 0)
_SYSCALLS = {
    "x86_64": (0xC000003E, {
        "fork": 57, "vfork": 58, "execve": 59, "execveat": 322, "ptrace": 101, "socket": 41,
        "process_vm_readv": 310, "process_vm_writev": 311, "unshare": 272, "setns": 308, "bpf": 321,
        "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425, "keyctl": 250,
        "add_key": 248, "request_key": 249, "mount": 165, "pivot_root": 155, "chroot": 161,
        "kill": 62, "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
        "pidfd_open": 434, "pidfd_send_signal": 424,
    }, 56, 435, 0x40000000),
    "aarch64": (0xC00000B7, {
        "execve": 221, "execveat": 281, "ptrace": 117, "socket": 198, "process_vm_readv": 270,
        "process_vm_writev": 271, "unshare": 97, "setns": 268, "bpf": 280, "perf_event_open": 241,
        "userfaultfd": 282, "io_uring_setup": 425, "keyctl": 219, "add_key": 217, "request_key": 218,
        "mount": 40, "pivot_root": 41, "chroot": 51, "kill": 129, "tkill": 130, "tgkill": 131,
        "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240, "pidfd_open": 434, "pidfd_send_signal": 424,
    }, 220, 435, 0),
}


def _bpf(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def _filter(machine: str) -> list[bytes]:
    """The seccomp BPF program for this machine (raises KeyError for an unknown machine)."""
    arch, denied, clone, clone3, x32 = _SYSCALLS[machine]
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    prog = [_bpf(ld, 4), _bpf(jeq, arch, 1, 0), _bpf(ret, _KILL_PROCESS), _bpf(ld, 0)]
    if x32:
        prog += [_bpf(jge, x32, 0, 1), _bpf(ret, _ERRNO | _EPERM)]
    for number in denied.values():
        prog += [_bpf(jeq, number, 0, 1), _bpf(ret, _ERRNO | _EPERM)]
    # clone3 hides its flags behind a pointer: refuse it so libc falls back to clone, checked below.
    prog += [_bpf(jeq, clone3, 0, 1), _bpf(ret, _ERRNO | _ENOSYS)]
    # clone: threads (CLONE_THREAD) are allowed, anything else (fork, vfork, posix_spawn) is refused.
    prog += [_bpf(jeq, clone, 0, 4), _bpf(ld, 16), _bpf(jset, _CLONE_THREAD, 0, 1), _bpf(ret, _ALLOW)]
    prog += [_bpf(ret, _ERRNO | _EPERM), _bpf(ret, _ALLOW)]
    return prog


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def _seccomp() -> None:
    """Install the filter: from here on this process cannot start processes or open sockets."""
    prog = _filter(os.uname().machine)
    fprog = _Fprog(len(prog), b"".join(prog))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(38, 1, None, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(22, 2, ctypes.addressof(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


def _limits(job: dict[str, Any]) -> None:
    for name, value in (("CPU", job["cpu_s"]), ("AS", job["memory"]), ("FSIZE", job["file_bytes"]),
                        ("NOFILE", job["open_files"]), ("NPROC", job["processes"]), ("CORE", 0)):
        if value is None:
            continue
        limit = getattr(resource, "RLIMIT_" + name)
        hard = resource.getrlimit(limit)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(limit, (value, value))


def _report(fd: int, message: dict[str, str], dumps: Callable[..., str] = json.dumps,
            write: Callable[[int, bytes], int] = os.write) -> None:
    # dumps and write are bound when the harness starts: the program's patches to json or os do not reach here.
    data = (dumps(message) + "\n").encode()
    while data:
        data = data[write(fd, data):]


def _run(
    job: dict[str, Any], token: str, fd: int, run: Callable[..., Any] = exec, build: Callable[..., Any] = compile,
    settrace: Callable[..., None] = sys.settrace, setprofile: Callable[..., None] = sys.setprofile,
) -> int:
    builtins_dict = builtins.__dict__
    saved_builtins = dict(builtins_dict)
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    stage = "program"
    try:
        run(build(job.pop("program"), "program.py", "exec"), namespace)
        # Undo what the program did to the interpreter before the tests run.
        settrace(None)
        setprofile(None)
        builtins_dict.clear()
        builtins_dict.update(saved_builtins)
        namespace["__builtins__"] = builtins
        stage = "tests"
        run(build(job.pop("tests"), "tests.py", "exec"), namespace)
    except SystemExit as exc:
        _report(fd, {"status": "failed", "detail": f"the {stage} exited early (SystemExit({exc.code!r}))"})
        return 1
    except BaseException as exc:  # any exception of the program or the tests is a failure
        traceback.print_exc()
        _report(fd, {"status": "failed", "detail": f"the {stage} raised {type(exc).__name__}: {exc}"[:500]})
        return 1
    _report(fd, {"token": token, "status": "passed"})
    return 0


def _main() -> None:
    job = json.loads(sys.stdin.buffer.read())
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    fd, token = job.pop("report_fd"), job.pop("token")
    try:
        _limits(job)
        _seccomp()
    except (OSError, KeyError, ValueError) as exc:
        _report(fd, {"status": "error", "detail": f"sandbox harness setup failed: {exc!r}"})
        os._exit(3)
    status = _run(job, token, fd)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # the program may have replaced or closed the stream
            pass
    os._exit(status)  # no atexit handlers, no finalizers: nothing of the program's runs after this


if __name__ == "__main__":
    _main()
