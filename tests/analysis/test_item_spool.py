"""The distribution items kept on disk per variant, and the analysis holding one variant's pair at a time."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fakeruns import FakeTask, write_run
from item_tables import diagnosed_items

from captrack.analysis.churn import choice_churn
from captrack.analysis.comparison import CompareOptions, analyse
from captrack.analysis.item_spool import DistributionItems
from captrack.analysis.types import CompareInput, PairInput
from captrack.compare.inputs import load_input
from captrack.labels import VariantLabels
from captrack.report.writer import write_contract_tables
from captrack.results.runfiles import discover_runs
from captrack.results.store import Store
from captrack.taxonomy import load_taxonomy

FACTS = "captrack_probe_c1_facts"


def test_parts_come_back_as_added_and_what_other_tables_read_is_kept() -> None:
    parts = [diagnosed_items("a", 60, 0), diagnosed_items("b", 45, 1)]
    spool = DistributionItems()
    assert spool.empty and spool.to_frame().empty
    for part in parts:
        spool.add(part)
    whole = pd.concat(parts, ignore_index=True)
    assert len(spool) == len(whole) and not spool.empty
    for got, want in zip(spool.frames(), parts, strict=True):
        pd.testing.assert_frame_equal(got, want)
    pd.testing.assert_frame_equal(spool.to_frame(), whole)
    assert spool.churn == choice_churn(whole)
    for (variant, task), values in spool.one_minus_bc.items():  # 1 − BC of the group's items, in doc_hash order
        rows = whole[(whole["variant"] == variant) & (whole["task"] == task)].sort_values("doc_hash", kind="stable")
        np.testing.assert_array_equal(values, 1.0 - rows["bhattacharyya"].to_numpy())
    forgotten = whole[whole["transition"] == "10"]
    assert spool.forgotten_kinds() == {(v, t, h): k for v, t, h, k in zip(
        forgotten["variant"], forgotten["task"], forgotten["doc_hash"], forgotten["forgetting_kind"], strict=True)}


@pytest.mark.parametrize("values", [
    ["b", "a", None, "é", "a", "Z", "ä", "b", float("nan"), "aa", "", "\U0001F600", "z"], ["only"], [],
    [f"{(i * 7919) % 1000:03d}-h" for i in range(500)]])
def test_doc_hashes_are_ordered_as_python_sorts_them(values: list[object]) -> None:
    """Arrow's ranks order the rows as pandas' sorted factorize codes do: text by code point, ties kept in row
    order (a stable argsort), missing values first."""
    from captrack.analysis.item_spool import _doc_hash_order

    column = pd.Series(values, dtype=object)
    codes = pd.factorize(column, sort=True)[0]
    np.testing.assert_array_equal(np.argsort(_doc_hash_order(column), kind="stable"), np.argsort(codes, kind="stable"))


def test_the_parts_are_written_as_one_table(tmp_path: Path) -> None:
    parts = [diagnosed_items("a", 60, 0), diagnosed_items("b", 45, 1)]
    spool = DistributionItems()
    for part in parts:
        spool.add(part)
    write_contract_tables(tmp_path / "spooled", {"items.csv": spool})
    write_contract_tables(tmp_path / "whole", {"items.csv": pd.concat(parts, ignore_index=True)})
    text = (tmp_path / "spooled" / "items.csv").read_text()
    assert text == (tmp_path / "whole" / "items.csv").read_text() and text.count("\nvariant,algorithm,") == 0


def _second_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer shares a spooled table of any size with a child process, as on a machine with two free cores."""
    import captrack.report.background as background
    import captrack.report.items_ahead as items_ahead

    monkeypatch.setattr(items_ahead, "SHARED_ROWS", 0)
    monkeypatch.setattr(items_ahead, "second_core_free", lambda since=None: True)
    monkeypatch.setattr(background, "usable_cores", lambda: 2)
    monkeypatch.delenv("CAPTRACK_WORKERS", raising=False)


@pytest.mark.parametrize("sizes", [(60, 45, 30, 52), (200, 10), (5, 5, 5)])
def test_later_parts_written_by_a_child_process_give_the_same_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sizes: tuple[int, ...]) -> None:
    parts = [diagnosed_items(f"v{i}", n, i) for i, n in enumerate(sizes)]
    spool = DistributionItems()
    for part in parts:
        spool.add(part)
    import captrack.report.writer as writer

    write_contract_tables(tmp_path / "alone", {"items.csv": spool})
    _second_core(monkeypatch)
    started: list[object] = []
    real = writer.in_background
    monkeypatch.setattr(writer, "in_background", lambda calls: started.append(calls) or real(calls))
    write_contract_tables(tmp_path / "shared", {"items.csv": spool})
    assert len(started) == 1  # the later parts' rows were written by the child
    assert (tmp_path / "shared" / "items.csv").read_bytes() == (tmp_path / "alone" / "items.csv").read_bytes()


