"""A comparison cancelled with SIGTERM (as CI cancels a job) cleans up as after Ctrl-C, and what one killed with kill -9
left (its staging folder beside --out, its scratch folder in TMPDIR) is removed by the next compare to the same --out,
and nothing else is (issue 51)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from fakeruns import FakeTask, write_run

from captrack.cli import main

REPO = Path(__file__).resolve().parents[2]

# Runs `captrack compare ARGS...` in this process with a second core granted (so that the items-ahead child of
# captrack.report.items_ahead starts at once), and sends itself SIGTERM once the comparison is being written into its
# staging folder: the PIDs of its children at that moment go to the file named first.
DRIVER = """
import os, signal, sys, time
from pathlib import Path
from captrack import cli
from captrack.report import background, items_ahead, writer

items_ahead.SHARED_ROWS = 1
items_ahead.second_core_free = lambda since=None: True
background.usable_cores = lambda: 2
write = writer._write_comparison

def children():
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rpartition(")")[2].split()[1]) == os.getpid():
                    found.append(entry.name)
            except (OSError, ValueError, IndexError):
                pass
    return found

def cancelled(*args, **kwargs):
    Path(sys.argv[1]).write_text(" ".join(children()))
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(60)
    return write(*args, **kwargs)

writer._write_comparison = cancelled
sys.exit(cli.main(sys.argv[2:]))
"""


def _runs(tmp_path: Path) -> tuple[Path, Path]:
    lls = {i: [-0.5 - (i % 3) * 0.4, -1.0 - i * 0.1, -2.0, -3.0] for i in range(40)}
    for index, name in enumerate(("base", "v1")):
        acc = [int((i + index) % 3 > 0) for i in range(40)]
        shifted = {i: [v - 0.3 * index * (i % 2) for v in ll] for i, ll in lls.items()}
        write_run(tmp_path / name, name, [FakeTask("captrack_probe_c1_facts", {"acc": acc}, choice_lls=shifted)])
    return tmp_path / "base", tmp_path / "v1"


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the children in /proc (Linux)")
def test_sigterm_stops_a_comparison_like_ctrl_c_and_leaves_nothing(tmp_path: Path) -> None:
    base, variant = _runs(tmp_path)
    tmp, out, children = tmp_path / "tmp", tmp_path / "out", tmp_path / "children"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "CAPTRACK_WORKERS"}
    env |= {"TMPDIR": str(tmp), "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), env.get("PYTHONPATH"))))}
    done = subprocess.run([sys.executable, "-c", DRIVER, str(children), "compare", "--base", str(base), "--variant",
                           f"v1={variant}", "--out", str(out), "--bootstrap", "20"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 143, done.stderr  # 128 + SIGTERM, as a shell reports it
    assert done.stderr.strip().splitlines()[-1] == "error: stopped (SIGTERM)" and "Traceback" not in done.stderr
    pids = [int(p) for p in children.read_text().split()]
    assert pids  # the items-ahead child was running
    for _ in range(100):  # ended with its parent (PR_SET_PDEATHSIG), reaped by init
        if not any(_running(pid) for pid in pids):
            break
        time.sleep(0.1)
    assert not [pid for pid in pids if _running(pid)]
    assert list(tmp.iterdir()) == []  # the spooled items, the child's folder, the scratch folder: all removed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base", "children", "tmp", "v1"]  # no out, no staging


def _dead_owner() -> tuple[int, str]:
    """The PID and start time of a process that ran and was killed with kill -9."""
    from captrack.processes import process_start

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    start = process_start(child.pid)
    child.kill()
    child.wait()
    return child.pid, start or "x"


def test_a_later_compare_removes_what_a_killed_one_left_and_nothing_else(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from captrack.files import owner_tag
    from captrack.processes import process_start

    base, variant = _runs(tmp_path)
    tmp, out = tmp_path / "tmp", tmp_path / "out"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    pid, start = _dead_owner()
    host, alive = owner_tag().split("-")[0], os.getppid()  # the process that started this test runs
    dead = f"{host}-{pid}-{start}"
    stale = [tmp / f"captrack-{dead}-abcd1234", tmp_path / f".out.captrack-staging-{dead}-abcd1234"]
    kept = [tmp / f"captrack-{host}-{alive}-{process_start(alive) or 'x'}-abcd1234",  # its owner still runs
            tmp / "captrack-items-abcd1234", tmp / f"captrack-{dead}-not-ours",  # not named as captrack names them
            tmp / f"captrack-{'0' if host != '00000000' else '1'}{host[1:]}-{pid}-{start}-abcd1234",  # another host's
            tmp_path / f".out.captrack-staging-{dead}", tmp_path / ".out.abcd1234",  # not named so either
            tmp_path / f".other.captrack-staging-{dead}-abcd1234"]  # another output's
    for folder in stale + kept:
        folder.mkdir()
        (folder / "distribution_items.csv").write_bytes(b"x" * 1000)
    assert main(["compare", "--base", str(base), "--variant", f"v1={variant}", "--out", str(out),
                 "--bootstrap", "20"]) == 0
    assert (out / "summary.json").is_file()
    assert [p for p in stale if p.exists()] == []
    assert [p for p in kept if not (p / "distribution_items.csv").is_file()] == []


def test_an_output_folder_caught_between_the_two_renames_of_a_swap_is_put_back(tmp_path: Path) -> None:
    """kill -9 between moving the old folder aside and moving the new one in: the old one comes back, whole."""
    from captrack.files import owner_tag, remove_stale_staging, staged_folder

    pid, start = _dead_owner()
    out = tmp_path / "out"
    replaced = tmp_path / f".out.captrack-replaced-{owner_tag().split('-')[0]}-{pid}-{start}-abcd1234"
    (replaced / "old").mkdir(parents=True)
    (replaced / "old" / "report.md").write_text("the previous comparison")
    assert remove_stale_staging(out) == [replaced]
    assert (out / "report.md").read_text() == "the previous comparison" and not replaced.exists()
    with staged_folder(out) as staging:
        assert staging.name.startswith(f".out.captrack-staging-{owner_tag()}-")
        (staging / "report.md").write_text("the new one")
    assert (out / "report.md").read_text() == "the new one"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
