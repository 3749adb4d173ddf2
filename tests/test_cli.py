"""The `captrack` and `captrack-eval` command lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from captrack.cli import _split_variant, main
from captrack.lmeval.integration import _with_include_path
from captrack.paths import tasks_dir


def test_tasks_path_and_listing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "--path"]) == 0
    assert Path(capsys.readouterr().out.strip()) == Path(tasks_dir())
    assert main(["tasks"]) == 0
    listing = capsys.readouterr().out
    assert "captrack_probe_c1_facts" in listing and "captrack-c1" in listing


def test_include_path_is_added_or_extended() -> None:
    ours = tasks_dir()
    assert _with_include_path(["run", "--tasks", "x"]) == ["run", "--tasks", "x", "--include_path", ours]
    assert _with_include_path(["--include_path", "/mine", "--tasks", "x"]) == [
        "--include_path", f"/mine{os.pathsep}{ours}", "--tasks", "x",
    ]
    assert _with_include_path([]) == []


@pytest.mark.parametrize(
    ("text", "with_dir", "expected"),
    [
        ("sft=runs/sft:SFT", True, ("sft", "runs/sft", "SFT")),
        ("sft=runs/sft", True, ("sft", "runs/sft", "")),
        ("dpo:DPO", False, ("dpo", "", "DPO")),
    ],
)
def test_variant_specs(text: str, with_dir: bool, expected: tuple[str, str, str]) -> None:
    assert _split_variant(text, with_dir) == expected


def test_compare_without_inputs_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--out", str(tmp_path)]) == 1
    assert "needs --base" in capsys.readouterr().err


def test_captrack_eval_validates_our_tasks_and_a_users_folder(tmp_path: Path) -> None:
    mine = tmp_path / "mytasks" / "extra"
    mine.mkdir(parents=True)
    (mine / "extra.yaml").write_text((Path(tasks_dir()) / "probe_c1_facts" / "probe_c1_facts.yaml").read_text()
                                     .replace("task: captrack_probe_c1_facts", "task: my_extra_task")
                                     .replace("tag: [captrack, captrack-can, captrack-c1]", "tag: [mine]"))
    (mine / "utils.py").write_text((Path(tasks_dir()) / "probe_c1_facts" / "utils.py").read_text())
    out = subprocess.run(
        [sys.executable, "-c", "from captrack.lmeval import main; main()", "validate",
         "--tasks", "captrack_probe_c1_facts,my_extra_task", "--include_path", str(tmp_path / "mytasks")],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "my_extra_task" in out.stdout + out.stderr


def test_captrack_eval_resolves_model_aliases_without_touching_other_args(monkeypatch: pytest.MonkeyPatch) -> None:
    import captrack.models
    from captrack.lmeval.integration import _resolve_aliases

    monkeypatch.setattr(captrack.models, "resolve_model", lambda spec: Path("/cache/models") / spec.lower())
    assert _resolve_aliases(["--model", "hf", "--model_args", "pretrained=SmolLM2-135M-Instruct,dtype=float32"]) == [
        "--model", "hf", "--model_args", "pretrained=/cache/models/smollm2-135m-instruct,dtype=float32"]
    assert _resolve_aliases(["--model_args=pretrained=/my/model,tokenizer=smollm2-135m-instruct"]) == [
        "--model_args=pretrained=/my/model,tokenizer=/cache/models/smollm2-135m-instruct"]
    assert json.loads(_resolve_aliases(["--model_args", '{"pretrained": "gemma-3-270m"}'])[1]) == {
        "pretrained": "/cache/models/gemma-3-270m"}
    assert _resolve_aliases(["--model_args", "pretrained=org/hub-model"]) == ["--model_args", "pretrained=org/hub-model"]


def test_demo_dry_run_does_no_work_and_plans_under_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import captrack.models

    def no_work(spec: str) -> Path:
        raise AssertionError(f"a dry run resolved (converted) {spec}")

    monkeypatch.setattr(captrack.models, "resolve_model", no_work)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--dry-run"]) == 0
    out = capsys.readouterr().out.replace("\n", "")
    assert f"work folder {tmp_path / 'runs' / 'demo'}" in out and "would run" in out
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_ingest_and_compare_show_files_and_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from fakeruns import FakeTask, write_run

    for name, acc in (("base", [1, 0, 1]), ("v", [1, 1, 1])):
        write_run(tmp_path / name, name, [FakeTask("captrack_probe_c1_facts", {"acc": acc}),
                                          FakeTask("captrack_probe_c1_skills", {"exact_match": acc}, output_type="generate_until")])
    assert main(["ingest", str(tmp_path / "base"), "--store", str(tmp_path / "s.duckdb"), "--name", "base"]) == 0
    err = capsys.readouterr().err
    assert "ingesting samples files" in err and "2/2" in err and "6 rows" in err
    assert main(["compare", "--base", str(tmp_path / "base"), "--variant", f"v={tmp_path / 'v'}",
                 "--out", str(tmp_path / "out"), "--bootstrap", "0"]) == 0
    err = capsys.readouterr().err
    assert "4/4" in err and "12 rows" in err and "comparing with 'base'" in err and "1/1 variants, 6 paired rows" in err


def test_training_progress_shows_step_total_loss_and_eta(capsys: pytest.CaptureFixture[str]) -> None:
    from types import SimpleNamespace

    from captrack.training.harness import progress_callback

    callback = progress_callback("SFTTrainer")
    state = SimpleNamespace(max_steps=3, global_step=0)
    callback.on_train_begin(None, state, None)
    for step in (1, 2, 3):
        state.global_step = step
        callback.on_log(None, state, None, logs={"loss": 1.0 / step, "learning_rate": 1e-5})
        callback.on_step_end(None, state, None)
    callback.on_train_end(None, state, None)
    err = capsys.readouterr().err
    assert "SFTTrainer steps" in err and "3/3" in err and "loss 0.3333" in err and "ETA" in err


def test_help_loads_no_heavy_library() -> None:
    """`captrack --help` builds every sub-command's parser without torch, lm-eval, scipy or pandas (lazy imports)."""
    code = ("import sys, contextlib, io\nfrom captrack.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['--help'])\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in ('torch', 'lm_eval', 'scipy', 'pandas', 'transformers', 'duckdb', 'matplotlib')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_import_formats_listed_in_help_are_the_adapters() -> None:
    from captrack.imports.cli import FORMATS
    from captrack.imports.formats import ADAPTERS

    assert FORMATS == tuple(sorted(ADAPTERS))


@pytest.mark.parametrize(("argv", "usage", "said"), [
    (["compare", "--bsae", "x", "--out", "y"], "usage: captrack compare", "unrecognized arguments: --bsae x; did you mean --base"),
    (["data", "build", "--sources", "x", "--fulll"], "usage: captrack data build", "did you mean --full"),
    (["comprae"], "usage: captrack [-h]", "invalid choice: 'comprae'"),
])
def test_a_typo_shows_the_sub_commands_usage_and_close_names(argv: list[str], usage: str, said: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.startswith(usage) and said in err
    assert err.strip().splitlines()[-1].count("error:") == 1
