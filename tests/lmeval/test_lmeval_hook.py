"""The `.pth` hook makes stock lm-eval see captrack's tasks and stop, in one line, on missing CapTrack data."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tasks(pattern: str = "*") -> set[str]:
    """The task names of the task folders matching `pattern` (a probe added by CONTRIBUTING's recipe is among them)."""
    return {f"captrack_{p.stem}" for p in (ROOT / "tasks").glob(f"{pattern}/*.yaml")}

# Run in a fresh interpreter: the hook patches lm-eval's classes for the whole process.
_PROBE = r"""
import json, logging, sys
import captrack_lmeval_hook
captrack_lmeval_hook.install()
from lm_eval.tasks import TaskManager
from captrack.paths import tasks_dir
from captrack.lmeval.preflight import missing_data
warnings = []
class Keep(logging.Handler):
    def emit(self, record): warnings.append(record.getMessage())
logging.getLogger("lm_eval").addHandler(Keep())
plain = TaskManager(include_defaults=False)
twice = TaskManager(include_defaults=False, include_path=tasks_dir())
listed = TaskManager(include_defaults=False, include_path=[tasks_dir(), tasks_dir()])
print(json.dumps({
    "plain": plain.match_tasks(["captrack_*"]),
    "twice": twice.match_tasks(["captrack_*"]),
    "listed": listed.match_tasks(["captrack_*"]),
    "overrides": [w for w in warnings if "overrides" in w or "Duplicate" in w],
    "probes": plain.match_tasks(["captrack-probes"]),
    "missing_all": missing_data(plain, ["captrack"]),
    "missing_probes": missing_data(plain, ["captrack-probes", "captrack_probe_c1_facts"]),
}))
"""


def _run(env: dict[str, str]) -> dict:  # type: ignore[type-arg]
    clean = {k: v for k, v in os.environ.items() if k != "CAPTRACK_DATA_DIR"}
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=300,
                         env={**clean, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", **env}, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_hook_adds_the_task_folder_once_and_the_env_var_turns_it_off(tmp_path: Path) -> None:
    seen = _run({"HF_HUB_CACHE": str(tmp_path)})  # an empty cache: offline, no official data anywhere
    suite, probes = _tasks(), _tasks("probe_*")
    assert set(seen["plain"]) == suite and seen["twice"] == seen["plain"] == seen["listed"]
    assert seen["overrides"] == []  # the same folder given again (captrack-eval, --include_path) is not re-added
    assert probes and probes == {t for t in suite if t.startswith("captrack_probe_")}  # every probe_* folder, however many
    assert set(seen["probes"]) == {"captrack-probes"}
    assert set(seen["missing_all"]) == suite - probes and seen["missing_probes"] == []

    off = _run({"HF_HUB_CACHE": str(tmp_path), "CAPTRACK_LMEVAL_HOOK": "0"})
    assert off["plain"] == [] and off["missing_all"] == []


@pytest.mark.slow
def test_lm_eval_cli_stops_in_one_line_before_any_model_work(tmp_path: Path) -> None:
    code = ("import captrack_lmeval_hook, sys; captrack_lmeval_hook.install();"
            "from lm_eval.__main__ import cli_evaluate; sys.argv = ['lm_eval'] + sys.argv[1:]; cli_evaluate()")
    clean = {k: v for k, v in os.environ.items() if k != "CAPTRACK_DATA_DIR"}
    out = subprocess.run([sys.executable, "-c", code, "--model", "dummy", "--tasks", "captrack_*", "--limit", "1"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env={**clean, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path)})
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert out.returncode == 2 and "Traceback" not in out.stderr and len(errors) == 1
    needs_data = _tasks() - _tasks("probe_*")  # probes are generated: only the official tasks need data
    assert f"{len(needs_data)} selected CapTrack task(s)" in errors[0] and "captrack data build" in errors[0]
    assert "CAPTRACK_DATA_DIR" in errors[0] and "captrack_probe_*" in errors[0] and "captrack-probes" in errors[0]
    assert "Running loglikelihood" not in out.stderr  # stopped before the model was asked anything


def test_python_api_stops_before_loading_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    from captrack.errors import DataUnavailableError
    from captrack.lmeval.evaluate import EvalSpec, evaluate_checkpoint

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.delenv("CAPTRACK_DATA_DIR", raising=False)
    spec = EvalSpec(model_args={"pretrained": str(tmp_path / "no-model-here")}, tasks=("captrack_gsm8k_*",))
    with pytest.raises(DataUnavailableError, match=r"4 selected CapTrack task\(s\).*captrack_probe_\*"):
        evaluate_checkpoint(spec, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def _lm_eval(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Stock lm-eval's CLI in a fresh interpreter with the hook installed (as the .pth does)."""
    code = ("import captrack_lmeval_hook, sys; captrack_lmeval_hook.install();"
            "from lm_eval.__main__ import cli_evaluate; sys.argv = ['lm_eval'] + sys.argv[1:]; cli_evaluate()")
    clean = {k: v for k, v in os.environ.items() if k != "CAPTRACK_DATA_DIR"}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={**clean, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", **env})


def test_stock_lm_eval_resolves_a_captrack_alias(tmp_path: Path) -> None:
    """`lm_eval --model hf --model_args pretrained=smollm2-135m-instruct` reads the alias's folder in captrack's cache."""
    import shutil

    from tinymodel import build_tiny_model

    from captrack.models import MARKER_FILE

    converted = tmp_path / "cache" / "models" / "smollm2-135m-instruct"
    build_tiny_model(tmp_path / "tiny", ["What is the capital of France? Answer: Paris"] * 10, seed=0)
    shutil.copytree(tmp_path / "tiny", converted)
    (converted / MARKER_FILE).write_text("{}")
    out = _lm_eval(["--model", "hf", "--model_args", "pretrained=smollm2-135m-instruct,dtype=float32",
                    "--tasks", "captrack_probe_c1_facts", "--limit", "2", "--output_path", str(tmp_path / "out")],
                   tmp_path, {"CAPTRACK_CACHE": str(tmp_path / "cache")})
    assert out.returncode == 0, out.stderr[-2000:]
    results = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())
    assert results["config"]["model_args"]["pretrained"] == str(converted)


def test_stock_lm_eval_names_unknown_tasks_in_one_line(tmp_path: Path) -> None:
    typo = _lm_eval(["--model", "dummy", "--tasks", "captrack_probe_c1_fact"], tmp_path, {})
    assert typo.returncode == 2 and "Traceback" not in typo.stderr, typo.stderr[-2000:]
    line = typo.stderr.strip().splitlines()[-1]
    assert line.startswith("error: unknown task(s) 'captrack_probe_c1_fact' (did you mean 'captrack_probe_c1_facts'")
    assert line.endswith("?); list them with `lm_eval ls tasks` or `captrack tasks`")
    suggested = re.findall(r"'([^']+)'", line.split("did you mean", 1)[1].split("?)", 1)[0])
    assert 1 <= len(suggested) <= 3 and set(suggested) <= _tasks()  # the close match first, only real task names
    old_form = _lm_eval(["--tasks", "list"], tmp_path, {})
    assert old_form.returncode == 2 and "Traceback" not in old_form.stderr
    assert "lm_eval ls tasks" in old_form.stderr.strip().splitlines()[-1]
