"""Start a sandboxed command, feed its stdin, read its output through bounded buffers, kill it on time.

The parent's memory stays bounded whatever the child writes: of stdout and stderr only the last
``keep`` bytes are kept (the rest is counted and discarded), and a child that writes more than
``output_limit`` bytes in all is killed. The child runs in its own session; killing that session's
leader (bubblewrap, started with ``--die-with-parent`` and a PID namespace) ends everything inside.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Outcome", "run_contained"]

_CHUNK = 1 << 16


@dataclass(frozen=True)
class Outcome:
    """How a contained command ended, with the tails of what it wrote."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    report: bytes
    output_bytes: int
    timed_out: bool
    flooded: bool


class _Tail:
    """The last `keep` bytes of a stream, and how many bytes it carried in all."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.data = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.data += chunk
        if len(self.data) > 2 * self.keep:
            del self.data[: -self.keep]

    def value(self) -> bytes:
        return bytes(self.data[-self.keep:])


def run_contained(
    command: Sequence[str],
    stdin: bytes,
    report_fds: tuple[int, int],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    timeout: float,
    keep: int,
    output_limit: int,
) -> Outcome:
    """Run `command` with `stdin`, the write end of `report_fds` inherited, and a wall-clock `timeout`.

    Both ends of `report_fds` (a pipe) are closed here. The child is killed (its whole session) on
    timeout or when stdout plus stderr pass `output_limit` bytes.
    """
    read_end, write_end = report_fds
    try:
        child = subprocess.Popen(
            list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            pass_fds=(write_end,), env=dict(env), cwd=cwd, start_new_session=True,
        )
    except OSError:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    try:
        return _supervise(child, stdin, read_end, timeout, keep, output_limit)
    finally:
        _kill(child)
        os.close(read_end)
        for stream in (child.stdin, child.stdout, child.stderr):
            if stream is not None and not stream.closed:
                stream.close()


def _supervise(
    child: subprocess.Popen[bytes], stdin: bytes, report: int, timeout: float, keep: int, output_limit: int
) -> Outcome:
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    tails = {child.stdout.fileno(): _Tail(keep), child.stderr.fileno(): _Tail(keep), report: _Tail(keep)}
    selector = selectors.DefaultSelector()
    for fd in tails:
        selector.register(fd, selectors.EVENT_READ)
    pending = memoryview(stdin)
    stdin_fd = child.stdin.fileno()
    os.set_blocking(stdin_fd, False)
    selector.register(stdin_fd, selectors.EVENT_WRITE)
    deadline = time.monotonic() + timeout
    timed_out = flooded = False
    open_reads = len(tails)
    while open_reads:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        for key, _ in selector.select(left):
            fd = int(key.fd)
            if fd == stdin_fd:
                pending = _feed(child, selector, pending)
                continue
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                selector.unregister(fd)
                open_reads -= 1
                continue
            tails[fd].add(chunk)
        if tails[child.stdout.fileno()].total + tails[child.stderr.fileno()].total > output_limit:
            flooded = True
            break
    if not (timed_out or flooded):
        try:  # every pipe is closed: give the child a moment to exit on its own and report its status
            child.wait(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            pass
    _kill(child)
    _drain(selector, open_reads)
    selector.close()
    out, err = tails[child.stdout.fileno()], tails[child.stderr.fileno()]
    return Outcome(
        returncode=child.returncode, stdout=out.value(), stderr=err.value(), report=tails[report].value(),
        output_bytes=out.total + err.total, timed_out=timed_out, flooded=flooded,
    )


def _drain(selector: selectors.BaseSelector, open_reads: int, grace: float = 10.0) -> None:
    """After the kill, read (and drop) until every pipe is closed: then nothing inside is left alive."""
    deadline = time.monotonic() + grace
    while open_reads and time.monotonic() < deadline:
        for key, _ in selector.select(max(0.0, deadline - time.monotonic())):
            if key.events & selectors.EVENT_WRITE:
                selector.unregister(key.fd)
            elif not os.read(int(key.fd), _CHUNK):
                selector.unregister(key.fd)
                open_reads -= 1


def _feed(child: subprocess.Popen[bytes], selector: selectors.BaseSelector, pending: memoryview) -> memoryview:
    """Write what the child's stdin takes now; close it once all is written or the child stopped reading."""
    assert child.stdin is not None
    try:
        pending = pending[os.write(child.stdin.fileno(), pending[:_CHUNK]):]
    except (BrokenPipeError, BlockingIOError) as exc:
        if isinstance(exc, BlockingIOError):
            return pending
        pending = pending[len(pending):]
    if not pending:
        selector.unregister(child.stdin.fileno())
        child.stdin.close()
    return pending


def _kill(child: subprocess.Popen[bytes]) -> None:
    """Kill the child's whole session (a no-op once it is gone) and reap it."""
    if child.poll() is None:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            child.kill()
    child.wait()
