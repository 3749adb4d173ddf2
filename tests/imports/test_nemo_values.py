"""`captrack import --format nemo` checks the bundle's numbers before writing: ``n_results`` is a count however it is
spelled ("20", 20.0) and the truncation check applies to it; a ``problem_idx`` or ``repeat`` the store cannot hold is
refused at import, in one line, instead of failing at ingest.

The benchmark folders here are written by hand with the few keys the reader uses (eval-*.json: benchmark.name,
config.model, n_results; results.jsonl: problem_idx, repeat, reward): NeMo Evaluator's own writer needs Python 3.12
(test_from_nemo.py), and these are values its writer would not produce.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from captrack.cli import main
from captrack.errors import InputError
from captrack.imports import import_run

TASK = "captrack_tool_arith"


def _bundle(folder: Path, n_results: Any, indices: list[int], repeat: int = 0) -> Path:
    folder.mkdir(parents=True)
    bundle = {"benchmark": {"name": f"lm-eval://{TASK}"}, "config": {"model": "org/m"}, "n_results": n_results}
    (folder / "eval-1.json").write_text(json.dumps(bundle), encoding="utf-8")
    rows = [{"problem_idx": i, "repeat": repeat, "reward": float(i % 2), "model_response": str(i)} for i in indices]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


@pytest.mark.parametrize("n_results", ["20", 20.0, 20])
def test_n_results_however_spelled_catches_a_truncated_results_file(tmp_path: Path, n_results: Any) -> None:
    src = _bundle(tmp_path / "bench", n_results, list(range(19)))
    with pytest.raises(InputError, match=r"19 results, but its bundle says n_results 20; the file is truncated"):
        import_run(src, "nemo", tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("n_results", ["20", 20.0])
def test_n_results_however_spelled_matches_a_whole_file(tmp_path: Path, n_results: Any) -> None:
    result = import_run(_bundle(tmp_path / "bench", n_results, list(range(20))), "nemo", tmp_path / "out")
    assert result.matched[0].indices == list(range(20))


@pytest.mark.parametrize("n_results", ["twenty", 20.5, True, -1, [20]])
def test_an_n_results_that_is_no_count_is_refused_in_one_line(tmp_path: Path, n_results: Any) -> None:
    src = _bundle(tmp_path / "bench", n_results, list(range(20)))
    with pytest.raises(InputError, match=r"eval-1\.json: n_results .* is not a count") as caught:
        import_run(src, "nemo", tmp_path / "out")
    assert "\n" not in str(caught.value) and not (tmp_path / "out").exists()


@pytest.mark.parametrize(("indices", "repeat", "said"), [
    ([0, 10**30], 0, r"results\.jsonl:2: problem_idx 10{30} is larger than captrack's store holds \(at most 9223372036854775807\)"),
    ([0, 1], 2**40, r"results\.jsonl:1: repeat 1099511627776 is larger than captrack's store holds \(at most 2147483646\)"),
])
def test_an_index_the_store_cannot_hold_is_refused_at_import(tmp_path: Path, indices: list[int], repeat: int,
                                                              said: str) -> None:
    src = _bundle(tmp_path / "bench", len(indices), indices, repeat)
    with pytest.raises(InputError, match=said) as caught:
        import_run(src, "nemo", tmp_path / "out")
    assert "\n" not in str(caught.value) and not (tmp_path / "out").exists()


def test_the_largest_problem_idx_the_store_holds_imports_and_ingests(tmp_path: Path) -> None:
    src = _bundle(tmp_path / "bench", 2, [0, 2**63 - 1])
    import_run(src, "nemo", tmp_path / "run")
    assert main(["ingest", str(tmp_path / "run"), "--store", str(tmp_path / "s.duckdb"), "--name", "m"]) == 0
