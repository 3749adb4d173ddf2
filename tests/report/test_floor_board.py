"""The backend's A/A floor on a board (issue 54): the floor pair (algorithm `floor`) is drawn beside the variants, its
flips per task equal to transitions.csv's floor row (and to a count made here from the runs), each variant's F and BT
next to them with a change within the floor marked as such; it is not a variant: not in the grid, the checkpoints,
the algorithm summary, the rankings or the findings. A board without a floor has no floor section and no floor.csv."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd
import pytest
from fakeruns import FakeTask, run_quietly, write_run
from flipcount import flips

from captrack.compare.board import build_leaderboard

FACTS, IF = "captrack_probe_c1_facts", "captrack_probe_h1_constraints"
BASE_FACTS = [1, 1, 0, 0, 1, 1, 0, 1] * 5
BASE_IF = [1, 0, 1, 1, 0, 1] * 5


def _flipped(values: list[int], lose: tuple[int, ...] = (), gain: tuple[int, ...] = ()) -> list[int]:
    out = list(values)
    for i in lose:
        assert out[i] == 1
        out[i] = 0
    for i in gain:
        assert out[i] == 0
        out[i] = 1
    return out


RUNS = {  # name -> (facts acc, IF pass_all, algorithm)
    "base": (BASE_FACTS, BASE_IF, ""),
    "base-floor-bs1": (BASE_FACTS, BASE_IF, ""),  # the base's own floor evaluation (a pair of its own)
    "base-floor-bs16": (_flipped(BASE_FACTS, lose=(0, 4), gain=(2,)), BASE_IF, "floor"),  # batching flips 3 facts
    "dpo": (_flipped(BASE_FACTS, lose=(1,), gain=(3,)), BASE_IF, "DPO"),  # fewer flips either way: within
    "sft": (_flipped(BASE_FACTS, lose=(0, 1, 4, 5, 7, 9, 12)), _flipped(BASE_IF, lose=(0, 2, 3)), "SFT"),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("floor-board")
    path = root / "store.duckdb"
    for name, (facts, inst, algorithm) in RUNS.items():
        write_run(root / "runs" / name, name, [FakeTask(FACTS, {"acc": facts}),
                                               FakeTask(IF, {"pass_all": inst}, output_type="generate_until")])
        run_quietly(["ingest", str(root / "runs" / name), "--store", str(path), "--name", name,
                     *(["--algorithm", algorithm] if algorithm else [])])
    return path


def _board(folder: Path, store: Path, floor: str) -> Path:
    """A board of sft and dpo over base; `floor`: "own" (the floor pair base-floor-bs1 → base-floor-bs16, a comparison
    of its own), "reused" (base → base-floor-bs16, beside the variants) or "" (none)."""
    folder.mkdir()
    _write_definition(folder, store, floor)
    build_leaderboard(folder)
    return folder


def _write_definition(folder: Path, store: Path, floor: str) -> None:
    comparisons = "  - base: base\n    variants:\n      - {name: sft, algorithm: SFT}\n      - {name: dpo, algorithm: DPO}\n"
    if floor == "alone":
        comparisons = "  - base: base\n    variants:\n      - {name: base-floor-bs16, algorithm: floor}\n"
    elif floor == "reused":
        comparisons += "      - {name: base-floor-bs16, algorithm: floor}\n"
    elif floor == "own":
        comparisons += "  - base: base-floor-bs1\n    variants:\n      - {name: base-floor-bs16, algorithm: floor}\n"
    (folder / "leaderboard.yaml").write_text(f"title: floor\nstore: {store}\nbootstrap: 50\ncomparisons:\n{comparisons}")


def _rows(page: str, table_id: str) -> list[list[str]]:
    """The cells' texts of table `table_id`'s body rows."""
    body = re.search(rf'<table id="{table_id}".*?<tbody>(.*?)</tbody>', page, re.S)
    assert body, table_id
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body.group(1), re.S)]


def _header(page: str, table_id: str) -> list[str]:
    head = re.search(rf'<table id="{table_id}".*?<thead>(.*?)</thead>', page, re.S)
    assert head, table_id
    return [html.unescape(h) for h in re.findall(r"<th[^>]*>(.*?)</th>", head.group(1))]


def _compare_floor(store: Path, first: str, out: Path) -> pd.DataFrame:
    """`captrack compare` of the floor pair (`first` → base-floor-bs16): its transitions.csv's rows by task and metric,
    checked against a count of the flips made here from the runs' values."""
    run_quietly(["compare", "--store", str(store), "--base", first, "--variant", "base-floor-bs16", "--bootstrap", "50",
                 "--out", str(out)])
    expected = pd.read_csv(out / "transitions.csv").set_index(["task", "metric"])
    for task, metric, index in ((FACTS, "acc", 0), (IF, "pass_all", 1)):
        n, lost, gained = flips(dict(enumerate(RUNS[first][index])), dict(enumerate(RUNS["base-floor-bs16"][index])))
        row = expected.loc[(task, metric)]
        assert (row["n"], row["forgetting"], row["backward_transfer"]) == (n, pytest.approx(lost), pytest.approx(gained))
    return expected


