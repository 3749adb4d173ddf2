"""A base evaluated from a Trainer's `checkpoint-N` folder is one fixed point: it gets no training step.

Issue 40: `captrack run` with `base: {model_args: pretrained=out/checkpoint-100}` ingested the base at step 100,
and the board failed at the end ("base carries training steps").
"""

from __future__ import annotations

import json
from pathlib import Path

from fakeruns import FakeTask, write_run

from captrack.labels import VariantLabels
from captrack.results.runfiles import discover_runs
from captrack.results.steps import model_steps
from captrack.results.store import Store


def test_a_base_from_a_checkpoint_folder_gets_no_step_while_a_variant_does(tmp_path: Path) -> None:
    checkpoint = tmp_path / "trainer" / "checkpoint-100"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": 100, "epoch": 1.0}))
    for name, values in (("base", [1, 0, 1]), ("sft", [1, 1, 1])):
        write_run(tmp_path / name, str(checkpoint), [FakeTask("captrack_probe_c1_facts", {"acc": values})])
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(discover_runs(tmp_path / "base"), VariantLabels(name="base"), fixed=True)
        store.ingest(discover_runs(tmp_path / "sft"), VariantLabels(name="sft", algorithm="SFT"))
        assert model_steps(store.con, "base") == []
        assert model_steps(store.con, "sft") == [100]  # a variant's checkpoint-N still names its step
