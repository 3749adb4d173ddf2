"""A model type neither lm-eval nor captrack registers is refused when the experiment is read, before any work,
with close names offered (issue 40: `model: captrack_hf` passed validation and --dry-run, then crashed the run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from captrack.cli import main
from captrack.errors import UnknownNameError
from captrack.pipeline.experiment import load_experiment


def _experiment(tmp_path: Path, model: str, where: str = "variant") -> Path:
    (tmp_path / "m").mkdir(exist_ok=True)
    base_model = f"model: {model}, " if where == "base" else ""
    variant_model = f"model: {model}, " if where == "variant" else ""
    path = tmp_path / "exp.yaml"
    path.write_text(f"tasks: [captrack_probe_c1_facts]\nbase: {{name: base, {base_model}model_args: {{pretrained: m}}}}\n"
                    f"variants:\n  - {{name: v, {variant_model}model_args: {{pretrained: m}}}}\n")
    return path


@pytest.mark.parametrize("where", ["base", "variant"])
def test_a_typo_in_a_model_type_is_refused_with_close_names(tmp_path: Path, where: str) -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'captrack-hf'") as caught:
        load_experiment(_experiment(tmp_path, "captrack_hf", where))
    assert str(tmp_path / "exp.yaml") in str(caught.value)


def test_dry_run_refuses_the_typo_without_touching_the_work_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(_experiment(tmp_path, "captrack_hf")), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "captrack-hf" in err
    assert not (tmp_path / "exp-leaderboard").exists() and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("model", ["hf", "captrack-hf", "captrack-ds", "vllm", "dummy"])
def test_lm_evals_and_captracks_model_types_pass(tmp_path: Path, model: str) -> None:
    assert load_experiment(_experiment(tmp_path, model)).checkpoints[-1].model == model
