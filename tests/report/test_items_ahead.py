"""distribution_items.csv's text written by a child process while the analysis runs (captrack.report.items_ahead):
the same bytes as the writer's own, only where asked and worth it, and a child that dies with a dropped comparison."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pandas as pd
import pytest
from fakeruns import FakeTask, write_run
from item_tables import diagnosed_items

from captrack.analysis.comparison import CompareOptions
from captrack.analysis.item_spool import DistributionItems, SpooledParts
from captrack.compare.use_case import compare
from captrack.labels import VariantLabels
from captrack.report import background, items_ahead, writer
from captrack.report.items_ahead import ItemsAhead, write_part
from captrack.report.writer import write_comparison, write_contract_tables
from captrack.results.runfiles import discover_runs
from captrack.results.store import Store


def _parts() -> list[pd.DataFrame]:
    return [diagnosed_items(f"v{i}", n, i, algorithm="=SFT") for i, n in enumerate((60, 45, 30, 52))]


@pytest.fixture
def two_free_cores(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """A machine with a second core free; returns the marks second_core_free was asked with."""
    asked: list[object] = []
    monkeypatch.setattr(items_ahead, "second_core_free", lambda since=None: asked.append(since) or True)
    monkeypatch.setattr(background, "usable_cores", lambda: 2)
    monkeypatch.delenv("CAPTRACK_WORKERS", raising=False)
    return asked


def _spooled(follower: ItemsAhead | None) -> DistributionItems:
    spool = DistributionItems(follower=follower)
    for part in _parts():
        spool.add(part)
    return spool


def _written_alone(folder: Path) -> bytes:
    write_contract_tables(folder, {"distribution_items.csv": _spooled(None)})
    return (folder / "distribution_items.csv").read_bytes()


def test_the_child_writes_the_same_bytes_while_the_parts_are_added(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_free_cores: list[object]) -> None:
    alone = _written_alone(tmp_path / "alone")
    ahead = ItemsAhead(min_rows=100)  # started at the second part, with the first one sent too
    spool = _spooled(ahead)
    assert ahead._job is not None and ahead._job._process is not None and len(ahead._sent) == 4
    assert len(two_free_cores) == 1 and two_free_cores[0] is not None  # asked once, with the load since it was made
    monkeypatch.setattr(writer, "in_background", lambda calls: pytest.fail("the writer wrote rows itself"))
    write_contract_tables(tmp_path / "ahead", {"distribution_items.csv": spool})
    assert (tmp_path / "ahead" / "distribution_items.csv").read_bytes() == alone
    assert alone.count(b"variant,algorithm,") == 1 and b"'=SFT" in alone  # one header; labels made inert
    assert ahead._folder is not None and not ahead._folder.exists()  # its files removed once copied


class _Stalled:
    """A child that has not started yet: the calls it is sent run only when the results are asked for."""

    def __init__(self, warm_up: object = ()) -> None:
        self.calls: list[background.Call] = []
        self.returned: list[object] = []

    def run(self, calls: list[background.Call]) -> None:
        self.calls += calls

    def results(self) -> list[object]:
        self.returned = [function(*args, **kwargs) for function, args, kwargs in self.calls]
        return self.returned

    def close(self) -> None:
        pass


def test_the_parts_the_child_has_not_reached_are_written_by_the_caller(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_free_cores: list[object]) -> None:
    alone = _written_alone(tmp_path / "alone")
    stalled: list[_Stalled] = []
    monkeypatch.setattr(items_ahead, "Background", lambda warm_up=(): stalled.append(_Stalled()) or stalled[-1])
    spool = _spooled(ItemsAhead(min_rows=0))
    write_contract_tables(tmp_path / "ahead", {"distribution_items.csv": spool})
    assert (tmp_path / "ahead" / "distribution_items.csv").read_bytes() == alone
    assert len(stalled) == 1 and stalled[0].returned == [False] * 4  # the caller had claimed every part


def test_a_part_is_written_by_one_process_only(tmp_path: Path) -> None:
    spool = _spooled(None)
    out = tmp_path / "000001.csv"
    assert write_part(spool.spooled(1), out, header=False) and not write_part(spool.spooled(1), out, header=False)
    assert out.read_text().count("\n") == 45 + 30 + 52  # the parts from the second on, no header


@pytest.mark.parametrize("free", [True, False])
def test_nothing_is_written_ahead_below_its_rows_or_without_a_free_core(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, free: bool) -> None:
    monkeypatch.setattr(items_ahead, "second_core_free", lambda since=None: free)
    monkeypatch.setattr(writer.items_ahead, "SHARED_ROWS", 10**9)  # the writer writes every row itself
    ahead = ItemsAhead(min_rows=100 if not free else 10**6)
    spool = _spooled(ahead)
    assert ahead._job is None and ahead.text(4) is None
    write_contract_tables(tmp_path / "here", {"distribution_items.csv": spool})
    assert (tmp_path / "here" / "distribution_items.csv").read_bytes() == _written_alone(tmp_path / "alone")


def test_a_dropped_comparison_stops_its_child(two_free_cores: list[object]) -> None:
    ahead = ItemsAhead(min_rows=0)
    spool = _spooled(ahead)
    process = ahead._job._process if ahead._job is not None else None
    assert process is not None
    folder = ahead._folder
    del spool, ahead
    gc.collect()
    assert process.poll() is not None  # stopped and reaped
    assert folder is not None and not folder.exists()


def test_a_child_that_fails_fails_the_write_and_leaves_no_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_free_cores: list[object]) -> None:
    monkeypatch.setattr(DistributionItems, "spooled", lambda self, start: SpooledParts(str(tmp_path / "gone"), (0,)))
    spool = _spooled(ItemsAhead(min_rows=0))  # each part sent to the child names a file that is gone
    with pytest.raises(FileNotFoundError, match="gone"):  # raised in the child, raised again here
        write_contract_tables(tmp_path / "out", {"distribution_items.csv": spool})
    assert not list((tmp_path / "out").iterdir())


def test_compare_asked_to_write_ahead_writes_the_same_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_free_cores: list[object]) -> None:
    lls = {i: [-0.5 - (i % 3) * 0.4, -1.0 - i * 0.1, -2.0, -3.0] for i in range(40)}
    names = ["base", "v1", "v2"]
    for index, name in enumerate(names):
        acc = [int((i + index) % 3 > 0) for i in range(40)]
        shifted = {i: [v - 0.3 * index * (i % 2) for v in ll] for i, ll in lls.items()}
        write_run(tmp_path / name, name, [FakeTask("captrack_probe_c1_facts", {"acc": acc}, choice_lls=shifted),
                                          FakeTask("captrack_boolq_subset", {"acc": acc[::-1]}, choice_lls=lls)])
    store = Store()
    for name in names:
        store.ingest(discover_runs(tmp_path / name), VariantLabels(name=name))
    variants = [VariantLabels(name=n, algorithm="SFT") for n in names[1:]]
    files = {}
    monkeypatch.setattr(items_ahead, "SHARED_ROWS", 1)
    for ahead in (False, True):
        comparison = compare(store, "base", variants, CompareOptions(bootstrap=50), items_ahead=ahead)
        follower = comparison.distribution_items.follower
        assert isinstance(follower, ItemsAhead) is ahead and (not ahead or follower._job is not None)
        out = tmp_path / f"out-{ahead}"
        write_comparison(comparison, out, inputs={})
        files[ahead] = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    assert files[True] == files[False] and len(files[True]["distribution_items.csv"].splitlines()) == 1 + 2 * 80


def test_the_load_since_a_mark_leaves_out_this_process() -> None:
    import time

    from captrack.processes import CpuMark, busy_cores_since

    assert busy_cores_since(CpuMark.mark()) is None  # too soon to tell
    mark = CpuMark.mark()
    with open("/proc/stat") as handle:
        before = [int(x) for x in handle.readline().split()[1:]]
    spin = time.monotonic()
    while time.monotonic() - spin < 0.6:  # this process keeps a core busy (as much of one as the machine gives it)
        pass
    others = busy_cores_since(mark)
    own = (time.process_time() - mark.own_s) / (time.monotonic() - mark.wall_s)
    with open("/proc/stat") as handle:
        after = [int(x) for x in handle.readline().split()[1:]]
    busy = [a - b for a, b in zip(after, before, strict=True)]
    machine = (sum(busy) - busy[3] - busy[4]) / sum(busy) * (os.cpu_count() or 1)
    assert own > 0.2 and others is not None  # the machine's busy cores, this process's share taken out
    assert abs(others - max(0.0, machine - own)) < own / 2  # not the machine's whole load
