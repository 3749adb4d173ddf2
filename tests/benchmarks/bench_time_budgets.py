"""Issue 52's time budgets, as figures: `captrack run --quick` (≤ 3 min) and `make demo` (≤ 15 min) from scratch.

    python tests/benchmarks/bench_time_budgets.py [--what quick|demo|both] [--emulate-avx2] [--keep DIR]

Each run starts in an empty folder (the embedded demo writes under the current folder), so training,
evaluation, ingest, compare and the board all run; only the dequantized base model in the user's cache is
reused (as on any second run). It prints the CPU (model name, its AVX-512/AMX flags, cores), the dtype that
`dtype: auto` picks, the load average before and after, each wall time against its budget, and for the full
demo the capability verdicts that differ from the committed board (leaderboards/demo/capabilities.csv).
It asserts nothing.

`--emulate-avx2` approximates a CPU without AVX-512 on this one: torch's kernels are capped at AVX2
(`ATEN_CPU_CAPABILITY=avx2`), oneDNN's at AVX2 (`ONEDNN_MAX_CPU_ISA=AVX2`), and captrack is shown the CPU's
flags without avx512*/amx* (`CAPTRACK_CPU_FLAGS`), so `dtype: auto` picks float32 as it would there. The
figures it prints are said to be emulated: the memory system and clock are still this host's.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUDGETS = {"quick": 180.0, "demo": 900.0}


def _cpu() -> tuple[str, list[str]]:
    text = Path("/proc/cpuinfo").read_text()
    lines = text.splitlines()
    model = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "unknown")
    flags = next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), [])
    return model, flags


def _environment(emulate_avx2: bool, flags: list[str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "CAPTRACK_THREADS")}
    if emulate_avx2:
        env["ATEN_CPU_CAPABILITY"] = "avx2"
        env["ONEDNN_MAX_CPU_ISA"] = "AVX2"
        env["CAPTRACK_CPU_FLAGS"] = " ".join(f for f in flags if not f.startswith(("avx512", "amx")))
    return env


def _auto_dtype(env: dict[str, str]) -> str:
    code = ("from captrack.pipeline.dtype_choice import choose_dtype; c = choose_dtype('auto'); "
            "print(getattr(c, 'dtype', c), '|', getattr(c, 'reason', ''))")
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() or f"(not read: {done.stderr.strip().splitlines()[-1:]})"


def _run(args: list[str], env: dict[str, str], folder: Path) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "captrack.cli", "run", *args], env=env, cwd=folder,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        print(f"    exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}", flush=True)
    return time.perf_counter() - started, done.returncode


def _verdicts(path: Path) -> dict[tuple[str, str, str], str]:
    with path.open(newline="") as handle:
        return {(r["variant"], r["level"], r["key"]): r["verdict"] for r in csv.DictReader(handle)}


def _compare_with_committed(folder: Path) -> None:
    made = sorted(folder.rglob("capabilities.csv"))
    made = [p for p in made if "quick" not in str(p)]
    if not made:
        print("    no capabilities.csv was written: nothing to compare")
        return
    committed, rebuilt = _verdicts(ROOT / "leaderboards" / "demo" / "capabilities.csv"), _verdicts(made[0])
    differ = [(key, committed[key], rebuilt.get(key)) for key in committed if rebuilt.get(key) != committed[key]]
    print(f"    verdicts equal to the committed board: {len(committed) - len(differ)} of {len(committed)}"
          f" ({made[0].relative_to(folder)})")
    for (variant, level, key), old, new in differ:
        print(f"    differs: {variant} {level} {key}: committed {old}, rebuilt {new}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--what", choices=("quick", "demo", "both"), default="quick")
    parser.add_argument("--emulate-avx2", action="store_true")
    parser.add_argument("--keep", type=Path, help="run in this (empty) folder and keep it")
    args = parser.parse_args()
    model, flags = _cpu()
    wide = sorted({f for f in flags if f.startswith(("avx512", "amx"))})
    env = _environment(args.emulate_avx2, flags)
    print(f"CPU: {model}; {len(os.sched_getaffinity(0))} usable cores; avx2 {'yes' if 'avx2' in flags else 'no'}; "
          f"AVX-512/AMX flags: {', '.join(wide) or 'none'}", flush=True)
    if args.emulate_avx2:
        print("EMULATED AVX2-only host: ATEN_CPU_CAPABILITY=avx2, ONEDNN_MAX_CPU_ISA=AVX2, CAPTRACK_CPU_FLAGS without "
              "avx512*/amx* (clock and memory are this host's)", flush=True)
    print(f"dtype: auto picks: {_auto_dtype(env)}", flush=True)
    whats = ("quick", "demo") if args.what == "both" else (args.what,)
    for what in whats:
        folder = args.keep or Path(tempfile.mkdtemp(prefix=f"captrack-budget-{what}-"))
        folder.mkdir(parents=True, exist_ok=True)
        load = os.getloadavg()[0]
        wall, code = _run(["--quick"] if what == "quick" else [], env, folder)
        verdict = "within" if code == 0 and wall <= BUDGETS[what] else "OVER"
        print(f"{what}: {wall:7.1f} s wall, exit {code}, budget {BUDGETS[what]:.0f} s: {verdict}; load average "
              f"{load:.2f} before, {os.getloadavg()[0]:.2f} after; folder {folder}", flush=True)
        if what == "demo" and code == 0:
            _compare_with_committed(folder)


if __name__ == "__main__":
    main()
