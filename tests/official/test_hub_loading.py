"""Official tasks read the hub dataset through the Hugging Face cache when no mirror is set (no network here)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from official_mirror import write_examples

from captrack.errors import DataUnavailableError
from captrack.official.availability import data_status
from captrack.official.hub import HUB_REVISION, load_hub_config
from captrack.official.tasks import load

COMMIT = "0123456789abcdef0123456789abcdef01234567"  # a fake commit of the fake hub repository below


@pytest.fixture()
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An offline Hugging Face cache holding a repository laid out like tri-fair-lab/captrack at `main`."""
    from huggingface_hub import constants

    hub_like = tmp_path / "hub-repo"  # data/<config>/data.parquet, as on the hub
    write_examples(hub_like)
    repo = tmp_path / "cache" / "datasets--tri-fair-lab--captrack"
    shutil.copytree(hub_like / "data", repo / "snapshots" / COMMIT / "data")
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / HUB_REVISION).write_text(COMMIT)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.delenv("CAPTRACK_DATA_DIR", raising=False)
    return tmp_path / "cache"


def test_without_a_mirror_a_task_reads_the_cached_hub_file_and_records_the_commit(hub_cache: Path) -> None:
    rows = load(config="popqa.subset")["train"]
    assert len(rows) == 1 and rows[0]["config"] == "popqa.subset"
    assert rows[0]["revision"] == f"hub-{COMMIT}"  # the resolved commit, not "main", lands in every samples line
    assert data_status({"config": "popqa.subset", "dataset": "tri-fair-lab/captrack"}).source == "hub cache"


def test_metadata_dataset_revision_selects_the_hub_revision(hub_cache: Path) -> None:
    rows = load_hub_config("popqa.subset", dataset_revision=f"hub-{COMMIT}")["train"]
    assert rows[0]["revision"] == f"hub-{COMMIT}"
    with pytest.raises(DataUnavailableError, match=r"names a locally built mirror.*CAPTRACK_DATA_DIR"):
        load_hub_config("popqa.subset", dataset_revision="local-1-abc")


def test_offline_and_not_cached_says_how_to_get_the_data(hub_cache: Path) -> None:
    status = data_status({"config": "gsm8k.nonexistent"})
    assert status.needs_data and not status.available
    with pytest.raises(DataUnavailableError, match=r"gsm8k.nonexistent.*CAPTRACK_DATA_DIR.*captrack data build"):
        load(config="gsm8k.nonexistent")


def test_a_mirror_wins_over_the_hub(hub_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_examples(tmp_path / "mirror")
    monkeypatch.setenv("CAPTRACK_DATA_DIR", str(tmp_path / "mirror"))
    assert load(config="popqa.subset")["train"][0]["revision"] == "example-1"
    assert data_status({"config": "popqa.subset"}).source == f"mirror {tmp_path / 'mirror'}"
