"""A variant read a few tasks at a time (captrack.compare.pair_reads.CHUNK_ROWS) gives the same files as read whole.

The golden fixture (two variants, two replicates, a multiple-choice task, generated-answer tasks, NaN items) is
compared twice: once with every variant one chunk, once with every task a chunk of its own; every file compare
writes must be the same bytes, and the contract files the pinned ones.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from captrack.cli import main
from captrack.compare import pair_reads


def _golden() -> object:
    """tests/analysis/test_golden_outputs.py (its fixture and pinned files), loaded by path."""
    path = Path(__file__).with_name("test_golden_outputs.py")
    spec = importlib.util.spec_from_file_location("_golden_fixture", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _compare(runs: dict[str, Path], out: Path, extra: list[str]) -> dict[str, bytes]:
    code = main(["compare", "--base", str(runs["base"]), "--variant", f"sft={runs['sft']}:SFT",
                 "--variant", f"rl={runs['rl']}:RL", "--out", str(out), "--bootstrap", "200", "--seed", "3", *extra])
    assert code == 0
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}


@pytest.mark.parametrize("extra", [[], ["--allow-partial"]])
def test_chunked_variants_write_the_same_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str]) -> None:
    golden = _golden()
    runs = golden._write_all(tmp_path / "runs")  # type: ignore[attr-defined]
    whole = _compare(runs, tmp_path / "whole", extra)
    monkeypatch.setattr(pair_reads, "CHUNK_ROWS", 1)  # every task a chunk of its own
    chunked = _compare(runs, tmp_path / "chunked", extra)
    assert sorted(chunked) == sorted(whole)
    differing = [name for name in whole if whole[name] != chunked[name]]
    assert not differing, f"chunked compare wrote different {differing}"
    for name in golden.CONTRACT:  # type: ignore[attr-defined]
        pinned = (golden.GOLDEN / name).read_text()  # type: ignore[attr-defined]
        assert golden._canonical(chunked[name].decode()) == golden._canonical(pinned), f"{name} changed"  # type: ignore[attr-defined]
