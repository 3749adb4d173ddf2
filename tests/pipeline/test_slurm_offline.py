"""An offline sweep end to end on the single-node Slurm cluster (issue 55: offline clusters).

The checkpoints are named by hub ids, as a lab's experiment names them; the hub is offline for the driver and, through
the environment Slurm passes on, for every job (``HF_HUB_OFFLINE=1``, a Hugging Face home of this test's own, no data
mirror). Unprepared, `captrack run` refuses in one line naming each model and ``--prepare``, and submits nothing.
Once the models are in that Hugging Face cache (what ``--prepare`` fetches on a host with network: here the two tiny
models are written into huggingface_hub's cache layout, since this machine reaches no hub), ``--prepare`` finds nothing
left and the same sweep runs through Slurm to its board, each job loading its model from the cache by its hub id.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from slurmcluster import ON_SLURM, TWO_TINY_CHECKPOINTS
from tinymodel import build_tiny_model

pytestmark = [*ON_SLURM, pytest.mark.timeout(1200)]

CAPTRACK = str(Path(sys.executable).with_name("captrack"))
REPOS = {"base": "captrack-test/offline-tiny-a", "other": "captrack-test/offline-tiny-b"}
_HUB_VARIABLES = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "HF_DATASETS_CACHE", "CAPTRACK_DATA_DIR",
                  "HF_ENDPOINT")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("offline-models")
    texts = ["What is the capital of France? Answer: Paris", "Question: the opposite of hot is cold"] * 20
    return {name: build_tiny_model(root / name, texts, seed=seed) for seed, name in enumerate(REPOS)}


def _offline_env(hf_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _HUB_VARIABLES}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=str(hf_home),
               TOKENIZERS_PARALLELISM="false", COLUMNS="200")
    return env


def _run(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CAPTRACK, "run", "exp.yaml", *args], cwd=folder, capture_output=True, text=True,
                          timeout=900, env=env)


def _cache_as_downloaded(hf_home: Path, repo: str, model: Path) -> None:
    """`model`'s files as huggingface_hub's snapshot_download leaves repository `repo` in the cache of `hf_home`."""
    entry = hf_home / "hub" / f"models--{repo.replace('/', '--')}"
    snapshot = entry / "snapshots" / ("0" * 40)
    shutil.copytree(model, snapshot)
    (entry / "refs").mkdir()
    (entry / "refs" / "main").write_text(snapshot.name)


def _jobs_from(folder: Path) -> list[str]:
    out = subprocess.run(["squeue", "-h", "-r", "-o", "%i|%Z"], capture_output=True, text=True, check=True).stdout
    return [line.split("|")[0] for line in out.splitlines() if line.endswith(f"|{folder}")]


def test_an_unprepared_offline_sweep_is_refused_and_a_prepared_one_runs_through_slurm(
        models: dict[str, Path], tmp_path: Path) -> None:
    hf_home = tmp_path / "hf"
    (hf_home / "hub").mkdir(parents=True)
    folder = tmp_path / "sweep"
    folder.mkdir()
    (folder / "exp.yaml").write_text(TWO_TINY_CHECKPOINTS.format(**REPOS, trained=""))
    env = _offline_env(hf_home)

    refused = _run(folder, env)
    said = refused.stderr.strip()
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "\n" not in said and all(repr(repo) in said for repo in REPOS.values()), said
    assert "--prepare" in said and "nothing was submitted" in said, said
    assert not (folder / "work" / "jobs").exists() and _jobs_from(folder) == []

    for name, repo in REPOS.items():
        _cache_as_downloaded(hf_home, repo, models[name])
    prepared = _run(folder, env, "--prepare")
    assert prepared.returncode == 0, prepared.stdout + prepared.stderr
    assert "need no network" in prepared.stdout and all(f"prepared: model {r}" in prepared.stdout for r in REPOS.values())

    done = _run(folder, env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (folder / "board" / "index.html").is_file()
    logs = sorted((folder / "work" / "slurm").glob("*_log.out"))
    assert logs, "no Slurm job ran"
    for name, repo in REPOS.items():
        (results,) = (folder / "work" / "runs" / name).rglob("results_*.json")
        assert json.loads(results.read_text())["config"]["model_args"]["pretrained"] == repo  # loaded by its hub id
