"""Fixtures of the import tests: a Python 3.12 environment holding NeMo Evaluator and Every-Eval-Ever.

Both tools need Python >= 3.12 (on 3.11 pip silently installs nemo-evaluator 0.2.8, an unrelated package),
while captrack's environment may be 3.11. The fixture builds the environment once under
``.cache/tool-venvs/`` (git-ignored; `make tool-venv` builds it ahead) from a Python 3.12 found on PATH or
under pyenv, pinned to the versions the tests were written against, and reuses it afterwards. Without a
Python 3.12, or when the packages cannot be installed (no registry), the tests that need it are skipped with
the reason.
"""

from __future__ import annotations

import fcntl
import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("nemo-evaluator==0.3.0", "every-eval-ever==0.3.0", "scipy>=1.11")  # nel's headline CIs import scipy
VENV = ROOT / ".cache" / "tool-venvs" / "py312-nemo-evaluator-0.3.0-every-eval-ever-0.3.0"
WRITERS = Path(__file__).with_name("tool_writers")


def _python312() -> str | None:
    """A Python 3.12 that runs: this one, pyenv's, or python3.12 on PATH (a pyenv shim without the version fails)."""
    if sys.version_info[:2] >= (3, 12):
        return sys.executable
    candidates = [p for home in (os.path.expanduser("~"), "/root")
                  for p in sorted(glob.glob(f"{home}/.pyenv/versions/3.12*/bin/python3.12"), reverse=True)]
    candidates += [p for p in [shutil.which("python3.12")] if p]
    for python in candidates:
        if subprocess.run([python, "-c", "import venv"], capture_output=True, timeout=60).returncode == 0:
            return python
    return None


def _build(python: str) -> str:
    """The environment's python, building it first when absent (under a lock: parallel test runs build once)."""
    VENV.parent.mkdir(parents=True, exist_ok=True)
    ready = VENV / ".ready"
    with open(VENV.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready.is_file() or ready.read_text(encoding="utf-8") != "\n".join(TOOLS) + "\n":
            shutil.rmtree(VENV, ignore_errors=True)
            subprocess.run([python, "-m", "venv", str(VENV)], check=True, capture_output=True, timeout=300)
            done = subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", *TOOLS], capture_output=True, text=True,
                                  timeout=1500)
            if done.returncode != 0:
                shutil.rmtree(VENV, ignore_errors=True)
                raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "pip failed")
            ready.write_text("\n".join(TOOLS) + "\n", encoding="utf-8")
    return str(VENV / "bin" / "python")


@pytest.fixture(scope="session")
def tool_python() -> str:
    """The Python 3.12 that has NeMo Evaluator 0.3.0 and Every-Eval-Ever 0.3.0 installed (skip when unavailable)."""
    python = _python312()
    if python is None:
        pytest.skip("needs a Python 3.12 (NeMo Evaluator 0.3.0 and Every-Eval-Ever 0.3.0 require it); none on PATH or pyenv")
    try:
        return _build(python)
    except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
        pytest.skip(f"could not install {' '.join(TOOLS)} into {VENV} with {python}: {exc}")


def run_writer(python: str, script: str, *args: str) -> None:
    """Run one of tool_writers/ with the tool environment's python (its output shown on failure)."""
    done = subprocess.run([python, str(WRITERS / script), *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


if __name__ == "__main__":  # `make tool-venv`: build the environment ahead of the tests
    found = _python312()
    if found is None:
        sys.exit("no Python 3.12 on PATH or under pyenv: the NeMo Evaluator and Every-Eval-Ever import tests will skip")
    print(_build(found))
