"""The served-evaluation tests' check that a stopped server left nothing behind (captrack.lmeval.served)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

__all__ = ["no_server_left"]


def _left(port: int) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if str(port).encode() in words and any(b"api_server" in w or b"server_guard" in w for w in words):
            found.append(f"process {cmdline.parent.name}: {b' '.join(words)[:200]!r}")
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            found.append(f"port {port} listening")
    return found


def no_server_left(port: int, wait_s: float = 30) -> None:
    """Assert that within `wait_s` nothing listens on `port` and no process runs vLLM's server or its guard for it."""
    deadline = time.monotonic() + wait_s
    while _left(port) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _left(port) == []
