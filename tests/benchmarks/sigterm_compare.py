"""A large `captrack compare` cancelled the way CI cancels it (SIGTERM) or killed (kill -9): what is left behind.

    python tests/benchmarks/sigterm_compare.py [--variants 2 --tasks 10 --items 12000 --workdir /tmp/captrack-sigterm]

Builds a store of base + N variants x T tasks x I items with bench_analysis.py's generator and ingest (reused when
there), then, with TMPDIR pointed at a folder of its own and a second core granted (CAPTRACK_THREADS=2,
CAPTRACK_WORKERS=2, so that the items-ahead child of captrack.report.items_ahead starts even on a busy machine):

  1. `captrack compare --store ... --out OUT`, SIGTERM once the items-ahead child runs: the exit status, the lines
     on stderr, the captrack processes still running, and what is left in TMPDIR and beside OUT;
  2. the same compare, kill -9 once its staging folder beside OUT exists: what is left (kill -9 cannot be handled);
  3. the same compare again, run to the end: what is left in TMPDIR and beside OUT after it.

It prints what it found and, last, one line ``RESULT {...}``; it asserts nothing. The figures the issue asks for:
step 1 exits 143 (or says one line) with no process left, and after step 3 no ``captrack-*`` folder in TMPDIR and no
staging folder beside OUT.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

import bench_analysis  # noqa: E402  (this folder's generator)


def _descendants(pid: int) -> set[int]:
    """The PIDs of `pid`'s children, grandchildren, ... (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in found:
                found.add(child)
                todo.append(child)
    return found


def _running(pids: set[int]) -> list[str]:
    """The command lines of those of `pids` that still run (zombies left out)."""
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if state != "Z":
            alive.append(f"{pid} {cmdline.strip()}")
    return alive


def _left(tmp: Path, out: Path) -> dict[str, list[str]]:
    return {"tmpdir": sorted(p.name for p in tmp.iterdir()),
            "beside_out": sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))}


def _wait_for(check: Any, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return False


def _items_ahead_running(tmp: Path, pid: int) -> bool:
    folders = [p for p in tmp.glob("captrack-*/items-csv-*")]
    children = _running(_descendants(pid))
    return bool(folders) and any("captrack.report.background" in c for c in children)


def _start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as handle:
        return subprocess.Popen(argv, env=env, stdout=handle, stderr=handle)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--items", type=int, default=12000)
    parser.add_argument("--workdir", default="/tmp/captrack-sigterm")
    args = parser.parse_args(argv)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(HERE / "bench_analysis.py"), "--variants", str(args.variants), "--tasks",
                    str(args.tasks), "--items", str(args.items), "--workdir", str(work), "--phases", "ingest"],
                   check=True, stdout=subprocess.DEVNULL)
    store = bench_analysis.store_path(args)
    models = bench_analysis.model_names(args.variants)
    rows = args.variants * args.tasks * args.items
    tmp, out = work / "tmp", work / "out" / "compare"
    tmp.mkdir(exist_ok=True)
    out.parent.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp), "CAPTRACK_THREADS": "2", "CAPTRACK_WORKERS": "2",
           "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)}
    command = [sys.executable, "-m", "captrack.cli", "compare", "--store", str(store), "--base", models[0],
               *[a for m in models[1:] for a in ("--variant", m)], "--out", str(out)]
    print(f"{rows:,} variant rows in {store}; TMPDIR={tmp}; OUT={out}", flush=True)
    result: dict[str, Any] = {"rows": rows}

    # 1. SIGTERM while the items-ahead child runs
    process = _start(command, env, work / "sigterm.log")
    seen = _wait_for(lambda: _items_ahead_running(tmp, process.pid), 300)
    children = _descendants(process.pid)
    process.send_signal(signal.SIGTERM)
    code = process.wait()
    time.sleep(1.0)  # children ended by the kernel (PR_SET_PDEATHSIG) are reaped by init
    stderr = [line for line in (work / "sigterm.log").read_text(errors="replace").splitlines() if line.strip()]
    last = stderr[-1].split("\r")[-1] if stderr else ""
    result |= {"items_ahead_running_at_sigterm": seen, "children_at_sigterm": len(children), "sigterm_exit": code,
               "sigterm_last_line": last, "left_running": _running(children | {process.pid}),
               "after_sigterm": _left(tmp, out)}
    print(f"1. SIGTERM with the items-ahead child running ({seen}, {len(children)} child process(es)): exit {code}, "
          f"last line {last!r}; still running: {result['left_running']}; left: {result['after_sigterm']}", flush=True)

    # 2. kill -9 once the staging folder exists
    process = _start(command, env, work / "kill9.log")
    staged = _wait_for(lambda: any(out.parent.glob(f".{out.name}.captrack-staging-*")), 300)
    process.kill()
    process.wait()
    time.sleep(1.0)
    result |= {"staging_at_kill9": staged, "after_kill9": _left(tmp, out)}
    print(f"2. kill -9 with the staging folder there ({staged}): left {result['after_kill9']}", flush=True)

    # 3. the next compare to the same --out
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    result |= {"next_exit": done.returncode, "after_next": _left(tmp, out), "out_files": len(list(out.iterdir()))
               if out.is_dir() else 0}
    print(f"3. the next compare: exit {done.returncode}, {result['out_files']} files in OUT; left "
          f"{result['after_next']}", flush=True)
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
