"""Task wiring declared once (captrack.lmeval.wiring): tags, higher_is_better and a probe's version are written from
the taxonomy, the MetricSpec and the generator; a committed task YAML never differs from what `captrack tasks --write`
writes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from captrack.errors import InputError
from captrack.lmeval.scaffold import new_probe_task
from captrack.lmeval.wiring import task_yamls, wire, write_tasks
from captrack.paths import tasks_dir


def test_every_committed_task_yaml_is_wired() -> None:
    """Fails when a YAML's tag, higher_is_better or probe version differs from its owner: run `captrack tasks --write`."""
    assert len(task_yamls()) > 50
    assert write_tasks(check=True) == []


def test_write_fills_in_a_new_task_written_without_the_wired_keys(tmp_path: Path) -> None:
    source = Path(tasks_dir()) / "probe_c2_word_problems"
    folder = shutil.copytree(source, tmp_path / source.name)
    path = folder / f"{source.name}.yaml"
    committed = path.read_text()
    bare = "\n".join(line for line in committed.splitlines()
                     if not line.startswith("tag:") and "higher_is_better" not in line and "version:" not in line) + "\n"
    path.write_text(bare)
    assert write_tasks([path]) == [path]
    assert path.read_text() == committed
    assert write_tasks([path]) == []


def test_write_corrects_hand_copied_values(tmp_path: Path) -> None:
    source = Path(tasks_dir()) / "probe_c2_logic"
    folder = shutil.copytree(source, tmp_path / source.name)
    path = folder / f"{source.name}.yaml"
    committed = path.read_text()
    wrong = (committed.replace("captrack-c2]", "captrack-c1]").replace("higher_is_better: true", "higher_is_better: false")
             .replace("version: 1.0", "version: 3.0"))
    assert wrong != committed and wire(path, wrong) == committed


def test_an_official_task_keeps_its_own_version(tmp_path: Path) -> None:
    source = Path(tasks_dir()) / "gsm8k"
    path = shutil.copytree(source, tmp_path / source.name) / "gsm8k_subset.yaml"
    bumped = path.read_text().replace("version: 1.1", "version: 1.2")
    assert wire(path, bumped) == bumped


@pytest.mark.parametrize(("task", "generator", "scorer"), [("captrack_probe_c2_logic", "logic", None),
                                                           ("captrack_probe_c2_word_problems", "word_problems", "short_answer")])
def test_new_writes_a_probe_task_lm_eval_loads(tmp_path: Path, task: str, generator: str, scorer: str | None) -> None:
    """`captrack tasks --new` (here into a scratch folder, for tasks the taxonomy already has) gives a wired task."""
    from lm_eval.tasks import TaskManager, get_task_dict

    written = new_probe_task(task, generator, scorer, root=tmp_path)
    assert [p.name for p in written] == [f"{task.removeprefix('captrack_')}.yaml", "utils.py", "README.md"]
    assert write_tasks(written[:1], check=True) == []
    committed = yaml.safe_load(re.sub(r"!function \S+", "f", (Path(tasks_dir()) / written[0].parent.name / written[0].name).read_text()))
    new = yaml.safe_load(re.sub(r"!function \S+", "f", written[0].read_text()))
    assert (new["tag"], new["metric_list"], new["metadata"]["version"]) == (
        committed["tag"], committed["metric_list"], committed["metadata"]["version"])
    docs = list(get_task_dict([task], TaskManager(include_path=str(tmp_path), include_defaults=False))[task].test_docs())
    assert docs and docs[0]["id"]
    with pytest.raises(InputError, match="exists already"):
        new_probe_task(task, generator, scorer, root=tmp_path)
