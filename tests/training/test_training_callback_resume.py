"""CapTrackCallback checks its tasks and output folder when training begins (not at the first evaluation), and a
training launched again into the same output folder resumes instead of failing on steps recorded twice (issue 40)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from fakeruns import FakeTask, write_run
from test_training_callback import TASK, _sft, tiny  # noqa: F401  (tiny: the module-scoped model fixture)

from captrack.errors import InputError, UnknownNameError
from captrack.training.resume import recorded_resume


def _begin(tmp_path: Path, output_dir: Path, tasks: list[str]) -> None:
    from captrack.training import CapTrackCallback

    trainer = SimpleNamespace(args=SimpleNamespace(output_dir=str(tmp_path / "train")))
    callback = CapTrackCallback(trainer, tasks=tasks, every=2, output_dir=str(output_dir))
    state = SimpleNamespace(is_world_process_zero=True, global_step=0, epoch=0.0)
    callback.on_train_begin(SimpleNamespace(), state, SimpleNamespace(), model=None)  # no model: fails before evaluating


def test_a_task_typo_fails_when_training_begins_with_close_names(tmp_path: Path) -> None:
    with pytest.raises(UnknownNameError, match=f"did you mean '{TASK}'"):
        _begin(tmp_path, tmp_path / "evals", [TASK[:-1]])
    assert not (tmp_path / "evals" / "base").exists()


def test_an_unwritable_output_folder_fails_when_training_begins(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(InputError, match="cannot be written"):
        _begin(tmp_path, tmp_path / "a-file" / "evals", [TASK])


def test_a_relaunch_keeps_steps_up_to_the_resumed_one_and_replaces_the_rest(tmp_path: Path) -> None:
    for step in (2, 4):
        write_run(tmp_path / f"step-{step}", "m", [FakeTask(TASK, {"acc": [1, 0]})])
    write_run(tmp_path / "base", "m", [FakeTask(TASK, {"acc": [1, 1]})])
    resumed = recorded_resume(tmp_path, 2)
    assert (resumed.kept, resumed.replaced, resumed.base) == ((2,), (4,), True)
    assert "kept: step(s) 2" in resumed.describe(tmp_path) and "replaced when reached: step(s) 4" in resumed.describe(tmp_path)
    fresh = recorded_resume(tmp_path, 0)
    assert (fresh.kept, fresh.replaced) == ((), (2, 4))


def test_training_launched_twice_into_one_folder_replaces_its_runs(tiny: Path, tmp_path: Path) -> None:  # noqa: F811
    from captrack.results.runfiles import discover_runs
    from captrack.training import CapTrackCallback

    made: list[CapTrackCallback] = []

    def watch(trainer: object) -> CapTrackCallback:
        made.append(CapTrackCallback(trainer, tasks=[TASK], every=2, limit=4, output_dir=str(tmp_path / "evals")))
        return made[-1]

    _sft(tiny, tmp_path / "first", [watch])
    _sft(tiny, tmp_path / "second", [watch])  # the same evaluation folder: used to fail with "step given twice"
    _, second = made
    assert sorted(second.evaluated) == [2, 4] and second.resumed.replaced == (2, 4) and second.logged[4]
    for name in ("base", "step-2", "step-4"):
        assert len(discover_runs(tmp_path / "evals" / name)) == 1, name
