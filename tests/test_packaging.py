"""`pip install .` (a real wheel, not only editable) ships the code, task YAMLs and taxonomy."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _build_wheel(tmp_path: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )
    return next(tmp_path.glob("captrack-*.whl"))


def test_wheel_ships_everything_and_resolves_resources(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path / "dist")
    names = set(zipfile.ZipFile(wheel).namelist())
    for source in (ROOT / "captrack").rglob("*.py"):
        assert str(source.relative_to(ROOT)) in names, f"{source} missing from the wheel"
    for task_file in (ROOT / "tasks").rglob("*"):
        if task_file.is_file() and "__pycache__" not in task_file.parts:
            assert f"captrack/_tasks/{task_file.relative_to(ROOT / 'tasks')}" in names
    assert "captrack/_taxonomy/captrack.yaml" in names
    for data in (ROOT / "captrack" / "judges").rglob("*.yaml"):  # judge prompts and the calibration set
        assert str(data.relative_to(ROOT)) in names, f"{data} missing from the wheel"
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    for line in ("captrack = captrack.cli:main", "captrack-eval = captrack.lmeval:main", "[lm_eval.tasks]", "[lm_eval.models]"):
        assert line in text

    # Installed outside the checkout, captrack must find its own copies of tasks/ and taxonomy/.
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    probe = (
        "import captrack.paths as p, captrack.taxonomy as t;"
        "print(p.tasks_dir()); print(len(t.load_taxonomy().capabilities));"
        "import captrack.judges.prompts as jp, captrack.judges.calibration as jc;"
        "print(jp.load_prompt('refusal').ref); print(jc.CALIBRATION_FILE if jc.CALIBRATION_FILE.is_file() else 'missing')"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(target)},
                         capture_output=True, text=True, check=True, timeout=120)
    tasks_dir, n_caps, prompt, calibration = out.stdout.split()
    assert tasks_dir.startswith(str(target)) and n_caps == "17"
    assert prompt == "refusal@1" and calibration.startswith(str(target))


def _fresh_venv(tmp_path: Path, wheel: Path) -> Path:
    """A new venv with only the wheel installed; lm-eval and the other dependencies come from this
    interpreter's site-packages through a plain path line (its .pth files, such as an editable captrack, are not run)."""
    import sysconfig

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--force-reinstall",
                    "--no-index", "-q", str(wheel)], check=True, capture_output=True, timeout=300)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "zz-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # lm-eval's own console script, as pip writes it, run by the new interpreter.
    script = (Path(sys.executable).parent / "lm_eval").read_text().splitlines()[1:]
    (venv / "bin" / "lm_eval").write_text("\n".join([f"#!{python}", *script]) + "\n")
    (venv / "bin" / "lm_eval").chmod(0o755)
    return venv


@pytest.mark.slow
def test_stock_lm_eval_sees_captrack_after_installing_the_wheel(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path / "dist")
    assert {"captrack-lmeval-hook.pth", "captrack_lmeval_hook.py"} <= set(zipfile.ZipFile(wheel).namelist())
    venv = _fresh_venv(tmp_path, wheel)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CAPTRACK_DATA_DIR")}
    env.update(HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(tmp_path / "empty-cache"), OMP_NUM_THREADS="1")
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import sys, captrack; print(captrack.__file__, 'lm_eval' in sys.modules)"],
                           capture_output=True, text=True, check=True, env=env, cwd=tmp_path)
    assert where.stdout.split() == [str(venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
                                        / "site-packages" / "captrack" / "__init__.py"), "False"]  # the wheel's; lm_eval not imported at start

    lm_eval = str(venv / "bin" / "lm_eval")
    ran = subprocess.run([lm_eval, "--model", "dummy", "--tasks", "captrack_probe_c1_facts", "--limit", "3"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "captrack_probe_c1_facts" in ran.stdout and "site-packages/captrack/_tasks" in ran.stderr

    stopped = subprocess.run([lm_eval, "--model", "dummy", "--tasks", "captrack_*", "--limit", "3"],
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    errors = [line for line in stopped.stderr.splitlines() if line.startswith("error:")]
    assert stopped.returncode == 2 and "Traceback" not in stopped.stderr and len(errors) == 1
    assert "captrack data build" in errors[0] and "captrack_probe_*" in errors[0]

    off = subprocess.run([lm_eval, "--model", "dummy", "--tasks", "captrack_probe_c1_facts", "--limit", "3"],
                         capture_output=True, text=True, env={**env, "CAPTRACK_LMEVAL_HOOK": "0"}, cwd=tmp_path, timeout=600)
    assert off.returncode != 0 and "Tasks not found: captrack_probe_c1_facts" in off.stderr