@pytest.mark.parametrize(("cores", "free", "shared"), [(2, 2, True), (2, 1, False), (1, 1, False)])
def test_the_rows_are_shared_only_with_a_second_core_free(
        monkeypatch: pytest.MonkeyPatch, cores: int, free: int, shared: bool) -> None:
    """Two processes only where a second core is usable and not kept busy by other work right now."""
    import captrack.report.items_ahead as items_ahead
    from captrack.processes import ThreadPlan

    monkeypatch.delenv("CAPTRACK_WORKERS", raising=False)
    monkeypatch.setattr(items_ahead, "usable_cores", lambda: cores)
    monkeypatch.setattr(items_ahead, "plan_threads", lambda load=None: ThreadPlan(free, cores, float(cores - free), "test"))
    assert items_ahead.second_core_free() is shared


def test_a_child_process_that_fails_fails_the_write_and_leaves_no_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from captrack.analysis.item_spool import SpooledParts

    spool = DistributionItems()
    for i in range(3):
        spool.add(diagnosed_items(f"v{i}", 40, i))
    _second_core(monkeypatch)
    monkeypatch.setattr(DistributionItems, "spooled", lambda self, start: SpooledParts(str(tmp_path / "gone"), (0,)))
    with pytest.raises(FileNotFoundError, match="gone"):  # raised in the child, raised again here
        write_contract_tables(tmp_path / "out", {"items.csv": spool})
    assert not list((tmp_path / "out").iterdir())


def test_the_analysis_lets_each_pair_go_before_taking_the_next(tmp_path: Path) -> None:
    lls = {i: [-0.5, -1.0 - i, -2.0, -3.0] for i in range(6)}
    names = ["base", "v1", "v2", "v3", "v4"]
    for index, name in enumerate(names):
        acc = [1, 1, 0, 1, 0, 1] if name == "base" else [int((i + index) % 3 > 0) for i in range(6)]
        write_run(tmp_path / name, name, [FakeTask(FACTS, {"acc": acc}, choice_lls=lls)])
    store = Store()
    for name in names:
        store.ingest(discover_runs(tmp_path / name), VariantLabels(name=name))
    options = CompareOptions(bootstrap=50)
    read = load_input(store, "base", [VariantLabels(name=n, algorithm="SFT") for n in names[1:]], options, load_taxonomy())
    taken: list[weakref.ref[PairInput]] = []
    alive_when_taken: list[int] = []

    def watched(pairs: Iterator[PairInput]) -> Iterator[PairInput]:
        for pair in pairs:
            gc.collect()
            alive_when_taken.append(sum(ref() is not None for ref in taken[:-1]))  # all but the one just analysed
            taken.append(weakref.ref(pair))
            yield pair

    comparison = analyse(CompareInput(read.base, watched(iter(read.pairs)), read.judged, read.output_types), options)
    assert alive_when_taken == [0, 0, 0, 0]
    assert len(comparison.transitions) == 4 and len(comparison.distribution_items) == 4 * 6
    assert comparison.paired == {}  # kept only for drill-down pages (drill_limit)


def test_option_loglikelihoods_read_a_few_tasks_per_query_are_those_of_one_query(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import captrack.results.option_loglikelihoods as choices
    from captrack.results.trajectory import pair_variant

    tasks = ["captrack_probe_c1_facts", "captrack_mmlu_pro_subset", "captrack_boolq_subset"]
    for name, shift in (("base", 0.0), ("v", 0.7)):
        write_run(tmp_path / name, name, [
            FakeTask(task, {"acc": [1, 0, 1, 1, 0]}, choice_lls={i: [-0.5 - shift * (i % 2), -1.0 - i, -2.0, -t] for i in range(5)})
            for t, task in enumerate(tasks)])
    store = Store()
    for name in ("base", "v"):
        store.ingest(discover_runs(tmp_path / name), VariantLabels(name=name))
    paired, _ = pair_variant(store, "base", "v", load_taxonomy(), False)
    whole = choices.paired_task_choices(store, paired, [])
    monkeypatch.setattr(choices, "_CHUNK_ROWS", 6)  # one task (5 items) per query
    assert len(choices._task_chunks(choices._first_items(store, paired))) == 3
    chunked = choices.paired_task_choices(store, paired, [])
    assert [t.task for t in whole] == sorted(tasks) and len(whole) == len(chunked)
    for one, other in zip(whole, chunked, strict=True):
        assert one.task == other.task and one.skipped == other.skipped == 0
        for name in ("doc_hash", "gold", "k", "base_ll", "variant_ll"):
            np.testing.assert_array_equal(getattr(one, name), getattr(other, name))


def test_each_tasks_rows_are_found_as_one_run_of_the_ordered_table() -> None:
    import pyarrow as pa

    from captrack.results.option_loglikelihoods import _task_spans

    table = pa.table({"task": ["a", "a", "b", "c", "c", "c"], "x": range(6)})
    assert _task_spans(table) == {"a": (0, 2), "b": (2, 1), "c": (3, 3)}
    assert _task_spans(table.slice(0, 0)) == {}
