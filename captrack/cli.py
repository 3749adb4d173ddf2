"""The `captrack` command: tasks, ingest, import, compare, judge, taxonomy, demo."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from captrack import __version__
from captrack.cli_parser import FAIL_ON_HELP, CaptrackParser, print_error
from captrack.errors import CaptrackError, InputError
from captrack.gate.cli import add_gate_options, add_gate_parser, gate_comparisons, item_limit
from captrack.pipeline.run_command import add_run_parser, cmd_run
from captrack.processes import Terminated, stop_signals_as_interrupt
from captrack.schemas import (
    MAX_BOOTSTRAP,
    Bootstrap,
    Count,
    DocField,
    Epoch,
    Margin,
    Seed,
    Step,
    cli_type,
)

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `captrack` command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with stop_signals_as_interrupt():  # SIGTERM (how CI cancels a job) cleans up as Ctrl-C does
            result = args.func(args)
    except KeyboardInterrupt as exc:
        resume = "; run the same command again to resume (finished stages are kept)" if args.func is cmd_run else ""
        cause = "SIGTERM" if isinstance(exc, Terminated) else "Ctrl-C"
        print_error(f"stopped ({cause}){resume}")
        return 143 if isinstance(exc, Terminated) else 130  # 128 + the signal, as a shell reports a process it stopped
    except CaptrackError as exc:
        print_error(str(exc))
        return 1
    except Exception as exc:
        from captrack.failures import failure_message

        message = failure_message(exc)
        if message is None:
            raise
        print_error(message)
        return 1
    return int(result or 0)


def _parser() -> argparse.ArgumentParser:
    parser = CaptrackParser(prog="captrack", description="What did post-training do to your model's capabilities?")
    parser.add_argument("--version", action="version", version=f"captrack {__version__}")
    sub = parser.add_subparsers(metavar="COMMAND")

    from captrack.lmeval.cli import add_tasks_parser

    add_tasks_parser(sub)
    taxonomy = sub.add_parser("taxonomy", help="show the CAN/WILL/HOW taxonomy and its members")
    taxonomy.set_defaults(func=_cmd_taxonomy)
    _add_results_parsers(sub)

    from captrack.official.cli import add_data_parser

    add_data_parser(sub)

    from captrack.theory.cli import add_theory_parser

    add_theory_parser(sub)
    _add_plan_parser(sub)

    from captrack.imports.cli import add_import_parser

    add_import_parser(sub)

    from captrack.judges.cli import add_judge_parser

    add_judge_parser(sub)
    add_gate_parser(sub)

    add_run_parser(sub)
    return parser


def _add_results_parsers(sub: Any) -> None:
    """`ingest`, `compare` and `leaderboard`."""
    ingest = sub.add_parser("ingest", help="read lm-eval runs (--log_samples) into a DuckDB store")
    ingest.add_argument("runs", nargs="+", metavar="RUN_DIR", help="lm-eval --output_path folders or results files")
    ingest.add_argument("--store", required=True, help="DuckDB file (created if missing)")
    ingest.add_argument("--name", help="model name to file the runs under (default: lm-eval's model name)")
    ingest.add_argument("--algorithm", default="", help="post-training algorithm label (SFT, DPO, RL, ...)")
    ingest.add_argument("--family", default="", help="model family label")
    ingest.add_argument("--size", default="", help="model size label (e.g. 135M)")
    ingest.add_argument("--data", default="", help="post-training data label")
    ingest.add_argument("--replicate", type=cli_type(Seed, int), help="replicate number (default: the run's --seed)")
    ingest.add_argument("--step", type=cli_type(Step, int),
                        help="training step of the checkpoint (default: its trainer_state.json's)")
    ingest.add_argument("--epoch", type=cli_type(Epoch, float), help="training epoch of the checkpoint (with --step)")
    ingest.add_argument("--rename", action="store_true",
                        help="a run already stored under another model name moves to --name (default: refused)")
    ingest.set_defaults(func=_cmd_ingest)

    compare = sub.add_parser("compare", help="drift, transitions and capability aggregates of variants vs a base")
    compare.add_argument("--base", help="base run folder (or, with --store, the base model name)")
    compare.add_argument("--base-name", default="base", help="name of the base in outputs (folder mode)")
    compare.add_argument("--variant", action="append", default=[], metavar="NAME=DIR[:ALGORITHM]",
                         help="a variant; with --store give NAME (its labels as ingested; :ALGORITHM only for one "
                              "ingested without --algorithm). Repeat for several.")
    compare.add_argument("--store", help="read base and variants from this DuckDB store")
    compare.add_argument("--scores", help="tidy CSV of aggregated scores (model, task, metric, value, base)")
    compare.add_argument("--out", required=True, help="output folder")
    compare.add_argument("--bootstrap", type=cli_type(Bootstrap, int), default=1000,
                         help=f"bootstrap resamples for CIs (0: none; at most {MAX_BOOTSTRAP:,})")
    compare.add_argument("--seed", type=cli_type(Seed, int), default=0, help="bootstrap seed")
    compare.add_argument("--allow-partial", action="store_true", help="analyse the intersection of mismatched runs")
    compare.add_argument("--margin", type=cli_type(Margin, float), metavar="M",
                         help="verdicts' equivalence margin (points in (0, 100]; default 5)")
    compare.add_argument("--assume-discordance", type=_share, metavar="PSI", dest="assume_discordance",
                         help="power.csv also plans each binary MDE with this share of items flipping either way "
                              "(e.g. 0.1 from an earlier run), beside the independent-outcomes worst case")
    compare.add_argument("--fail-on", choices=["regressed", "inconclusive"], help=FAIL_ON_HELP)
    add_gate_options(compare)
    compare.add_argument("--cluster", type=cli_type(DocField), metavar="FIELD", help="doc field of non-independent items: clustered CIs")
    compare.add_argument("--strict", action="store_true",
                         help="refuse (exit 1) when base and variant were evaluated with different settings")
    compare.add_argument("--by", action="append", default=[], metavar="FIELD", type=cli_type(DocField),
                         help="also break transitions and drift down by this doc field (e.g. category) into by_FIELD.csv; repeatable")
    compare.add_argument("--taxonomy", metavar="EXTRA.yaml",
                         help="add your own lm-eval tasks to CapTrack's capabilities (schema of taxonomy/captrack.yaml)")
    compare.set_defaults(func=_cmd_compare)

    board = sub.add_parser("leaderboard", help="regenerate a leaderboard folder from its leaderboard.yaml")
    board.add_argument("folder", help="e.g. leaderboards/demo")
    board.set_defaults(func=_cmd_leaderboard)


def _add_plan_parser(sub: Any) -> None:
    """`plan-memory`."""
    from captrack.backends.memory_plan import gpu_memory_arg

    plan = sub.add_parser("plan-memory", help="per-GPU memory of each captrack-ds mode, from a model's config")
    plan.add_argument("--model", required=True, metavar="PATH_OR_CONFIG", help="checkpoint folder or config.json")
    plan.add_argument("--gpus", type=cli_type(Count, int), default=1, help="GPUs in the launch, all nodes together (default 1)")
    plan.add_argument("--gpu-mem", default="80GB", type=gpu_memory_arg, help="memory of one GPU, e.g. 80GB, 141GB, 24GiB (default 80GB)")
    plan.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    plan.add_argument("--seq-len", type=cli_type(Count, int), default=4096, help="longest sequence in a batch (default 4096)")
    plan.add_argument("--batch-size", type=cli_type(Count, int), default=8, help="lm-eval --batch_size (default 8)")
    plan.add_argument("--gpus-per-node", type=cli_type(Count, int), help="GPUs per node (default: min(--gpus, 8))")
    plan.set_defaults(func=_cmd_plan_memory)


def _cmd_taxonomy(args: argparse.Namespace) -> int:
    from captrack.taxonomy import load_taxonomy

    for group in load_taxonomy().groups:
        print(f"{group.key}  {group.name}")
        for cap in group.capabilities:
            print(f"  {cap.key:4s} {cap.name}")
            for m in cap.members:
                print(f"         {m.task}/{m.metric} ({m.direction})")
    return 0


def _cmd_ingest(args: argparse.Namespace) -> int:
    from rich.console import Console

    from captrack.labels import VariantLabels
    from captrack.results.runfiles import discover_runs
    from captrack.results.store import Store

    console = Console(stderr=True, soft_wrap=True)
    runs = [run for path in args.runs for run in discover_runs(path)]
    if args.epoch is not None and args.step is None:
        raise InputError(f"--epoch {args.epoch}: --epoch goes with --step (nothing was ingested)")
    labels = VariantLabels(name=args.name or "", algorithm=args.algorithm, family=args.family, size=args.size,
                           data=args.data, replicate=args.replicate, step=args.step)
    with Store(args.store) as store:
        results = _ingest_with_progress(console, store, [(runs, labels)], rename=args.rename, epoch=args.epoch)
    for r in results:
        console.print(f"ingested run {r.run_id}: model {r.model!r}, replicate {r.replicate}, {r.tasks} task(s), {r.rows} rows",
                      markup=False, highlight=False)
    return 0


def _ingest_with_progress(console: Any, store: Any, batches: list[tuple[list[Any], Any]], rename: bool = False,
                          epoch: float | None = None) -> list[Any]:
    """Ingest (runs, labels) batches with a progress bar over samples files and rows."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    total = sum(len(run.tasks) for runs, _ in batches for run in runs)
    columns = (TextColumn("ingesting samples files"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[rows]:,} rows"), TimeElapsedColumn())
    results: list[Any] = []
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("ingest", total=total, rows=0)
        done = {"rows": 0}

        def advance(result: Any) -> None:
            done["rows"] += result.rows
            bar.update(task, advance=result.tasks, rows=done["rows"])

        for runs, labels in batches:
            results += store.ingest(runs, labels, rename=rename, progress=advance, epoch=epoch)
    return results


def _compare_with_progress(console: Any, store: Any, base: str, variants: list[Any], options: Any, taxonomy: Any) -> Any:
    """captrack.compare with a progress bar over variants and paired rows."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from captrack.compare.use_case import compare

    columns = (TextColumn(f"comparing with {base!r}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("variants, {task.fields[rows]:,} paired rows"), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("compare", total=len(variants), rows=0)
        done = {"rows": 0}

        def advance(_name: str, rows: int) -> None:
            done["rows"] += rows
            bar.update(task, advance=1, rows=done["rows"])

        return compare(store, base, variants, options, taxonomy, progress=advance, items_ahead=True)  # written next


def _split_variant(text: str, with_dir: bool) -> tuple[str, str, str]:
    """Parse NAME=DIR[:ALGORITHM] (or NAME[:ALGORITHM]) into (name, dir, algorithm)."""
    if with_dir:
        name, sep, rest = text.partition("=")
        if not sep or not name or not rest:
            raise InputError(f"--variant {text!r}: expected NAME=DIR[:ALGORITHM]")
    else:
        name, rest = "", text
    path, algorithm = rest, ""
    head, sep, tail = rest.rpartition(":")
    if sep and head and "/" not in tail:
        path, algorithm = head, tail
    return (name or path, path if with_dir else "", algorithm)


def _cmd_compare(args: argparse.Namespace) -> int:
    from rich.console import Console

    from captrack.analysis.comparison import CompareOptions
    from captrack.labels import VariantLabels
    from captrack.report.escape import console_text as escape
    from captrack.report.writer import write_comparison
    from captrack.results.store import Store
    from captrack.results.stored_labels import variant_from_store
    from captrack.taxonomy import load_taxonomy, merge_taxonomy

    console = Console(stderr=True, soft_wrap=True)
    taxonomy = merge_taxonomy(load_taxonomy(), args.taxonomy) if args.taxonomy else load_taxonomy()
    if args.scores:
        from captrack.analysis.scores import compare_scores, read_scores

        if args.by or args.fail_on or args.gate:
            raise InputError(f"{'--by' if args.by else '--fail-on' if args.fail_on else '--gate'} needs per-item results (run folders or --store); "
                             "--scores holds aggregates only, which give no verdicts to gate on (nothing was written)")

        comparison = compare_scores(read_scores(args.scores, taxonomy), taxonomy)
        inputs: dict[str, Any] = {"scores": str(Path(args.scores).resolve())}
    else:
        if not args.base or not args.variant:
            raise InputError("compare needs --base and at least one --variant (or --scores FILE.csv)")
        options = CompareOptions(bootstrap=args.bootstrap, seed=args.seed, allow_partial=args.allow_partial,
                                 by=tuple(args.by), cluster=args.cluster,
                                 **({"margin": args.margin} if args.margin is not None else {}),
                                 assume_discordance=args.assume_discordance, drill_limit=item_limit(args))
        folder_mode = args.store is None
        parsed = [_split_variant(v, with_dir=folder_mode) for v in args.variant]
        if not folder_mode and args.base in {name for name, _, _ in parsed}:
            raise InputError(f"--store {args.store}: --base {args.base!r} is also given as a --variant; compare needs "
                             "another model for each variant (a model compared with itself shows no change, nothing was written)")
        with Store(args.store or ":memory:", read_only=args.store is not None) as store:
            base = args.base_name if folder_mode else args.base
            if folder_mode:
                from captrack.results.runfiles import discover_runs

                found = {base: discover_runs(args.base)} | {name: discover_runs(path) for name, path, _ in parsed}
                _check_distinct(found)
                batches = [(found[base], VariantLabels(name=base))]
                batches += [(found[name], VariantLabels(name=name, algorithm=algorithm)) for name, _, algorithm in parsed]
                _ingest_with_progress(console, store, batches)
            variants = [variant_from_store(store, name, algorithm) for name, _, algorithm in parsed]
            comparison = _compare_with_progress(console, store, base, variants, options, taxonomy)
            if args.strict and comparison.setting_differences:
                raise InputError("--strict: base and variant were evaluated with different settings (nothing was "
                                 "written): " + " | ".join(comparison.setting_differences))
            inputs = {"store": args.store or "(in memory)", "base": args.base,
                      "variants": {n: p or n for n, p, _ in parsed}, "runs": store.runs(),
                      "bootstrap": args.bootstrap, "seed": args.seed, "allow_partial": args.allow_partial,
                      **({"by": args.by} if args.by else {})}
    if args.taxonomy:
        inputs["taxonomy"] = str(Path(args.taxonomy).resolve())
    written = write_comparison(comparison, args.out, inputs, taxonomy)
    for warning in comparison.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    console.print(f"wrote {len(written)} files to {args.out}: " + ", ".join(p.name for p in written), markup=False)
    return gate_comparisons(console, [comparison], args)


def _share(text: str) -> float:
    """A share of items in (0, 1] (argparse type)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value <= 1.0:  # NaN fails too
        raise argparse.ArgumentTypeError(f"{text!r} is not a share of items in (0, 1], e.g. 0.1")
    return value


def _check_distinct(runs: dict[str, Any]) -> None:
    """Refuse comparing a run with itself: two names whose folders hold the same run (identical results file)."""
    owner: dict[str, str] = {}
    for name, found in runs.items():
        for run in found:
            first = owner.setdefault(run.run_id, name)
            if first != name:
                raise InputError(f"{run.results_path}: {first!r} and {name!r} are the same run (byte-identical results "
                                 "file); compare needs a different run for each name (nothing was written)")


def _cmd_leaderboard(args: argparse.Namespace) -> int:
    import time

    from rich.console import Console

    from captrack.compare.board import build_leaderboard

    start = time.perf_counter()
    with Console(stderr=True).status(f"building {args.folder}"):
        written = build_leaderboard(args.folder)
    print(f"wrote {len(written)} files to {args.folder} in {time.perf_counter() - start:.1f} s")
    return 0


def _cmd_plan_memory(args: argparse.Namespace) -> int:
    from captrack.backends.memory_plan import load_config
    from captrack.backends.plan_table import plan_lines

    config = load_config(args.model)
    print("\n".join(plan_lines(config, args.gpus, args.gpu_mem, args.dtype, args.seq_len,
                               args.batch_size, args.gpus_per_node)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
