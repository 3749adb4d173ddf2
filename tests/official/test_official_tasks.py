"""Every official task loads through lm-eval's TaskManager from an installed copy, and scores its rows."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from official_mirror import examples, full_mirror, shared_data, write_examples

from captrack.official.configs import CONFIGS, get_config
from captrack.official.mirror import load_config
from captrack.official.tasks import nanmean, process_results

ROOT = Path(__file__).resolve().parents[2]

_LOAD_ALL = """
import json, logging, sys
logging.disable(logging.WARNING)
import captrack, captrack.paths
from lm_eval.tasks import TaskManager, get_task_dict
manager = TaskManager(include_path=[captrack.paths.tasks_dir()], include_defaults=False)
names = [n for n in manager.match_tasks(["captrack_*"]) if not n.startswith("captrack_probe_")]
loaded = {}
from captrack.errors import InputError
for name in names:
    try:
        task = get_task_dict([name], manager)[name]
    except InputError as exc:  # a config missing from the mirror: the error must say so
        assert "is not in the CapTrack data mirror" in str(exc), exc
        loaded[name] = {"docs": 0, "error": str(exc)}
        continue
    doc = next(iter(task.test_docs()))
    assert task.doc_to_text(doc), name
    loaded[name] = {"docs": len(task.test_docs()), "revision": doc["revision"], "output_type": task.OUTPUT_TYPE}
print(json.dumps({"captrack": captrack.__file__, "tasks": loaded}))
"""


@pytest.mark.parametrize("case", examples(), ids=[c["config"] for c in examples()])
def test_example_row_is_scored_by_its_task(case: dict, tmp_path: Path) -> None:  # type: ignore[type-arg]
    write_examples(tmp_path)
    doc = load_config(case["config"], data_dir=str(tmp_path))["train"][0]
    got = process_results(doc, [case["response"]])
    assert set(got) == set(case["expected"])
    for metric, want in case["expected"].items():
        assert got[metric] is None if want is None else got[metric] == pytest.approx(want), metric
        assert (get_config(case["config"]).unscored_reason(metric) is None) == (want is not None), metric


def test_nanmean_skips_unscored_items() -> None:
    assert nanmean([1.0, None, 0.0, float("nan")]) == 0.5
    assert math.isnan(nanmean([None, None]))


def test_every_task_loads_from_an_installed_copy(tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-q", "--target", str(site), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )
    mirror = tmp_path / "mirror"
    full_mirror(mirror)
    env = {**os.environ, "PYTHONPATH": str(site), "CAPTRACK_DATA_DIR": str(mirror), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", _LOAD_ALL], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["captrack"].startswith(str(site)), "the checkout, not the installed copy, was imported"
    default = [c for c in CONFIGS.values() if c.hub]  # opt-in full-size tasks are off the default path (tests/lmeval/test_tasks.py)
    expected = {c.task for c in default} if shared_data() else {c.task for c in default if c.reason}
    assert set(report["tasks"]) == {c.task for c in default}
    for name in expected:
        assert report["tasks"].get(name, {}).get("docs", 0) > 0, name
