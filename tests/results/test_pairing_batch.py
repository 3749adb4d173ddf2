"""Variants paired a batch at a time (captrack.results.pairing_batch) are paired exactly as each alone: the same items
(values, order and column types), warnings, problems, NaN counts and seeds, or the same error, raised for the same
variant; compare reading a batch writes what it writes reading each variant alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from fakeruns import FakeTask, write_run

from captrack.compare import pair_reads
from captrack.labels import VariantLabels
from captrack.results.pairing import PairedItems, Pairing, base_task_rows
from captrack.results.pairing_batch import PairingBatch
from captrack.results.runfiles import discover_runs
from captrack.results.store import Store
from captrack.taxonomy import load_taxonomy

FACTS = "captrack_probe_c1_facts"
STYLE = "captrack_probe_w3_style"
VARIANTS = ["clean", "mc_only", "fewer", "unscored", "seed", "missing", "o'brien", "other"]


def _tasks(acc: list, words: list | None) -> list[FakeTask]:
    tasks = [FakeTask(FACTS, {"acc": acc})]
    if words is not None:
        tasks.append(FakeTask(STYLE, {"verbosity": words}, output_type="generate_until"))
    return tasks


def _store(tmp_path: Path) -> Path:
    """A base and variants of every kind pairing meets: clean; without the generated task (no missing option count,
    one metric logged only by the base); fewer documents; unscored values; one run of another seed; a quote in its
    name; no task in common. "missing" is not in the store (an error, raised when it is reached)."""
    runs = {
        "base": (_tasks([1, 1, 0, 0, 1, 0], [10, 20, 30, 40, 50, 60]), 0),
        "clean": (_tasks([1, 0, 0, 1, 1, 1], [12, 20, 33, 40, 50, 61]), 0),
        "mc_only": (_tasks([0, 1, 0, 1, 1, 0], None), 0),
        "fewer": (_tasks([1, 0, 1, 1], [10, 20, 30, 40]), 0),
        "unscored": (_tasks([1, None, 0, None, 1, 0], [10, None, 30, 40, 50, 60]), 0),
        "seed": (_tasks([1, 1, 1, 0, 1, 0], [10, 21, 30, 40, 52, 60]), 7),
        "o'brien": (_tasks([0, 0, 0, 0, 1, 1], [11, 20, 30, 40, 50, 60]), 0),
        "other": ([FakeTask("captrack_probe_h1_constraints", {"prompt_level_strict_acc": [1, 0, 1]},
                            output_type="generate_until")], 0),  # no task in common with the base
    }
    path = tmp_path / "store.duckdb"
    with Store(path) as store:
        for name, (tasks, seed) in runs.items():
            run = write_run(tmp_path / "runs" / name, name, tasks, seed=seed)
            store.ingest(discover_runs(run), VariantLabels(name=name))
    return path


def _outcome(make: object, rows: dict[str, int], max_rows: int) -> object:
    """Everything a pairing gives: its chunks' items, then finish()'s warnings, NaN counts and seeds (or its error)."""
    try:
        pairing = make() if callable(make) else make  # type: ignore[operator]
        assert isinstance(pairing, Pairing)
        chunks = list(pairing.chunks(max_rows, rows))
        whole: PairedItems = pairing.finish()
    except Exception as exc:  # the error itself is what is compared
        return (type(exc).__name__, str(exc))
    return ([c.items for c in chunks], [(c.replicates, c.seeds, c.warnings) for c in chunks],
            (whole.warnings, whole.nan_excluded, whole.seeds, whole.replicates, whole.keys.to_dict("list")))


def _same(alone: object, batched: object) -> None:
    assert type(alone) is type(batched)
    if isinstance(alone, tuple) and len(alone) == 3 and isinstance(alone[0], list):
        assert len(alone[0]) == len(batched[0])  # type: ignore[index]
        for a, b in zip(alone[0], batched[0], strict=True):  # type: ignore[index]
            pd.testing.assert_frame_equal(a, b, check_exact=True)  # dtypes included
        assert alone[1:] == batched[1:]  # type: ignore[index]
    else:
        assert alone == batched


@pytest.mark.parametrize("allow_partial", [False, True])
@pytest.mark.parametrize("max_rows", [1 << 17, 1])
def test_a_batch_pairs_each_variant_as_it_pairs_alone(tmp_path: Path, allow_partial: bool, max_rows: int) -> None:
    taxonomy = load_taxonomy()
    with Store(_store(tmp_path), read_only=True) as store:
        rows = base_task_rows(store, "base")
        alone = {v: _outcome(lambda v=v: Pairing(store, "base", v, taxonomy, allow_partial), rows, max_rows)
                 for v in VARIANTS}
        batch = PairingBatch(store, "base", VARIANTS, taxonomy, allow_partial)
        batched = {v: _outcome(lambda v=v: batch.pairing(v), rows, max_rows) for v in VARIANTS}
        batch.close()
    for variant in VARIANTS:
        _same(alone[variant], batched[variant])
    assert isinstance(alone["missing"], tuple) and alone["missing"][0] == "UnknownNameError"
    if not allow_partial:  # documents or metrics one side lacks stop the pairing
        assert alone["fewer"][0] == alone["mc_only"][0] == "MismatchError"  # type: ignore[index]
    elif max_rows > 1:  # without a missing option count, alone types it int32: the batch must type it so too
        assert str(alone["mc_only"][0][0]["n_choices"].dtype) == "int32"  # type: ignore[index]
        assert str(alone["clean"][0][0]["n_choices"].dtype) == "Int32"  # type: ignore[index]


def test_compare_reads_the_same_pairs_batched_or_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from captrack.analysis.comparison import CompareOptions
    from captrack.compare.texts import BaseTexts

    taxonomy, options = load_taxonomy(), CompareOptions(bootstrap=50, allow_partial=True)
    names = ["clean", "mc_only", "fewer", "unscored", "seed", "o'brien"]
    variants = [VariantLabels(name=n, algorithm="SFT") for n in names]
    with Store(_store(tmp_path), read_only=True) as store:
        def read() -> list[tuple[pd.DataFrame, list[str]]]:
            return [(p.paired.items, p.warnings) for p in pair_reads.read_pairs(
                store, "base", variants, options, taxonomy, BaseTexts(store.samples_files("base")))]
        batched = read()
        monkeypatch.setattr(pair_reads, "batch_sizes", lambda rows, n: 1)
        alone = read()
    for (a_items, a_warnings), (b_items, b_warnings) in zip(alone, batched, strict=True):
        pd.testing.assert_frame_equal(a_items, b_items, check_exact=True)
        assert a_warnings == b_warnings