def test_the_floor_is_drawn_beside_the_variants_not_as_one(store: Path, tmp_path: Path) -> None:
    """One board (its figures and pages take seconds): the floor as `captrack run` makes it with floor: [1, 16] at the
    experiment's batch size 8, a pair of its own (base-floor-bs1 → base-floor-bs16) that measures the base's backend."""
    expected = _compare_floor(store, "base-floor-bs1", tmp_path / "compare")
    board = _board(tmp_path / "board", store, "own")
    page = (board / "index.html").read_text()
    shown = {(r[2], r[3]): r for r in _rows(page, "floor-table")}
    assert sorted(shown) == sorted(expected.index)
    for (task, metric), row in expected.iterrows():
        cells = shown[(task, metric)]
        assert cells[:2] == ["base-floor-bs16", "base"]  # the floor, and the base whose backend it measures
        assert [int(c) for c in cells[4:7]] == [row["n"], row["n_10"], row["n_01"]]
        assert cells[7:9] == [f"{100 * row['forgetting']:.1f}%", f"{100 * row['backward_transfer']:.1f}%"]
        assert f'data-sort="{row["forgetting"]!r}"' in page
    on_board = pd.read_csv(board / "transitions.csv")  # the board's transitions.csv keeps the floor's rows
    mine = on_board[on_board["variant"] == "base-floor-bs16"].set_index(["task", "metric"])
    assert mine.loc[expected.index, ["n", "n_10", "n_01", "forgetting"]].equals(expected[["n", "n_10", "n_01", "forgetting"]])

    against = {(r[0], r[2]): r[-1] for r in _rows(page, "floor-variants-table")}
    assert against == WITHIN
    per_task = {(r[0], r[1]): r[7] for r in _rows(page, "task-table")}
    assert per_task[("dpo", FACTS)].endswith(" · within the A/A floor") and "floor" not in per_task[("sft", FACTS)]
    floor_csv = pd.read_csv(board / "floor.csv")
    assert set(zip(floor_csv["variant"], floor_csv["within_aa_floor"], strict=True)) == {("dpo", True), ("sft", False)}
    readme = (board / "README.md").read_text()
    assert "## Backend A/A floor" in readme and "| dpo | base | captrack_probe_c1_facts | acc | 40 |" in readme

    # not a variant: not in the grid, the checkpoints, the per-task rows, the algorithm summary, the rankings, the findings
    assert "base-floor-bs16" not in _header(page, "capability-table")
    assert {r[0] for r in _rows(page, "checkpoint-table")} == {r[0] for r in _rows(page, "task-table")} == {"sft", "dpo"}
    assert set(pd.read_csv(board / "algorithms.csv")["algorithm"]) == {"SFT", "DPO"}
    assert set(pd.read_csv(board / "checkpoints.csv")["variant"]) == {"sft", "dpo"}
    findings = re.search(r'<ul id="findings-list">(.*?)</ul>', page, re.S)
    assert findings and "floor" not in findings.group(1)


