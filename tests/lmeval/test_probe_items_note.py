"""Stock lm-eval runs a probe's default item count without a word about it (issue 51: `--limit 40` ran 16 items): each
probe task's metadata says how many items it generates and that --limit never adds any, and lm-eval copies that note
into the results' configs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from captrack.lmeval import task_manager
from captrack.paths import tasks_dir

PROBES = sorted(Path(tasks_dir()).glob("probe_*/*.yaml"))


def test_every_probe_yaml_carries_the_note_as_wired() -> None:
    from captrack.lmeval.wiring import write_tasks

    assert write_tasks(PROBES, check=True) == []  # each note as `captrack tasks --write` writes it from metadata.n
    for path in PROBES:
        assert re.search(r'^  note: "\d+ generated items by default \(', path.read_text(encoding="utf-8"), re.M), path


def test_the_results_config_says_the_item_count() -> None:
    from lm_eval.tasks import get_task_dict

    names = ["captrack_probe_w1_choice", "captrack_probe_c1_facts"]  # metadata.n 16; the generator's whole table
    tasks = get_task_dict(names, task_manager(include_defaults=False))
    assert sorted(tasks) == sorted(names)
    for name, task in tasks.items():
        note = task.dump_config()["metadata"].get("note")  # what lm-eval writes into results_*.json's configs
        assert isinstance(note, str), name
        found = re.match(r"(\d+) generated items by default \(", note)
        assert found and int(found.group(1)) == len(list(task.test_docs())), (name, note)
        assert "--limit never adds items" in note and "--metadata n=N" in note, (name, note)


@pytest.mark.parametrize("path", PROBES[:1], ids=[p.stem for p in PROBES[:1]])
def test_the_note_follows_metadata_n(path: Path) -> None:
    """The note is written from metadata.n (captrack tasks --write), never typed: another n gives another note."""
    from captrack.lmeval.wiring import wire

    text = path.read_text(encoding="utf-8")
    changed = re.sub(r"^(\s+)n:\s*\d+\s*$", r"\g<1>n: 5", text, flags=re.M) if re.search(r"^\s+n:", text, re.M) \
        else text.rstrip("\n") + "\n  n: 5\n"
    assert '  note: "5 generated items by default (metadata.n);' in wire(path, changed)
