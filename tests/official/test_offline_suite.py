"""The offline suite: `captrack tasks --available` selects exactly what can run here; the rest is refused in one line."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from official_mirror import shared_data, write_examples

from captrack.cli import main
from captrack.official.availability import data_status

ROOT = Path(__file__).resolve().parents[2]
SUITE = sorted(f"captrack_{p.stem}" for p in (ROOT / "tasks").glob("*/*.yaml"))
PROBES = [t for t in SUITE if t.startswith("captrack_probe_")]


def _available(monkeypatch: pytest.MonkeyPatch, mirror: Path) -> list[str]:
    monkeypatch.setenv("CAPTRACK_DATA_DIR", str(mirror))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["tasks", "--available"]) == 0
    return out.getvalue().strip().split(",")


def test_available_is_the_probes_plus_the_configs_the_mirror_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    write_examples(tmp_path / "mirror")
    held = _available(monkeypatch, tmp_path / "mirror")
    assert set(PROBES) < set(held) and len(held) > len(PROBES)
    shutil.rmtree(tmp_path / "mirror" / "data" / "popqa.subset")  # a config the mirror no longer holds
    fewer = _available(monkeypatch, tmp_path / "mirror")
    assert set(held) - set(fewer) == {"captrack_popqa_subset"}


def test_an_unreachable_hub_is_no_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not offline by setting, but the hub does not answer: the data is missing now, not after minutes of retries."""
    from huggingface_hub import constants

    from captrack.official import hub

    monkeypatch.delenv("CAPTRACK_DATA_DIR", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing listens
    monkeypatch.setattr(hub, "_REACHABLE", {})
    status = data_status({"config": "gsm8k.subset"})
    assert not status.available and status.source == "hub unreachable and not in the Hugging Face cache"


def _lm_eval(args: list[str], cwd: Path, mirror: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "CAPTRACK_DATA_DIR": str(mirror)}
    script = Path(sys.executable).parent / "lm_eval"  # the console script: stock lm-eval, captrack's .pth hook installed
    return subprocess.run([str(script), *args], capture_output=True, text=True, timeout=600, cwd=cwd, env=env)


def test_captrack_glob_refused_in_one_line_naming_the_mirror_and_every_missing_task(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mirror = tmp_path / "mirror"
    write_examples(mirror)  # the configs that cannot be built offline: the others are missing here
    missing = sorted(set(SUITE) - set(_available(monkeypatch, mirror)))
    out = _lm_eval(["--model", "dummy", "--tasks", "captrack_*", "--limit", "1"], tmp_path, mirror)
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert out.returncode == 2 and "Traceback" not in out.stderr and len(errors) == 1, out.stderr[-2000:]
    assert errors[0].startswith(f"error: {len(missing)} selected CapTrack task(s) are not in the mirror {mirror} (CAPTRACK_DATA_DIR")
    assert f": {', '.join(missing)}. Fix: run --tasks \"$(captrack tasks --available)\"" in errors[0]


@pytest.mark.slow
@pytest.mark.skipif(shared_data() is None, reason="needs the original benchmark files in ../shared/data")
def test_stock_lm_eval_runs_what_the_shared_data_mirror_holds(tmp_path: Path) -> None:
    """The README's offline path: build the mirror from ../shared/data, run what it holds with stock lm_eval."""
    mirror = tmp_path / "mirror"
    assert main(["data", "build", "--sources", str(shared_data()), "--out", str(mirror)]) == 0
    env = {**os.environ, "CAPTRACK_DATA_DIR": str(mirror)}
    listed = subprocess.run([sys.executable, "-m", "captrack.cli", "tasks", "--available"], capture_output=True,
                            text=True, check=True, env=env).stdout.strip()
    probes = len(list((Path(__file__).resolve().parents[2] / "tasks").glob("probe_*/*.yaml")))
    assert len(listed.split(",")) == probes + 25  # every probe + the 25 tasks of the 26 configs built offline (mmlu_pro.full is opt-in)
    ran = _lm_eval(["--model", "dummy", "--tasks", listed, "--limit", "2", "--output_path", str(tmp_path / "out")], tmp_path, mirror)
    assert ran.returncode == 0, ran.stderr[-3000:]
    refused = _lm_eval(["--model", "dummy", "--tasks", "captrack_*", "--limit", "1"], tmp_path, mirror)
    assert refused.returncode == 2
    assert f"error: 12 selected CapTrack task(s) are not in the mirror {mirror}" in refused.stderr
