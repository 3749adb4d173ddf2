"""A comparison read by worker processes (captrack.compare.readers) equals the one read in one process."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fakeruns import FakeTask, write_run

from captrack.analysis.comparison import CompareOptions
from captrack.compare.inputs import PARALLEL_VARIANTS, reader_count
from captrack.compare.use_case import compare
from captrack.errors import UnknownNameError
from captrack.labels import VariantLabels
from captrack.results.runfiles import discover_runs
from captrack.results.store import Store

VARIANTS = ["sft", "dpo", "rl"]


def _tasks(rng: np.random.Generator, p: float) -> list[FakeTask]:
    n = 40
    lls = {i: list(rng.normal(-2, 1, 4)) for i in range(n)}
    return [
        FakeTask("captrack_mmlu_pro_subset", {"acc": list((rng.random(n) < p).astype(float))}, choice_lls=lls),
        FakeTask("captrack_probe_c1_facts", {"exact_match": list((rng.random(n) < p).astype(float))},
                 output_type="generate_until", responses={i: f"answer {rng.integers(3)}" for i in range(n)}),
    ]


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("readers")
    rng = np.random.default_rng(3)
    path = root / "store.duckdb"
    with Store(path) as store:
        for name, p in [("base", 0.6), ("sft", 0.5), ("dpo", 0.7), ("rl", 0.4)]:
            write_run(root / "runs", name, _tasks(rng, p))
            store.ingest(discover_runs(root / "runs" / name), VariantLabels(name=name))
    return path


def _compare(path: Path, workers: str, monkeypatch: pytest.MonkeyPatch, names: list[str] = VARIANTS):
    monkeypatch.setenv("CAPTRACK_WORKERS", workers)
    loaded: list[str] = []
    with Store(path, read_only=True) as store:
        assert reader_count(store, len(names)) == min(int(workers), len(names))
        options = CompareOptions(bootstrap=50, drill_limit=5, pair_deltas=True)
        result = compare(store, "base", [VariantLabels(name=n, algorithm="SFT") for n in names], options,
                         progress=lambda name, rows: loaded.append(name))
    return result, loaded


def test_workers_give_the_same_comparison(store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one, order_one = _compare(store_path, "1", monkeypatch)
    two, order_two = _compare(store_path, "2", monkeypatch)
    assert order_one == order_two == VARIANTS  # each variant reported once, in order
    for name in ("drift", "transitions", "capabilities", "replicates", "pair_deltas", "power"):
        pd.testing.assert_frame_equal(getattr(one, name), getattr(two, name), obj=name)
    pd.testing.assert_frame_equal(one.distribution_items.to_frame(), two.distribution_items.to_frame())
    assert not one.transitions.empty and not one.distribution_items.empty
    assert one.warnings == two.warnings and one.counts == two.counts
    assert one.item_texts == two.item_texts and one.item_texts  # drill-down texts read by the workers
    assert one.transitions["answer_churn"].notna().any()  # churn answers read by the workers too


def test_a_worker_error_reaches_the_caller_as_it_is(store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    messages = []
    for workers in ("1", "2"):
        with pytest.raises(UnknownNameError) as raised:
            _compare(store_path, workers, monkeypatch, ["sft", "nope"])
        messages.append((str(raised.value), raised.value.name, raised.value.suggestions))
    assert messages[0] == messages[1] and "nope" in messages[0][0]


def test_unknown_name_error_pickles() -> None:
    error = UnknownNameError("model in the store", "bsae", ["base", "sft"])
    again = pickle.loads(pickle.dumps(error))
    assert (str(again), again.kind, again.name, again.suggestions) == (str(error), "model in the store", "bsae", ["base"])


def test_who_reads_with_workers(store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAPTRACK_WORKERS", raising=False)
    with Store(store_path, read_only=True) as store:
        assert reader_count(store, 3) == 1  # a small store: one process
        assert reader_count(store, 1) == 1
        many = reader_count(store, PARALLEL_VARIANTS)
        assert 1 <= many <= PARALLEL_VARIANTS
        monkeypatch.setenv("CAPTRACK_WORKERS", "4")
        assert reader_count(store, 3) == 3
    with Store(":memory:") as memory:
        assert reader_count(memory, 50) == 1  # nothing another process could open


def test_a_store_a_worker_cannot_open_is_refused_as_it_is(tmp_path: Path) -> None:
    from captrack.compare.readers import read_in_workers
    from captrack.errors import InputError
    from captrack.taxonomy import load_taxonomy

    missing = tmp_path / "nowhere.duckdb"
    with pytest.raises(InputError, match="no such store"):
        list(read_in_workers(str(missing), "base", [VariantLabels(name="a"), VariantLabels(name="b")], CompareOptions(), load_taxonomy(), 2))


def test_a_worker_that_dies_is_reported_with_its_output(store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that exits without sending its pairs (here: a module that cannot read the job) stops the comparison
    with its exit status and the end of what it printed; nothing is returned half-read."""
    import captrack.compare.readers as readers
    from captrack.errors import CaptrackError
    from captrack.taxonomy import load_taxonomy

    monkeypatch.setattr(readers, "WORKER_MODULE", "json.tool")
    with pytest.raises(CaptrackError, match=r"failed \(exit 1\)") as raised:
        list(readers.read_in_workers(str(store_path), "base", [VariantLabels(name=v) for v in VARIANTS], CompareOptions(),
                                     load_taxonomy(), 2))
    assert "Expecting value" in str(raised.value) or "decode" in str(raised.value)


def test_a_worker_that_dies_mid_pair_is_reported_not_unpickled(tmp_path: Path, store_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import captrack.compare.readers as readers
    from captrack.errors import CaptrackError
    from captrack.taxonomy import load_taxonomy

    (tmp_path / "half_worker.py").write_text(
        "import sys\nfrom pathlib import Path\n"
        "Path(sys.argv[2]).write_bytes((1000).to_bytes(8, 'little') + b'abc')\n"
        "print('stopped half way', file=sys.stderr)\nsys.exit(7)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setattr(readers, "WORKER_MODULE", "half_worker")
    with pytest.raises(CaptrackError, match=r"(?s)failed \(exit 7\).*stopped half way"):
        list(readers.read_in_workers(str(store_path), "base", [VariantLabels(name=v) for v in VARIANTS], CompareOptions(),
                                     load_taxonomy(), 2))
