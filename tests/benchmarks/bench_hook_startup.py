"""What the lm-eval hook (captrack-lmeval-hook.pth) costs every Python start: prints import-time figures.

Run with an interpreter whose site-packages holds the .pth (a `pip install` of captrack):
    python tests/benchmarks/bench_hook_startup.py [--runs 20]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys


def _hook_microseconds(python: str) -> int | None:
    """Cumulative import time of captrack_lmeval_hook at interpreter start (None: the .pth is not installed)."""
    out = subprocess.run([python, "-X", "importtime", "-c", "pass"], capture_output=True, text=True, check=True).stderr
    for line in out.splitlines():
        if line.rstrip().endswith("captrack_lmeval_hook"):
            return int(line.split("|")[1])
    return None


def main() -> None:
    """Print the median and spread of the hook's import time over several interpreter starts."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    times = [_hook_microseconds(args.python) for _ in range(args.runs)]
    found = [t for t in times if t is not None]
    if not found:
        print(f"{args.python}: captrack-lmeval-hook.pth is not installed in its site-packages")
        return
    print(f"captrack_lmeval_hook import at start, {len(found)} runs: median {statistics.median(found) / 1000:.2f} ms, "
          f"min {min(found) / 1000:.2f} ms, max {max(found) / 1000:.2f} ms (lm_eval, torch, captrack not imported)")


if __name__ == "__main__":
    main()
