"""Benchmark: how long one judge request lasts and how much memory it takes when the server misbehaves.

    OMP_NUM_THREADS=1 .venv/bin/python tests/benchmarks/bench_judge_faults.py
    .venv/bin/python tests/benchmarks/bench_judge_faults.py --timeout 3 --retries 2 --flood-mb 150

Against the scripted server of tests/judges/chat_server.py on 127.0.0.1: a reply trickled one byte
every 0.5 s, a body streamed without end (``--flood-mb``), and a prompt answer for comparison. For
each it prints the wall time of one `ask` (retries included), the bound timeout × (retries + 1) +
the longest backoff, the NaN reason, and the growth of this process's peak resident memory.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judges"))

from chat_server import chat_server

from captrack.judges import Budget, JudgeError, JudgeOptions, make_judge
from captrack.judges.retry import ask


def _measure(options: JudgeOptions, marker: str) -> tuple[float, str, float]:
    """(seconds, outcome, peak RSS growth in MiB) of one `ask` whose input carries `marker`."""
    process = psutil.Process()
    start_rss = process.memory_info().rss
    peak = [start_rss]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], process.memory_info().rss)
            stop.wait(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    judge = make_judge("openai:bench", options)
    start = time.monotonic()
    try:
        outcome = "reply " + repr(ask(judge, [{"role": "user", "content": f"REFUSAL or COMPLIANCE? {marker}"}], Budget())[:20])
    except JudgeError as exc:
        outcome = exc.code
    elapsed = time.monotonic() - start
    judge.close()
    stop.set()
    sampler.join()
    return elapsed, outcome, (peak[0] - start_rss) / 2**20


def main() -> None:
    """Print the three cases."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--retries", type=int, default=1)
    parser.add_argument("--backoff", type=float, default=0.05)
    parser.add_argument("--flood-mb", type=int, default=150)
    args = parser.parse_args()
    options = JudgeOptions(timeout=args.timeout, retries=args.retries, backoff=args.backoff, concurrency=1)
    bound = args.timeout * (args.retries + 1) + sum(args.backoff * 2**i for i in range(args.retries))
    with chat_server(trickle_seconds=0.5, flood_bytes=args.flood_mb * 2**20) as server:
        os.environ["CAPTRACK_JUDGE_URL"] = server.url
        os.environ["CAPTRACK_JUDGE_API_KEY"] = server.api_key
        _measure(options, "")  # warm-up: imports and the first connection are not measured
        print(f"timeout {args.timeout:g} s, retries {args.retries}, backoff {args.backoff:g} s: bound {bound:.2f} s; "
              f"reply cap {options.max_reply_bytes} bytes")
        print(f"{'case':28s} {'seconds':>8s} {'outcome':>20s} {'RSS growth MiB':>15s} {'requests':>9s}")
        for name, marker in (("prompt reply", ""), ("trickle (1 byte / 0.5 s)", "<<trickle>>"),
                             (f"flood ({args.flood_mb} MiB)", "<<flood>>")):
            before = server.requests
            elapsed, outcome, growth = _measure(options, marker)
            print(f"{name:28s} {elapsed:8.2f} {outcome:>20s} {growth:15.1f} {server.requests - before:9d}")


if __name__ == "__main__":
    main()
