"""The `captrack judge` subcommand: judge runs after generation, or calibrate a judge."""

from __future__ import annotations

import argparse
import math
from typing import Any

from captrack.errors import InputError
from captrack.schemas import Concurrency, Count, Requests, Retries, Seconds, cli_type

__all__ = ["add_judge_parser"]


def add_judge_parser(sub: Any) -> None:
    """Add `captrack judge` to the top-level subparsers."""
    judge = sub.add_parser("judge", help="score the judged metrics of lm-eval runs with an LLM judge (after generation)")
    judge.add_argument("runs", nargs="*", metavar="RUN_DIR", help="lm-eval --output_path folders (with --log_samples)")
    judge.add_argument("--judge", required=True, metavar="KIND:NAME",
                       help="openai:MODEL (server from CAPTRACK_JUDGE_URL, key from CAPTRACK_JUDGE_API_KEY) or hf:PATH_OR_ALIAS")
    judge.add_argument("--tasks", action="append", default=[], metavar="GLOB", help="only these tasks (repeatable)")
    judge.add_argument("--judge-budget", type=cli_type(Requests, int), metavar="N",
                       help="send at most N requests (retries count); items past it are NaN with reason 'budget'")
    judge.add_argument("--judge-cache", metavar="FILE", help="SQLite reply cache (default: $CAPTRACK_JUDGE_CACHE or ~/.cache/captrack/judges.sqlite)")
    judge.add_argument("--concurrency", type=cli_type(Concurrency, int), default=4, help="requests in flight at once (HTTP judges)")
    judge.add_argument("--timeout", type=cli_type(Seconds, float), default=60.0,
                       help="seconds per attempt, all of it (connect, headers and body); retries get their own")
    judge.add_argument("--max-reply-bytes", type=cli_type(Count, int), default=1_000_000, metavar="N",
                       help="refuse HTTP replies longer than N bytes unread (NaN, reason too_large; default 1 MB)")
    judge.add_argument("--retries", type=cli_type(Retries, int), default=4, help="retries of transport errors, timeouts, 429 and 5xx")
    judge.add_argument("--backoff", type=cli_type(Seconds, float), default=1.0, help="first retry wait in seconds (doubles, full jitter)")
    judge.add_argument("--max-tokens", type=cli_type(Count, int), default=64, help="longest judge reply, in tokens")
    judge.add_argument("--store", metavar="FILE",
                       help="also re-ingest the judged runs into this DuckDB store (they must be ingested already; labels are kept)")
    judge.add_argument("--calibrate", action="store_true",
                       help="score the team's labelled refusal and claim-support examples: accuracy and Cohen's kappa")
    judge.set_defaults(func=_cmd_judge)


def _cmd_judge(args: argparse.Namespace) -> int:
    from rich.console import Console

    from captrack.judges import Budget, JudgeCache, JudgeOptions, calibrate, judge_runs, make_judge

    if not args.calibrate and not args.runs:
        raise InputError("captrack judge needs RUN_DIR(s), or --calibrate")
    options = JudgeOptions(max_tokens=args.max_tokens, timeout=args.timeout, max_reply_bytes=args.max_reply_bytes,
                           retries=max(0, args.retries),
                           backoff=args.backoff, concurrency=max(1, args.concurrency))
    console = Console(stderr=True, soft_wrap=True)
    judge = make_judge(args.judge, options)
    cache = JudgeCache(args.judge_cache)
    budget = Budget(args.judge_budget)
    try:
        if args.calibrate:
            _print_calibration(calibrate(judge, cache, budget), judge.id, budget.used)
            return 0
        report = judge_runs(args.runs, judge, cache, budget, tasks=args.tasks, progress=True)
    finally:
        judge.close()
        cache.close()
    if not report.written and not report.kept_files:
        from captrack.judges.catalog import all_judged

        declared = sorted({t for j in all_judged() for t in j.tasks})
        raise InputError(f"no task of {', '.join(args.runs)} has judged metrics"
                         + (f" matching --tasks {args.tasks}" if args.tasks else "") + f"; judged tasks: {', '.join(declared)}")
    _print_tallies(report, console)
    if args.store and report.scored:
        _reingest(args.store, args.runs, console)
    console.print(f"judge {report.judge}: {report.unique_inputs} distinct inputs, {report.cache_hits} from the cache, "
                  f"{report.requests} request(s) sent; wrote {len(report.written)} verdict file(s). "
                  "Ingest or compare these runs to use the verdicts.", highlight=False, markup=False)
    print(f"judged {report.scored} of {report.scored + report.failed} verdict(s); failed {report.failed}")
    if not report.scored:
        console.print("error: nothing could be judged (see the NaN reasons above); earlier valid verdicts were kept",
                      highlight=False)
        return 1
    return 0


def _print_tallies(report: Any, console: Any) -> None:
    """One line per (run, task, metric): judged / total, NaN reasons, earlier verdicts kept."""
    for t in report.tallies:
        reasons = ", ".join(f"{code} {n}" for code, n in sorted(t.reasons.items()))
        console.print(f"{t.model} (run {t.run}) {t.task}/{t.metric}: {t.scored}/{t.n} judged"
                      + (f"; NaN: {reasons}" if reasons else "")
                      + (f"; kept {t.kept} earlier verdict(s) instead of NaN" if t.kept else ""), highlight=False, markup=False)
    for path in report.kept_files:
        console.print(f"{path}: left as it was (this pass judged none of its items)", highlight=False, markup=False)


def _reingest(path: str, folders: list[str], console: Any) -> None:
    """Re-ingest judged runs under the labels they were first ingested with."""
    from captrack.labels import VariantLabels
    from captrack.results.runfiles import discover_runs
    from captrack.results.store import Store

    runs = [run for folder in folders for run in discover_runs(folder)]
    with Store(path) as store:
        known = {r["run_id"]: r for r in store.runs()}
        missing = [str(run.results_path) for run in runs if run.run_id not in known]
        if missing:
            raise InputError(f"{path}: run(s) {', '.join(missing)} are not in the store; ingest them first "
                             "(captrack ingest RUN_DIR --store ... --name ...). The verdict files are written.")
        for run in runs:
            row = known[run.run_id]
            labels = VariantLabels(name=row["model"], algorithm=row["algorithm"], family=row["family"], replicate=row["replicate"])
            (result,) = store.ingest([run], labels)
            console.print(f"re-ingested run {result.run_id} ({result.model!r}) into {path}: {result.rows} rows", highlight=False, markup=False)


def _print_calibration(results: list[Any], judge_id: str, requests: int) -> None:
    def fmt(x: float) -> str:
        return "nan" if math.isnan(x) else f"{x:.3f}"

    print(f"judge {judge_id} on captrack's labelled examples ({requests} request(s) sent)")
    print(f"{'set':10s} {'metric':24s} {'prompt':16s} {'n':>4s} {'NaN':>4s} {'accuracy':>9s} {'kappa':>7s}")
    for a in results:
        print(f"{a.set:10s} {a.metric:24s} {a.prompt:16s} {a.n:4d} {a.nan:4d} {fmt(a.accuracy):>9s} {fmt(a.kappa):>7s}"
              + (f"  NaN reasons: {a.reasons}" if a.reasons else ""))
    print("accuracy counts a NaN verdict as wrong; kappa (Cohen's) is over the items with a verdict.")
