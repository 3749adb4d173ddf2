"""A variant's labels are one record (captrack.labels.VariantLabels), typed once at ingest (issue 41)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from captrack.cli import main

PACKAGE = Path(__file__).resolve().parents[1] / "captrack"


def _carriers() -> list[str]:
    """Every class of the package whose body declares an ``algorithm`` attribute (field, annotation or property)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                named = (item.target.id if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) else
                         item.name if isinstance(item, ast.FunctionDef) else
                         next((t.id for t in item.targets if isinstance(t, ast.Name)), None) if isinstance(item, ast.Assign)
                         else None)
                if named == "algorithm":
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.name}")
    return found


def test_exactly_one_class_carries_a_variants_algorithm_label() -> None:
    assert _carriers() == ["captrack/labels.py:VariantLabels"]


def _ingested(tmp_path: Path) -> Path:
    from fakeruns import FakeTask, write_run

    store = tmp_path / "s.duckdb"
    rng = __import__("random").Random(7)
    for name, p in (("base", 0.7), ("sft", 0.5)):
        write_run(tmp_path / name, name, [FakeTask("captrack_probe_c1_facts", {"acc": [int(rng.random() < p) for _ in range(80)]})])
    assert main(["ingest", str(tmp_path / "base"), "--store", str(store), "--name", "base"]) == 0
    assert main(["ingest", str(tmp_path / "sft"), "--store", str(store), "--name", "sft", "--algorithm", "SFT"]) == 0
    return store


def test_compare_reads_the_algorithm_recorded_at_ingest(tmp_path: Path) -> None:
    store = _ingested(tmp_path)
    for out, variant in (("typed", "sft:SFT"), ("stored", "sft")):
        assert main(["compare", "--store", str(store), "--base", "base", "--variant", variant, "--bootstrap", "50",
                     "--out", str(tmp_path / out)]) == 0
    typed, stored = ((tmp_path / out / "drift.csv").read_bytes() for out in ("typed", "stored"))
    assert typed == stored and b",SFT," in stored


def test_a_conflicting_algorithm_is_refused_naming_both(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = _ingested(tmp_path)
    capsys.readouterr()
    assert main(["compare", "--store", str(store), "--base", "base", "--variant", "sft:DPO",
                 "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "'SFT'" in err and "'DPO'" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_the_store_gives_back_every_label_typed_at_ingest(tmp_path: Path) -> None:
    from captrack.results.store import Store
    from captrack.results.stored_labels import stored_labels

    store = _ingested(tmp_path)
    assert main(["ingest", str(tmp_path / "sft"), "--store", str(store), "--name", "sft", "--algorithm", "SFT",
                 "--family", "smollm2", "--size", "135M", "--data", "tulu"]) == 0
    with Store(str(store), read_only=True) as opened:
        labels = stored_labels(opened, "sft")
    assert (labels.name, labels.algorithm, labels.family, labels.size, labels.data) == ("sft", "SFT", "smollm2", "135M", "tulu")
