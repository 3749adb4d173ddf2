"""`captrack run` against a killed parent, a second runner and a full disk; prints what it saw.

    .venv/bin/python tests/benchmarks/crash_checks.py kill      # kill -9 mid-evaluation, rerun, compare CSVs
    .venv/bin/python tests/benchmarks/crash_checks.py twice     # two runs on one work folder (refused / --wait)
    .venv/bin/python tests/benchmarks/crash_checks.py full DIR  # DIR: a small tmpfs (mount -t tmpfs -o size=96m tmpfs DIR)

Every check runs a two-checkpoint experiment of tiny random models (tests/tinymodel.py) with worker
processes (CAPTRACK_WORKERS=2), and compares the leaderboard's CSVs byte for byte with those of an
uninterrupted reference run. `full` fills DIR (a real ENOSPC from the file system) exactly when the
stage marker is written, then exactly when the ingest stage starts, and checks that the earlier store
is never lost and that a run with the space given back finishes with the same outputs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
PY = sys.executable
ENV = {**os.environ, "CAPTRACK_WORKERS": "2", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
TASKS = "captrack_probe_c1_facts, captrack_probe_c2_logic"


def models(root: Path) -> tuple[Path, Path]:
    from tinymodel import build_tiny_model

    texts = ["What is the capital of France? Answer: Paris", "Question: the opposite of hot is cold"] * 20
    return build_tiny_model(root / "a", texts, seed=0), build_tiny_model(root / "b", texts, seed=1)


def manifest(folder: Path, base: Path, variant: Path, work: Path, limit: int = 12) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "exp.yaml"
    path.write_text(
        f"name: t\nworkdir: {work}\nleaderboard: {work}/board\ntasks: [{TASKS}]\nlimit: {limit}\nbatch_size: 2\n"
        f"base: {{name: base, model_args: {{pretrained: {base}}}, family: tiny}}\n"
        f"variants:\n  - {{name: other, model_args: {{pretrained: {variant}}}, algorithm: SFT, family: tiny}}\n")
    return path


def run(path: Path, *extra: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([PY, "-m", "captrack.cli", "run", str(path), *extra], capture_output=True, text=True, env=ENV)
    if check and out.returncode != 0:
        raise SystemExit(f"run failed ({out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out


def csvs(board: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(board.glob("*.csv"))}


def children(pid: int) -> list[int]:
    """Processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] if Path(f"/proc/{pid}/stat").exists() else "X"
    return state != "Z"


def _last_line(path: Path) -> str:
    parts = [x.strip() for x in path.read_text(errors="replace").replace("\r", "\n").splitlines() if x.strip()]
    return parts[-1][:100] if parts else ""


def reference(root: Path, a: Path, b: Path) -> dict[str, str]:
    start = time.perf_counter()
    run(manifest(root / "ref", a, b, root / "ref" / "work"))
    print(f"reference run: {time.perf_counter() - start:.1f} s, {len(csvs(root / 'ref' / 'work' / 'board'))} CSVs")
    return csvs(root / "ref" / "work" / "board")


