"""`captrack import` refuses what it cannot score faithfully, before any model work and writing nothing.

One identity per document (an ``id`` and a ``doc_id`` naming the same document are a conflict),
responses that are text (never a list, object or boolean scored as its repr), ids that are integers or
the task's own ids (never a truncated 0.9 or a boolean), a bounded read of zip members, model names
that cannot climb out of RUN_DIR, no temp folder left behind, and the hash of the bytes parsed.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from captrack.backends.recorded_answers import ReplayRecord
from captrack.cli import main
from captrack.errors import InputError
from captrack.imports import import_run, read_source
from captrack.imports.run import _match

TASK = "captrack_mmlu_pro_full"
DOCS = [{"id": f"mmlu_pro-{i}", "question": f"q{i}"} for i in range(3)]


def _jsonl(path: Path, rows: list[dict]) -> Path:  # type: ignore[type-arg]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_one_document_named_by_id_and_by_doc_id_is_a_conflict_naming_both() -> None:
    records = [ReplayRecord(TASK, "Answer: A", id="mmlu_pro-0"), ReplayRecord(TASK, "Answer: B", doc_id=0),
               ReplayRecord(TASK, "Answer: C", id="mmlu_pro-1")]
    with pytest.raises(InputError, match=r"more than once.*id mmlu_pro-0 and doc_id 0 \(document #0\)"):
        _match(TASK, DOCS, records, "id")
    matched = _match(TASK, DOCS, records[:1] + records[2:], "id")
    assert matched.indices == [0, 1] and matched.task_only == ["mmlu_pro-2"]


@pytest.mark.parametrize(("value", "said"), [
    (["A", "B"], "list"), ({"t": "2"}, "dict"), (True, "bool"), (7, "int"), (None, "null"),
])
def test_a_response_that_is_not_text_is_refused_not_scored_as_its_repr(value: object, said: str) -> None:
    from captrack.imports.reading import response_text

    with pytest.raises(InputError, match=said):
        response_text("f.jsonl:3", "response", value)


@pytest.mark.parametrize(("value", "said"), [(["A", "B"], "list"), ({"t": "2"}, "dict"), (False, "bool")])
def test_an_imported_file_with_a_non_text_response_is_refused(tmp_path: Path, value: object, said: str) -> None:
    src = _jsonl(tmp_path / "gens.jsonl", [{"id": "mmlu_pro-1", "response": value}])
    with pytest.raises(InputError, match=rf"gens.jsonl:1: 'response' is {said}"):
        read_source("jsonl", src, TASK)


def test_a_list_holding_one_string_is_that_string() -> None:
    from captrack.imports.reading import response_text

    assert response_text("f.jsonl:1", "outputs", ["Answer: B"]) == "Answer: B"


@pytest.mark.parametrize("value", [0.9, True, False, -1, "0.9", "x", [0]])
def test_a_doc_id_that_is_not_an_integer_is_refused_not_truncated(value: object) -> None:
    from captrack.imports.reading import doc_index

    with pytest.raises(InputError, match="doc_id"):
        doc_index("f.jsonl:2", value)


@pytest.mark.parametrize(("value", "index"), [(0, 0), (3.0, 3), ("12", 12)])
def test_integral_doc_ids_are_accepted(value: object, index: int) -> None:
    from captrack.imports.reading import doc_index

    assert doc_index("f.jsonl:2", value) == index


@pytest.mark.parametrize("value", [1.5, True, {"a": 1}])
def test_an_id_must_be_a_string_or_an_integer(value: object) -> None:
    from captrack.imports.reading import text_id

    with pytest.raises(InputError, match="'id'"):
        text_id("f.jsonl:2", value)
    assert text_id("w", 70) == "70" and text_id("w", "mmlu_pro-70") == "mmlu_pro-70"


def test_jsonl_rows_with_a_fractional_doc_id_or_a_dict_response_are_refused(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "gens.jsonl", [{"doc_id": 0.9, "response": "Answer: A"}])
    with pytest.raises(InputError, match=r"gens.jsonl:1: doc_id 0.9"):
        read_source("jsonl", src, TASK)
    src = _jsonl(tmp_path / "gens.jsonl", [{"id": "mmlu_pro-1", "response": {"t": "2"}}])
    with pytest.raises(InputError, match=r"gens.jsonl:1: 'response' is dict"):
        read_source("jsonl", src, TASK)


def test_a_small_zip_of_a_huge_member_is_refused_without_reading_it(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "model_outputs_m_5shots.zip"
    with zipfile.ZipFile(src, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("model_outputs_m_5shots.json", b"[" + b" " * (64 << 20) + b"]")
    assert src.stat().st_size < 1 << 20
    monkeypatch.setenv("CAPTRACK_IMPORT_MAX_MB", "8")
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="larger than the import limit of 8 MiB"):
            read_source("mmlu-pro", src, None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"{peak >> 20} MiB held to refuse a 64 MiB member"


def test_a_zip_member_whose_declared_size_lies_is_cut_at_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from captrack.imports.reading import read_zip_member

    src = tmp_path / "x.zip"
    with zipfile.ZipFile(src, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("x.json", b" " * (3 << 20))
    data = bytearray(src.read_bytes())  # rewrite the declared size (central directory and local header) to 10 bytes
    info = zipfile.ZipFile(io.BytesIO(bytes(data))).infolist()[0]
    real = info.file_size.to_bytes(4, "little")
    data = bytearray(bytes(data).replace(real, (10).to_bytes(4, "little")))
    src.write_bytes(bytes(data))
    monkeypatch.setenv("CAPTRACK_IMPORT_MAX_MB", "1")
    with pytest.raises(InputError, match=r"import limit|not a readable zip"):
        read_zip_member(src, ".json")


def test_a_zip_that_is_no_zip_is_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "model_outputs_m_5shots.zip"
    src.write_bytes(b"this is not a zip file")
    assert main(["import", str(src), "--format", "mmlu-pro", "--out", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert "not a readable zip archive" in err and "Traceback" not in err and not (tmp_path / "run").exists()


def test_non_utf8_lines_and_huge_csv_cells_and_corrupt_parquet_are_messages_naming_the_file() -> None:
    from captrack.imports.reading import SourceBytes, table_rows

    with pytest.raises(InputError, match=r"g.jsonl:2: not UTF-8"):
        list(table_rows(SourceBytes("g.jsonl", b'{"id": "a", "response": "x"}\n{"id": "\xff"}\n', ""), ".jsonl"))
    cell = "y" * 200_000
    rows = list(table_rows(SourceBytes("t.csv", f"id,outputs\na,{cell}\n".encode(), ""), ".csv"))
    assert rows == [("t.csv:2", {"id": "a", "outputs": cell})]
    with pytest.raises(InputError, match=r"t.parquet: not a readable Parquet file"):
        list(table_rows(SourceBytes("t.parquet", b"PAR1 garbage", ""), ".parquet"))


@pytest.mark.parametrize("name", ["..", ".", " .. "])
def test_a_model_name_that_would_write_outside_run_dir_is_refused(tmp_path: Path, name: str) -> None:
    src = _jsonl(tmp_path / "gens.jsonl", [{"id": "mmlu_pro-1", "response": "Answer: A"}])
    with pytest.raises(InputError, match="cannot name a folder inside RUN_DIR"):
        import_run(src, "jsonl", tmp_path / "out" / "run", task=TASK, name=name)
    assert not (tmp_path / "out").exists()


def test_a_source_file_named_dot_dot_needs_a_name(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "...jsonl", [{"id": "mmlu_pro-1", "response": "Answer: A"}])
    with pytest.raises(InputError, match=r"'\.\.'.*pass --name"):
        import_run(src, "jsonl", tmp_path / "out" / "run", task=TASK)
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob("results_*"))


def test_the_recorded_sha256_is_of_the_bytes_parsed(tmp_path: Path) -> None:
    rows = [{"id": "mmlu_pro-1", "response": "Answer: A"}]
    src = _jsonl(tmp_path / "gens.jsonl", rows)
    source = read_source("jsonl", src, TASK)
    assert source.sha256 == hashlib.sha256(src.read_bytes()).hexdigest()


def test_temp_folders_of_killed_imports_are_removed_by_the_next_one(tmp_path: Path) -> None:
    from captrack.imports.run import clean_stale_imports

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / ".run.import-abc"
    stale.mkdir()
    (stale / ".captrack-import-owner").write_text(dead.stdout.strip())
    live = tmp_path / ".run.import-live"
    live.mkdir()
    (live / ".captrack-import-owner").write_text(str(os.getpid()))
    old_orphan = tmp_path / ".run.import-noowner"
    old_orphan.mkdir()
    os.utime(old_orphan, (1, 1))
    assert sorted(p.name for p in clean_stale_imports(tmp_path / "run")) == [".run.import-abc", ".run.import-noowner"]
    assert live.is_dir()
