"""The CapTrack mirror: offline build from the original files, layout, loader errors, revisions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from official_mirror import shared_data

from captrack.errors import InputError
from captrack.official.build import build_mirror
from captrack.official.configs import CONFIGS
from captrack.official.mirror import ROW_FIELDS, config_path, load_config, read_rows

NOT_BUILDABLE = {
    "eli5.subset", "livemathbench.full", "longbenchv2.full", "mnms.full", "popqa.subset", "qasper.citation",
    "ragtruth.subset", "ruler.4k", "ruler.32k", "structflowbench.turn2", "supergpqa.subset", "xtreme.subset",
}
needs_data = pytest.mark.skipif(shared_data() is None, reason="no shared data folder (../shared/data or $CAPTRACK_SHARED)")


def test_the_suite_has_the_37_configs_of_the_hub_dataset() -> None:
    assert sum(c.hub for c in CONFIGS.values()) == 37
    assert [c.name for c in CONFIGS.values() if not c.hub] == ["mmlu_pro.full"]  # built offline only
    assert {c.task for c in CONFIGS.values()} >= {"captrack_gsm8k_table_schema", "captrack_mtbench_turn2", "captrack_ruler_32k"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:  # type: ignore[type-arg]
    source = shared_data()
    assert source is not None
    root = tmp_path_factory.mktemp("mirror")
    return root, {r.config: r for r in build_mirror(source, root)}


@needs_data
def test_build_reports_what_it_could_not_build_and_why(built: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    root, results = built
    assert {name for name, r in results.items() if not r.built} == NOT_BUILDABLE
    assert all("no public copy" in results[name].reason for name in NOT_BUILDABLE)
    manifest = json.loads((root / "manifest.json").read_text())
    assert manifest["configs"]["popqa.subset"]["reason"] and manifest["configs"]["gsm8k.subset"]["rows"] == 500
    with pytest.raises(InputError, match=r"popqa.subset is not in the CapTrack data mirror.*no public copy of PopQA"):
        load_config("popqa.subset", data_dir=str(root))


@needs_data
def test_layout_fields_sizes_and_revision(built: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    root, results = built
    for name, result in results.items():
        if not result.built:
            continue
        assert config_path(root, name) == root / "data" / name / "data.parquet"
        rows = read_rows(root, name)
        config = CONFIGS[name]
        assert len(rows) == result.rows and (config.size is None or len(rows) <= config.size)
        assert set(ROW_FIELDS) <= set(rows[0]) and {r["revision"] for r in rows} == {result.revision}
        assert len({r["id"] for r in rows}) == len(rows), f"{name}: duplicate ids"


@needs_data
def test_build_is_deterministic(built: tuple[Path, dict], tmp_path: Path) -> None:  # type: ignore[type-arg]
    source = shared_data()
    assert source is not None
    again = {r.config: r.revision for r in build_mirror(source, tmp_path, ["gsm8k.subset", "bfcl.subset"])}
    assert again == {name: built[1][name].revision for name in again}


@needs_data
def test_adapted_forms_keep_the_item_and_change_the_form(built: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    import jsonschema

    root, _ = built
    plain = {r["id"]: r for r in read_rows(root, "mmlu_pro.subset")}
    rephrased = read_rows(root, "mmlu_pro.rephrased")
    assert {r["id"] for r in rephrased} == set(plain)
    moved = 0
    for row in rephrased:
        original = plain[row["id"]]
        gold_text = original["choices"][ord(original["gold"]) - ord("A")]
        assert row["choices"][ord(row["gold"]) - ord("A")] == gold_text and row["prompt"] != original["prompt"]
        moved += row["gold"] != original["gold"]
    assert moved > len(rephrased) / 2
    for name in ("gsm8k.schema", "gsm8k.table_schema", "mmlu_pro.schema", "mmlu_pro.table_schema"):
        for row in read_rows(root, name)[:20]:
            schema = json.loads(row["schema"])
            jsonschema.Draft202012Validator.check_schema(schema)
            assert json.dumps(schema, indent=2) in row["prompt"]


def test_loader_without_a_mirror_names_the_variable_and_the_build_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAPTRACK_DATA_DIR", raising=False)
    with pytest.raises(InputError, match=r"CAPTRACK_DATA_DIR.*captrack data build --sources"):
        load_config("gsm8k.subset")


def test_a_pinned_revision_must_match(tmp_path: Path) -> None:
    from official_mirror import write_examples

    write_examples(tmp_path)
    assert load_config("popqa.subset", data_dir=str(tmp_path))["train"][0]["revision"] == "example-1"
    with pytest.raises(InputError, match=r"pins metadata\.dataset_revision hub-abc"):
        load_config("popqa.subset", data_dir=str(tmp_path), dataset_revision="hub-abc")


def test_build_refuses_a_missing_source_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is not a folder of benchmark files"):
        build_mirror(tmp_path / "nowhere", tmp_path / "out")


def test_missing_source_files_are_reported_not_raised(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    results = build_mirror(tmp_path / "src", tmp_path / "out", ["gsm8k.subset"])
    assert not results[0].built and "gsm8k/test.jsonl is missing" in results[0].reason


@needs_data
def test_cli_build_prints_built_and_not_built(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from captrack.cli import main

    source = shared_data()
    code = main(["data", "build", "--sources", str(source), "--out", str(tmp_path), "--config", "gsm8k.subset", "--config", "popqa.subset"])
    out = capsys.readouterr().out
    assert code == 0 and (tmp_path / "data" / "gsm8k.subset" / "data.parquet").is_file()
    assert "built      gsm8k.subset" in out and "not built  popqa.subset" in out and "1 of 2 configs built" in out


def test_hub_mirror_offline_says_to_build_instead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from captrack.official.hub import mirror_hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InputError, match=r"cannot download tri-fair-lab/captrack.*captrack data build --sources"):
        mirror_hub(tmp_path)
    assert not (tmp_path / "manifest.json").exists()


@needs_data
def test_full_subset_runs_the_whole_source_where_the_build_has_it(tmp_path: Path) -> None:
    source = shared_data()
    assert source is not None
    results = build_mirror(source, tmp_path, ["boolq.subset", "humaneval.full"], full=True)
    assert [(r.config, r.rows) for r in results] == [("boolq.subset", 500), ("boolq.subset (full)", 3270), ("humaneval.full", 164)]
    assert load_config("boolq.subset", data_dir=str(tmp_path))["train"].num_rows == 500
    assert load_config("boolq.subset", data_dir=str(tmp_path), subset="full")["train"].num_rows == 3270
    assert load_config("humaneval.full", data_dir=str(tmp_path), subset="full")["train"].num_rows == 164  # already whole
    build_mirror(source, tmp_path / "sampled", ["boolq.subset"])
    with pytest.raises(InputError, match="--full"):
        load_config("boolq.subset", data_dir=str(tmp_path / "sampled"), subset="full")
    with pytest.raises(InputError, match="not one of"):
        load_config("boolq.subset", data_dir=str(tmp_path), subset="everything")
