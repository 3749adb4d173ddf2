"""The Python a stage job runs under: this interpreter, the vLLM environment's, or a checkpoint's own ``python:``.

A checkpoint with ``model: vllm`` evaluates under the vLLM environment's interpreter
(captrack.lmeval.vllm_env: ``make vllm-venv`` builds it; ``CAPTRACK_BUILD_VLLM=1`` lets the run build it), unless this
interpreter imports vLLM itself (a GPU host where the lab installed it beside captrack). A checkpoint may instead name
an interpreter a lab already has (``python: /opt/envs/vllm/bin/python``); before any work that interpreter must start
and find what the stage imports (captrack, lm_eval, and vllm for ``model: vllm``), else the run is refused with one
line. A foreign interpreter's job gets this process's environment without what points Python at this environment
(``PYTHONPATH``, ``PYTHONHOME``, ``VIRTUAL_ENV``); captrack's source folder goes on its ``PYTHONPATH`` when captrack
runs from a checkout (not from a site-packages folder, which would bring this environment's packages along).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from captrack.errors import InputError

__all__ = ["DROPPED", "check_python", "foreign_env", "is_foreign", "manifest_python", "stage_python", "wanted_python"]

DROPPED = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
"""What a foreign interpreter's job does not inherit: it points Python at this process's environment."""
_VLLM = "vllm"
_BUILD_ENV = "CAPTRACK_BUILD_VLLM"


def is_foreign(python: str | None) -> bool:
    """Whether `python` is another interpreter than this process's (paths compared as written: a virtualenv's
    ``bin/python`` is a link to the same binary as another's, yet another environment)."""
    return bool(python) and os.path.abspath(str(python)) != os.path.abspath(sys.executable)


def _source_root() -> str | None:
    """The folder holding the ``captrack`` package when it runs from a source checkout; None from site-packages."""
    root = Path(__file__).resolve().parents[2]
    return None if root.name in ("site-packages", "dist-packages") else str(root)


def foreign_env(env: Mapping[str, str], python: str | None) -> dict[str, str]:
    """`env` for a job run by `python`: as it is for this interpreter; for a foreign one without :data:`DROPPED`,
    captrack's source folder on ``PYTHONPATH`` (a checkout), ``HF_HUB_OFFLINE`` kept as set."""
    if not is_foreign(python):
        return dict(env)
    out = {k: v for k, v in env.items() if k not in DROPPED}
    root = _source_root()
    if root is not None:
        out["PYTHONPATH"] = root
    return out


def manifest_python(python: str, folder: Path) -> str:
    """A checkpoint's ``python:``: ${VAR} and ~ expanded, a relative path with a slash found beside the file; a bare
    command (``python3.11``) as written (found on PATH when it runs)."""
    if not python.strip():
        return ""
    if "/" not in python and not python.startswith(("~", "$")):
        return python
    from captrack.paths import expand_path

    path = expand_path(python, folder) if "$" in python else Path(python).expanduser()  # never resolved: a venv's link
    return str(path if path.is_absolute() else Path(os.path.normpath(folder / path)))


def wanted_python(model: str, python: str) -> str | None:
    """The interpreter a checkpoint's evaluation asks for, without checking it: its ``python:``; for ``model: vllm``
    the vLLM environment's (its path, built or not) unless this interpreter imports vllm; else None (this one)."""
    if python:
        return python
    if model != _VLLM or importlib.util.find_spec(_VLLM) is not None:
        return None
    from captrack.lmeval.vllm_env import VLLM_VENV

    return str(VLLM_VENV / "bin" / "python")


def stage_python(model: str, python: str, where: str, in_container: bool = False) -> str | None:
    """The interpreter a checkpoint's evaluation runs under (None: this one), checked: see the module docstring.

    `in_container`: the job runs inside a container image (the Slurm executor's ``container:``), where a checkpoint's
    ``python:`` is the image's interpreter; it cannot be started on this host, so it is taken as written (a job whose
    image lacks it fails at its start, naming it in its log).

    Raises:
        InputError: the vLLM environment is not built (how to build it said; built here when CAPTRACK_BUILD_VLLM=1),
            or the checkpoint's `python` does not start or lacks a module the stage imports.
    """
    wanted = wanted_python(model, python)
    if wanted is None:
        return None
    if python:
        if not in_container:
            check_python(python, model, where)
        return python
    return _vllm_env(where)


def _vllm_env(where: str) -> str:
    from captrack.lmeval.vllm_env import build_vllm_env, unavailable_reason, vllm_python

    built = vllm_python()
    if built is not None:
        return str(built)
    reason = unavailable_reason()
    if reason is None and os.environ.get(_BUILD_ENV) == "1":
        return str(build_vllm_env(say=True))
    how = (f"it cannot be built here ({reason})" if reason else
           f"build it with `make vllm-venv` (or `python -m captrack.lmeval.vllm_env`; {_BUILD_ENV}=1 builds it in the run)")
    raise InputError(f"{where}: model: vllm runs in the vLLM environment, which is not built: {how}, or give the "
                     "checkpoint a python: that imports vllm and lm_eval; nothing was run")


def check_python(python: str, model: str, where: str) -> None:
    """Refuse `python` when it does not start or cannot find captrack, lm_eval (and vllm for ``model: vllm``).

    Raises:
        InputError: naming the interpreter and the modules it lacks.
    """
    missing = _missing_modules(python, ("lm_eval", *((_VLLM,) if model == _VLLM else ())))
    if missing:
        raise InputError(f"{where}: python: {python} {missing}; install them there (captrack from this checkout: "
                         f"`{python} -m pip install --no-deps -e {_source_root() or 'captrack'}`) or name another "
                         "interpreter; nothing was run")


_PROBE = """
import importlib, importlib.util, sys
lacking = [m for m in sys.argv[2:] if importlib.util.find_spec(m) is None]
try:
    importlib.import_module(sys.argv[1])
except ImportError as exc:
    lacking.append(f"{exc.name or exc} (which {sys.argv[1]} imports)")
print("; ".join(dict.fromkeys(lacking)))
"""


@functools.lru_cache(maxsize=32)
def _missing_modules(python: str, modules: tuple[str, ...]) -> str:
    """"" when `python` starts, imports captrack's stage worker and finds every module of `modules` (found, not
    imported: vLLM's import takes tens of seconds), else what is wrong, as the end of a sentence."""
    try:
        done = subprocess.run([python, "-c", _PROBE, "captrack.pipeline.stage_job", *modules], capture_output=True,
                              text=True, timeout=120, env=foreign_env(os.environ, python), cwd="/")
    except (OSError, subprocess.SubprocessError) as exc:
        return f"does not start ({exc})"
    if done.returncode != 0:
        last = (done.stderr.strip() or "no output").splitlines()[-1]
        return f"does not start (exit {done.returncode}: {last})"
    lacking = done.stdout.strip()
    return f"cannot import {lacking}" if lacking else ""