def check_kill(root: Path) -> None:
    a, b = models(root / "models")
    want = reference(root, a, b)
    path = manifest(root / "killed", a, b, root / "killed" / "work")
    parent = subprocess.Popen([PY, "-m", "captrack.cli", "run", str(path)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=ENV)
    workers: list[int] = []
    deadline = time.time() + 300
    while time.time() < deadline and len(workers) < 2:
        time.sleep(0.5)
        workers = [p for p in children(parent.pid) if "captrack.pipeline.stage_job" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]
    logs_dir = root / "killed" / "work" / "logs"
    while time.time() < deadline and not any("requests" in p.read_text(errors="replace") for p in logs_dir.glob("*.log")):
        time.sleep(0.2)  # mid-evaluation: a worker has loaded the model and lm-eval is answering requests
    time.sleep(1.0)
    logs = {p.name: _last_line(p) for p in logs_dir.glob("*.log")}
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    print(f"kill -9 of parent {parent.pid} with {len(workers)} worker(s) {workers} running; last log lines {logs}")
    time.sleep(3)
    left = [w for w in workers if alive(w)]
    print(f"3 s later, workers still alive: {left or 'none'}")
    markers = sorted(p.name for p in (root / "killed" / "work" / "markers").glob("eval-*.json"))
    print(f"evaluation markers after the kill: {markers or 'none'}")
    start = time.perf_counter()
    out = run(path)
    got = csvs(root / "killed" / "work" / "board")
    same = got == want
    print(f"rerun: exit {out.returncode} in {time.perf_counter() - start:.1f} s; CSVs byte-identical to the reference: "
          f"{same} ({sum(got[k] == want.get(k) for k in got)}/{len(want)})")
    if left or not same:
        raise SystemExit("FAILED")


def check_twice(root: Path) -> None:
    a, b = models(root / "models")
    path = manifest(root / "twice", a, b, root / "twice" / "work")
    first = subprocess.Popen([PY, "-m", "captrack.cli", "run", str(path)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=ENV)
    lock = root / "twice" / "work" / ".captrack-run.lock"
    while not (lock.is_file() and lock.read_text().strip()):
        time.sleep(0.2)
    second = run(path, check=False)
    print(f"second run beside the first: exit {second.returncode}: {second.stderr.strip().splitlines()[-1]}")
    waiting = subprocess.Popen([PY, "-m", "captrack.cli", "run", str(path), "--wait"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=ENV)
    first.communicate()
    w_out, _ = waiting.communicate()
    said = [line for line in w_out.splitlines() if "waiting" in line]
    reused = sum("unchanged, reusing" in line for line in w_out.splitlines())
    print(f"first run: exit {first.returncode}; --wait run: exit {waiting.returncode}, said {said[:1]}, "
          f"stages reused {reused}")
    store_runs = subprocess.run([PY, "-c", "import duckdb,sys; c=duckdb.connect(sys.argv[1], read_only=True); "
                                 "print(c.execute('select model, count(*) from runs group by model order by model').fetchall())",
                                 str(root / "twice" / "work" / "store.duckdb")], capture_output=True, text=True)
    print(f"runs per model in the store: {store_runs.stdout.strip()}")
    if second.returncode != 1 or first.returncode != 0 or waiting.returncode != 0:
        raise SystemExit("FAILED")


_FILL_AT = r"""
import sys
from pathlib import Path
from captrack.cli import main
import captrack.pipeline.runner as runner
import captrack.results.publish as publish

where, disk = sys.argv[1], Path(sys.argv[2])
leave = 768 << 10 if where == "ingest-partial" else 0  # room to create the new store, not to finish it

def fill():
    with open(disk / "filler", "ab") as handle:
        try:
            while True:
                handle.write(b"\0" * (1 << 16))
                handle.flush()
        except OSError as exc:
            print(f"filled {disk}: {exc.strerror}", flush=True)
    if leave:
        with open(disk / "filler", "r+b") as handle:
            handle.truncate(max(0, (disk / "filler").stat().st_size - leave))

if where == "marker":
    original = runner.Stage.write_marker
    def write_marker(self):
        if "evaluate" in self.title or "compare" in self.title:
            fill()
        return original(self)
    runner.Stage.write_marker = write_marker
else:
    original_store = runner._ingest
    def ingest(experiment):
        fill()
        return original_store(experiment)
    runner._ingest = ingest
sys.exit(main(["run", sys.argv[3]]))
"""


def _store_rows(store: Path) -> str:
    out = subprocess.run([PY, "-c", "import duckdb,sys; c=duckdb.connect(sys.argv[1], read_only=True); "
                          "print(c.execute('select count(*) from samples').fetchone()[0])", str(store)],
                         capture_output=True, text=True)
    return out.stdout.strip() or out.stderr.strip().splitlines()[-1]


def check_full(root: Path, disk: Path) -> None:
    a, b = models(root / "models")
    want = reference(root, a, b)
    work = disk / "work"
    shutil.rmtree(work, ignore_errors=True)
    path = manifest(root / "full", a, b, work)
    for where in ("marker", "ingest", "ingest-partial"):
        (disk / "filler").unlink(missing_ok=True)
        store = work / "store.duckdb"
        before = hashlib.sha256(store.read_bytes()).hexdigest()[:12] if store.exists() else "none"
        if where.startswith("ingest"):
            (work / "markers" / "ingest.json").unlink()  # the ingest stage runs again, over a good store
        out = subprocess.run([PY, "-c", _FILL_AT, where, str(disk), str(path)], capture_output=True, text=True, env=ENV)
        err = (out.stderr.strip().splitlines() or ["-"])[-1]
        print(f"[{where}] run with the disk filled at the {where}: exit {out.returncode}; last line: {err[:300]}")
        if "filled" not in out.stdout:
            print(out.stdout[-2000:], out.stderr[-2000:])
        markers = {p.name: p.read_text()[:1] for p in (work / "markers").glob("*.json")} if (work / "markers").is_dir() else {}
        bad = [k for k, v in markers.items() if v != "{"]
        after = hashlib.sha256(store.read_bytes()).hexdigest()[:12] if store.exists() else "none"
        print(f"[{where}] markers unreadable: {bad or 'none'}; store before {before}, after {after} "
              f"({_store_rows(store) if store.exists() else '-'} rows); leftovers: "
              f"{sorted(p.name for p in work.glob('store.tmp*')) or 'none'}")
        (disk / "filler").unlink(missing_ok=True)
        start = time.perf_counter()
        again = run(path, check=False)
        got = csvs(work / "board") if (work / "board").is_dir() else {}
        print(f"[{where}] space given back, rerun: exit {again.returncode} in {time.perf_counter() - start:.1f} s; "
              f"CSVs byte-identical to the reference: {got == want} ({sum(got.get(k) == v for k, v in want.items())}/{len(want)})")
        if again.returncode != 0 or got != want or bad:
            raise SystemExit(f"FAILED\n{again.stdout[-2000:]}\n{again.stderr[-2000:]}")


def main() -> None:
    what = sys.argv[1] if len(sys.argv) > 1 else "kill"
    root = Path(tempfile.mkdtemp(prefix="captrack-crash-"))
    try:
        if what == "kill":
            check_kill(root)
        elif what == "twice":
            check_twice(root)
        elif what == "full":
            check_full(root, Path(sys.argv[2]))
        else:
            raise SystemExit(__doc__)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
