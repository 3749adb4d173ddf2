"""Probe tasks from your own generations: export a probe's prompts at a size, generate elsewhere, import at that
size; an `items:` asking a probe for more than it generates points to its metadata n."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from pathlib import Path

import pytest

from captrack.cli import main
from captrack.errors import InputError
from captrack.pipeline.experiment import load_experiment
from captrack.pipeline.quick_run import demo_experiment
from captrack.pipeline.runner import _check_item_counts

WORD = "captrack_probe_c2_word_problems"  # generates 24 items unless its metadata n says otherwise


def _cli(*args: str) -> tuple[int, str]:
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer), contextlib.redirect_stdout(buffer):
        status = main(list(args))
    return status, " ".join(buffer.getvalue().split())


def test_items_past_a_probes_size_points_to_its_metadata_n() -> None:
    experiment = dataclasses.replace(load_experiment(demo_experiment()), items={WORD: 96}, metadata={})
    with pytest.raises(InputError, match=r"items asks captrack_probe_c2_word_problems for 96 items but it has 24") as caught:
        _check_item_counts(experiment)
    assert "metadata: {n: 96}" in str(caught.value) and "lower it to" not in str(caught.value)
    _check_item_counts(dataclasses.replace(experiment, metadata={"n": 96}))  # what the message says works


def test_a_probe_exported_at_n_items_is_imported_at_n_items(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts.jsonl"
    status, said = _cli("tasks", "--export", WORD, "--n", "30", "--out", str(prompts))
    assert status == 0 and "--items 30" in said, said
    rows = [json.loads(line) for line in prompts.read_text().splitlines()]
    assert len(rows) == 30 and [r["doc_id"] for r in rows] == list(range(30))
    assert all(set(r) == {"id", "doc_id", "prompt"} and r["prompt"].startswith("Question:") for r in rows)
    gens = tmp_path / "gens.jsonl"
    gens.write_text("".join(json.dumps({"id": r["id"], "response": "42"}) + "\n" for r in rows))

    status, said = _cli("import", str(gens), "--format", "jsonl", "--task", WORD, "--out", str(tmp_path / "default"))
    assert status != 0 and "--items N" in said and not (tmp_path / "default").exists()  # the default 24 items
    status, said = _cli("import", str(gens), "--format", "jsonl", "--task", WORD, "--items", "30",
                        "--out", str(tmp_path / "run"), "--name", "mine")
    assert status == 0 and f"{WORD}: 30 of 30 documents scored" in said, said
    samples = next((tmp_path / "run").rglob(f"samples_{WORD}_*.jsonl")).read_text().splitlines()
    assert sorted(json.loads(line)["doc"]["id"] for line in samples) == sorted(r["id"] for r in rows)


def test_export_never_replaces_a_file_and_refuses_option_likelihood_tasks(tmp_path: Path) -> None:
    taken = tmp_path / "mine.jsonl"
    taken.write_text("the user's\n")
    assert _cli("tasks", "--export", WORD, "--out", str(taken))[0] != 0 and taken.read_text() == "the user's\n"
    status, said = _cli("tasks", "--export", "captrack_probe_c1_facts", "--out", str(tmp_path / "facts.jsonl"))
    assert status != 0 and "multiple_choice" in said and not (tmp_path / "facts.jsonl").exists()
