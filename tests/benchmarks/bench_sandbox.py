"""Benchmark: the code sandbox's per-item overhead, and HumanEval's 164 problems end to end.

    OMP_NUM_THREADS=1 .venv/bin/python tests/benchmarks/bench_sandbox.py [--trivial 50] [--workers N]

Prints: the wall time of a trivial program (``pass``) run alone, one after the other (the cost of one
sandbox: bubblewrap's namespaces and mounts, interpreter start, harness, seccomp); then HumanEval's
canonical solutions (all must pass) and the same prompts with the body replaced by ``pass`` (all must
fail), each scored through captrack's code scorer in parallel sandboxes, with counts and wall time.
The data is read at run time from $CAPTRACK_SHARED/data/humaneval/HumanEval.jsonl.gz (default
/work/shared); the script exits with a message when it is absent.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from captrack.metrics.code import run_tests_batch
from captrack.metrics.sandbox import SandboxResult, run_program, sandbox_kind


def _problems() -> list[dict[str, Any]]:
    path = Path(os.environ.get("CAPTRACK_SHARED", "/work/shared")) / "data/humaneval/HumanEval.jsonl.gz"
    if not path.exists():
        sys.exit(f"{path} not found: set CAPTRACK_SHARED to the folder holding data/humaneval/")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _doc(item: dict[str, Any]) -> dict[str, Any]:
    """A row as captrack's HumanEval config builds it: tests ending in check(entry point)."""
    return {"id": item["task_id"], "gold": f"{item['test']}\n\ncheck({item['entry_point']})\n",
            "entry_point": item["entry_point"], "code_prompt": item["prompt"]}


def _timed(count: int, run: Callable[[], object]) -> str:
    run()  # warm the file cache
    times = []
    for _ in range(count):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return f"median {statistics.median(times) * 1000:.0f} ms, p90 {sorted(times)[int(0.9 * (count - 1))] * 1000:.0f} ms"


def _trivial(count: int) -> None:
    bare = [sys.executable, "-S", "-c", "pass"]
    print(f"bare interpreter start (python -S -c pass, no sandbox), {count} runs: "
          f"{_timed(count, lambda: subprocess.run(bare, check=True))}")
    print(f"trivial program in the sandbox, {count} runs one at a time: "
          f"{_timed(count, lambda: _check(run_program('pass')))} per item")


def _check(result: SandboxResult) -> None:
    if not result.passed:
        sys.exit(f"the trivial program did not pass: {result}")


def _humaneval(problems: list[dict[str, Any]], label: str, bodies: list[str], expect_pass: bool) -> None:
    docs = [_doc(item) for item in problems]
    responses = [f"```python\n{item['prompt']}{body}\n```" for item, body in zip(problems, bodies, strict=True)]
    start = time.perf_counter()
    results = run_tests_batch(docs, responses)
    wall = time.perf_counter() - start
    passed = sum(r.passed for r in results)
    statuses: dict[str, int] = {}
    for r in results:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    print(f"HumanEval {label}: {passed}/{len(results)} passed ({statuses}), wall {wall:.1f} s, "
          f"{wall / len(results) * 1000:.0f} ms per item with {min(os.cpu_count() or 1, len(results))} workers")
    wrong = [(d["id"], r) for d, r in zip(docs, results, strict=True) if r.passed != expect_pass]
    for doc_id, result in wrong[:5]:
        print(f"  unexpected: {doc_id}: {result.status} {result.detail[:200]!r}")
    if wrong:
        sys.exit(f"{len(wrong)} items did not {'pass' if expect_pass else 'fail'}")


def main() -> None:
    """Print the sandbox's per-item overhead and HumanEval's canonical and `pass` results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trivial", type=int, default=50, help="sequential runs of a trivial program")
    args = parser.parse_args()
    print(f"sandbox: {sandbox_kind()}, {os.cpu_count()} CPU cores, Python {sys.version.split()[0]}")
    _trivial(args.trivial)
    problems = _problems()
    _humaneval(problems, "canonical solutions", [p["canonical_solution"] for p in problems], expect_pass=True)
    _humaneval(problems, "bodies replaced by `pass`", ["    pass\n"] * len(problems), expect_pass=False)


if __name__ == "__main__":
    main()
