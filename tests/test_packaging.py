"""`pip install .` (a real wheel, not only editable) ships the code, task YAMLs and taxonomy."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

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
