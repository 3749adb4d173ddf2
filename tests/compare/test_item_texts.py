"""Item texts of many samples files, read together, are what reading each file alone gives; only the wanted lines count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakeruns import FakeTask, write_run

from captrack.results.samples import read_item_texts, read_many_item_texts
from captrack.results.store import SamplesFile


def _file(run: Path, task: str) -> SamplesFile:
    return SamplesFile(run.parent / f"samples_{task}_{run.stem.removeprefix('results_')}.jsonl", None, "generate_until")


def test_many_files_in_one_read_equal_one_read_each(tmp_path: Path) -> None:
    tasks = ["captrack_probe_c1_skills", "captrack_probe_w3_style"]
    base = write_run(tmp_path / "base", "base", [FakeTask(t, {"exact_match": [1, 0, 1]}, output_type="generate_until",
                                                          responses={0: "A", 1: "B", 2: "C"}) for t in tasks])
    variant = write_run(tmp_path / "v", "v", [FakeTask(t, {"exact_match": [0, 0, 1]}, output_type="generate_until",
                                                       responses={0: "x", 1: "y", 2: "z"}) for t in tasks])
    wanted = {_file(base, tasks[0]): [0, 2], _file(base, tasks[1]): [1], _file(variant, tasks[0]): [0, 1, 2],
              _file(variant, tasks[1]): []}
    together = read_many_item_texts(wanted)
    assert together == {file: read_item_texts(file, list(ids)) for file, ids in wanted.items()}
    assert together[_file(variant, tasks[0])][1].response == "y" and sorted(together[_file(base, tasks[0])]) == [0, 2]


def test_a_doc_logged_twice_gives_its_last_line(tmp_path: Path) -> None:
    """lm-eval logs one line per (doc, filter): the last one in the file is kept, as a per-file read keeps it."""
    run = write_run(tmp_path / "r", "m", [FakeTask("captrack_probe_c1_skills", {"exact_match": [1, 0]}, output_type="generate_until")])
    file = _file(run, "captrack_probe_c1_skills")
    lines = file.path.read_text().splitlines()
    again = json.loads(lines[0]) | {"filter": "strict", "filtered_resps": ["second"]}
    file.path.write_text("\n".join([*lines, json.dumps(again)]) + "\n")
    assert read_many_item_texts({file: [0, 1]})[file][0].response == "second"


def test_lines_found_by_doc_id_wherever_it_is_logged(tmp_path: Path) -> None:
    """A line that does not start with its doc id (another writer's key order, a doc id as text) is still found;
    blank lines and unwanted docs are skipped; a doc id the file lacks is absent, not an empty text."""
    run = write_run(tmp_path / "r", "m", [FakeTask("captrack_probe_c1_skills", {"exact_match": [1, 0, 1]},
                                                   output_type="generate_until", responses={0: "a", 1: "b", 2: "c"})])
    file = _file(run, "captrack_probe_c1_skills")
    first, second, third = (json.loads(line) for line in file.path.read_text().splitlines())
    moved = {k: v for k, v in first.items() if k != "doc_id"} | {"doc_id": 0}
    as_text = second | {"doc_id": "1"}
    file.path.write_text("\n".join([json.dumps(moved), "", json.dumps(as_text), "  " + json.dumps(third)]) + "\n")
    texts = read_many_item_texts({file: [0, 1, 2, 7]})[file]
    assert {i: t.response for i, t in texts.items()} == {0: "a", 1: "b", 2: "c"}
    assert texts[0].prompt == "captrack_probe_c1_skills question 0" and texts[0].doc == first["doc"]
    assert read_many_item_texts({file: [2]})[file].keys() == {2}


def _contrast_line(doc: dict, lls: list[float]) -> dict:
    """A contrast item's samples line (target, arguments, filtered_resps and doc) as lm-eval writes it, parsed."""
    forms = json.loads(doc["forms"])
    pairs = [(form["prompt"], option) for form in forms for option in form["choices"]]
    requests = {f"gen_args_{i}": {"arg_0": prompt, "arg_1": " " + option} for i, (prompt, option) in enumerate(pairs)}
    line = {"doc_id": 0, "doc": doc, "target": doc["gold"], "arguments": requests,
            "filtered_resps": [[str(x), "False"] for x in lls]}
    return json.loads(json.dumps(line))


@pytest.mark.parametrize("lls", [[-1.0, -3.0, -2.0, -2.5], [-1.0, -3.0, -0.5, -4.0], [-5.0, -1.0, -2.0, -2.0]])
def test_a_contrast_item_shows_the_option_its_contrast_favours(lls: list[float]) -> None:
    """Not the likeliest of its four continuations: the option the probe favours more than its control does,
    so the page's answer scores as the logged contrast_acc (the demo's W1/W2/H4 twins)."""
    from captrack.metrics.form_consistency import contrast_metrics
    from captrack.probes.forced import w1_choice
    from captrack.results.samples import _item_text

    doc = w1_choice(1234, 4)[0]
    text = _item_text(_contrast_line(doc, lls))
    held = contrast_metrics(doc, lls)["contrast_acc"] == 1.0
    assert text.options == tuple(doc["choices"])
    assert text.gold == f"A. {doc['choices'][0]}"
    assert (text.response == text.gold) is held
    assert doc["control"] in text.prompt and "Scored as a contrast" in text.prompt


def test_a_damaged_line_is_refused_naming_file_and_line(tmp_path: Path) -> None:
    """A file changed where no fingerprint can tell (a store without them): its wanted line is not JSON."""
    from captrack.errors import InputError

    run = write_run(tmp_path / "r", "m", [FakeTask("captrack_probe_c1_skills", {"exact_match": [1, 0]}, output_type="generate_until")])
    file = _file(run, "captrack_probe_c1_skills")
    first, second = file.path.read_text().splitlines()
    file.path.write_text(first + "\n" + second[: len(second) // 2] + "\n")
    assert read_many_item_texts({file: [0]})[file][0].response  # the intact line still reads
    with pytest.raises(InputError, match=r"line 2: not a JSON line"):
        read_many_item_texts({file: [1]})
