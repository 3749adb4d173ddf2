"""Model-written code runs in a sandboxed child process: hostile programs are contained and reported."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from captrack.metrics.sandbox import run_program

HOSTILE = [
    ("reads a file", "print(open('/etc/hostname').read())", "blocked", "open /etc/hostname"),
    ("opens a socket", "import socket\nsocket.socket().connect(('127.0.0.1', 9))", "blocked", "socket"),
    ("resolves a host", "import socket\nsocket.getaddrinfo('example.com', 80)", "blocked", "socket.getaddrinfo"),
    ("fork-bombs", "import os\nwhile True:\n    os.fork()", "blocked", "os.fork"),
    ("spawns a shell", "import os\nos.system('echo hi')", "blocked", "os.system"),
    ("uses ctypes", "import ctypes\nctypes.CDLL(None)", "blocked", "ctypes"),
    ("loops forever", "while True:\n    pass", "timeout", "ran past"),
]


@pytest.mark.parametrize(("what", "program", "status", "detail"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_program_is_contained_and_reported(what: str, program: str, status: str, detail: str) -> None:
    result = run_program(program, timeout=2)
    assert result.status == status and not result.passed
    assert detail in result.detail


def test_writing_outside_the_sandbox_leaves_no_trace(tmp_path: Path) -> None:
    marker = tmp_path / "escaped.txt"
    result = run_program(f"open({str(marker)!r}, 'w').write('x')", timeout=5)
    assert result.status == "blocked" and not marker.exists()


def test_memory_limit_turns_a_huge_allocation_into_a_failure() -> None:
    result = run_program("x = bytearray(8 << 30)", memory=512 << 20, timeout=5)
    assert result.status == "failed" and "MemoryError" in result.detail


def test_ordinary_programs_pass_and_fail_normally() -> None:
    assert run_program("import math, re, heapq, collections\nassert math.gcd(12, 18) == 6").passed
    failed = run_program("assert 1 + 1 == 3")
    assert failed.status == "failed" and "AssertionError" in failed.detail


def test_program_runs_in_another_process() -> None:
    result = run_program(f"import os\nassert os.getpid() != {os.getpid()}")
    assert result.passed
