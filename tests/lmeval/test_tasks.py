"""Every task YAML loads through lm-eval's TaskManager and agrees with the taxonomy and registry."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from captrack.judges import judged_for_task
from captrack.lmeval import task_manager
from captrack.metrics import get_metric
from captrack.paths import tasks_dir
from captrack.taxonomy import load_taxonomy

YAMLS = sorted(Path(tasks_dir()).glob("*/*.yaml"))


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")


def _config(path: Path) -> dict:
    return yaml.load(path.read_text(), Loader=_Loader)


@pytest.fixture(scope="module")
def manager():  # type: ignore[no-untyped-def]
    return task_manager(include_defaults=False)


@pytest.mark.parametrize("path", YAMLS, ids=[p.stem for p in YAMLS])
def test_yaml_agrees_with_taxonomy_and_registry(path: Path) -> None:
    config = _config(path)
    folder = path.parent
    assert path.stem.startswith(folder.name) and config["task"] == f"captrack_{path.stem}"
    assert (folder / "README.md").is_file()
    assert "version" in config["metadata"]
    taxonomy = load_taxonomy()
    assert config["tag"] == taxonomy.tags_for(config["task"])
    logged = {m["metric"] for m in config["metric_list"]}
    judged = {j.metric for j in judged_for_task(config["task"])}  # scored later by `captrack judge`
    tracked = {m.metric for m in taxonomy.members_of(config["task"])}
    assert tracked - judged <= logged and not logged & judged  # a task may log diagnostics beyond its members
    for entry in config["metric_list"]:
        spec = get_metric(entry["metric"])
        assert "aggregation" in entry
        assert entry["higher_is_better"] == (spec.direction == "higher")


def test_glob_selects_the_suite_without_groups_or_tags(manager) -> None:  # type: ignore[no-untyped-def]
    names = manager.match_tasks(["captrack_*"])
    assert set(names) == {f"captrack_{p.stem}" for p in YAMLS}
    tags = set(manager.all_tags)
    assert {"captrack", "captrack-can", "captrack-will", "captrack-how", "captrack-c1", "captrack-h1"} <= tags


def test_tasks_build_deterministic_docs(manager) -> None:  # type: ignore[no-untyped-def]
    from lm_eval.tasks import get_task_dict

    # Probe tasks generate their items; the official tasks read a data mirror (tests/data/test_official_tasks.py).
    first = get_task_dict(manager.match_tasks(["captrack_probe_*"]), manager)
    again = get_task_dict(manager.match_tasks(["captrack_probe_*"]), task_manager(include_defaults=False))
    for name, task in first.items():
        docs = list(task.test_docs())
        assert docs and docs == list(again[name].test_docs())
        assert task.doc_to_text(docs[0])


def test_metadata_seed_changes_the_items() -> None:
    from lm_eval.tasks import get_task_dict

    default = get_task_dict(["captrack_probe_c1_facts"], task_manager(include_defaults=False))["captrack_probe_c1_facts"]
    reseeded_tm = task_manager(include_defaults=False, metadata={"seed": 7})
    reseeded = get_task_dict(["captrack_probe_c1_facts"], reseeded_tm)["captrack_probe_c1_facts"]
    assert list(default.test_docs()) != list(reseeded.test_docs())


def test_stock_lm_eval_cli_lists_the_suite_without_duplicates() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "lm_eval", "ls", "tasks", "--include_path", tasks_dir()],
        capture_output=True, text=True, timeout=300, check=True,
    )
    for path in YAMLS:
        assert f"captrack_{path.stem}" in out.stdout
    assert "Duplicate" not in out.stdout + out.stderr


def test_full_size_tasks_are_opt_in(manager) -> None:  # type: ignore[no-untyped-def]
    """`captrack_*` never pulls the 12,032-item MMLU-Pro set in; naming its folder (or the task, in captrack) does."""
    from captrack.paths import full_task_names

    assert full_task_names() == {"captrack_mmlu_pro_full"}
    assert "captrack_mmlu_pro_full" not in manager.match_tasks(["captrack_*"])
    assert "captrack_mmlu_pro_full" not in manager.match_tasks(["captrack"])
    assert task_manager(include_defaults=False).match_tasks(["captrack_mmlu_pro_full"]) == ["captrack_mmlu_pro_full"]
