"""The code sandbox: ordinary programs pass and fail normally, and without bubblewrap it refuses clearly.

Hostile programs are in test_sandbox_hostile.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from captrack.metrics import sandbox
from captrack.metrics.sandbox import (
    FALLBACK_ENV,
    SandboxUnavailable,
    bwrap_problem,
    run_batch,
    run_program,
)

needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bubblewrap sandbox: {bwrap_problem()}")


@needs_bwrap
def test_ordinary_programs_pass_and_fail_normally() -> None:
    ok = run_program("import math, re, heapq, collections\ndef f(x):\n    return math.gcd(x, 18)", "assert f(12) == 6")
    assert ok.passed and ok.sandbox == "bwrap"
    failed = run_program("def f(x):\n    return x", "assert f(12) == 6")
    assert failed.status == "failed" and "AssertionError" in failed.detail and "tests" in failed.detail


@needs_bwrap
def test_a_program_that_does_not_compile_fails_with_its_error() -> None:
    result = run_program("def f(:\n", "assert f()")
    assert result.status == "failed" and "SyntaxError" in result.detail and "program" in result.detail


@needs_bwrap
def test_program_runs_in_another_process_without_the_evaluators_environment() -> None:
    os.environ["CAPTRACK_SANDBOX_PROBE"] = "secret"
    try:
        result = run_program(f"import os\nassert os.getpid() != {os.getpid()}\nassert 'CAPTRACK_SANDBOX_PROBE' not in os.environ")
    finally:
        del os.environ["CAPTRACK_SANDBOX_PROBE"]
    assert result.passed


@needs_bwrap
def test_hash_seed_is_fixed_so_scores_are_reproducible() -> None:
    assert run_program(f"assert hash('captrack') == {_hash_with_seed_zero()}").passed


def _hash_with_seed_zero() -> int:
    import subprocess
    import sys

    env = {"PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-S", "-c", "print(hash('captrack'))"], env=env, capture_output=True, text=True)
    return int(out.stdout)


@needs_bwrap
def test_a_batch_runs_in_parallel_and_keeps_the_order() -> None:
    jobs = [(f"def f():\n    return {i}", f"assert f() == {i if i % 2 else -1}") for i in range(6)]
    assert [r.passed for r in run_batch(jobs, timeout=5)] == [i % 2 == 1 for i in range(6)]


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A PATH on which bubblewrap cannot be found."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(FALLBACK_ENV, raising=False)


def test_without_bubblewrap_code_scoring_refuses_and_names_the_fix(no_bwrap: None) -> None:
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap") as error:
        run_program("pass")
    assert FALLBACK_ENV in str(error.value) and "user namespaces" in str(error.value)


def test_the_fallback_runs_only_when_asked_and_says_so(no_bwrap: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FALLBACK_ENV, "1")
    result = run_program("def f():\n    return 1", "assert f() == 1")
    assert result.passed and result.sandbox == "fallback"
    early = run_program("import sys\nsys.exit(0)", "assert False")
    assert early.status == "failed" and early.sandbox == "fallback" and "SystemExit" in early.detail
    alive = run_program(f"import os\nos.kill({os.getpid()}, 9)")
    assert alive.status == "failed" and "PermissionError" in alive.detail


def test_bubblewrap_that_cannot_create_namespaces_is_reported(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    assert "cannot create its namespaces" in (sandbox._bwrap_problem(str(fake)) or "")