WITHIN = {("dpo", FACTS): "within the A/A floor", ("dpo", IF): "within the A/A floor",
          ("sft", FACTS): "beyond the A/A floor", ("sft", IF): "beyond the A/A floor"}


@pytest.mark.parametrize(("floor", "first"), [("reused", "base"), ("own", "base-floor-bs1"), ("", "")])
def test_the_boards_tables_keep_the_floor_apart(store: Path, tmp_path: Path, floor: str, first: str) -> None:
    """The tables a board is drawn from (no pages): the floor beside the base's variants whether it reuses the base's
    run or has a first run of its own; never a variant, an algorithm, a checkpoint or one side of a ranking; none at
    all on a board without one."""
    from captrack.analysis.board_summary import board_tables
    from captrack.compare.board import board_comparisons
    from captrack.report.leaderboard import load_spec

    folder = tmp_path / "board"
    folder.mkdir()
    _write_definition(folder, store, floor)
    computed = board_tables(board_comparisons(load_spec(folder)))
    assert computed.variants == ["sft", "dpo"] and list(computed.checkpoints["variant"]) == ["sft", "dpo"]
    assert set(computed.algorithms["algorithm"]) == {"SFT", "DPO"}
    contrasts = computed.frames["contrasts"]
    assert set(contrasts["algorithm_a"]) | set(contrasts["algorithm_b"]) == {"SFT", "DPO"}
    if not floor:
        assert computed.floor.names == [] and computed.floor.rows.empty and computed.floor.against.empty
        return
    expected = _compare_floor(store, first, tmp_path / "compare")
    rows = computed.floor.rows.set_index(["task", "metric"])
    assert set(rows["measures"]) == {"base"}
    assert rows.loc[expected.index, ["n", "n_10", "n_01", "forgetting", "backward_transfer"]].equals(
        expected[["n", "n_10", "n_01", "forgetting", "backward_transfer"]])
    against = computed.floor.against
    assert {(v, t): ("within" if w else "beyond") + " the A/A floor" for v, t, w in
            zip(against["variant"], against["task"], against["within_aa_floor"], strict=True)} == WITHIN
    transitions = computed.frames["transitions"]  # the board's transitions.csv keeps the floor's rows
    assert set(transitions.loc[transitions["variant"] == "base-floor-bs16", "task"]) == {FACTS, IF}


def test_a_board_rebuilt_without_its_floor_drops_floor_csv(tmp_path: Path) -> None:
    from captrack.analysis.board_floor import BoardFloor
    from captrack.report.floor_section import FLOOR_FILE, floor_html, floor_markdown, floor_tables

    (tmp_path / FLOOR_FILE).write_text("variant\n")  # an earlier build's, when the board had a floor
    assert floor_tables(tmp_path, BoardFloor()) == {} and not (tmp_path / FLOOR_FILE).exists()
    assert floor_html(BoardFloor()) == "" and floor_markdown(BoardFloor()) == []


def test_a_board_of_the_floor_alone(store: Path, tmp_path: Path) -> None:
    """An experiment may ask only for the floor (`floor:` with `variants: []`, as tests/pipeline/test_vllm_run.py's
    vLLM run does): its board has no variant to draw, and shows the floor."""
    expected = _compare_floor(store, "base", tmp_path / "compare")
    board = _board(tmp_path / "board", store, "alone")
    page = (board / "index.html").read_text()
    assert [[int(c) for c in r[4:7]] for r in _rows(page, "floor-table")] == expected[["n", "n_10", "n_01"]].values.tolist()
    assert _rows(page, "floor-variants-table") == _rows(page, "checkpoint-table") == []
    assert pd.read_csv(board / "checkpoints.csv").empty and pd.read_csv(board / "algorithms.csv").empty
