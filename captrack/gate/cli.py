"""`captrack gate POLICY.yaml COMPARISON_DIR`, and `--gate POLICY.yaml` / `--gate-report DIR` on compare and run."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["REPORT_FILES", "add_gate_options", "add_gate_parser", "apply_policy", "gate_comparisons", "item_limit",
           "read_tables", "wants_gate"]

REPORT_FILES = ("gate.md", "gate.json", "gate-junit.xml")
"""What a gate writes into its report folder: Markdown, JSON and JUnit XML."""
_TABLES = {"capabilities.csv": ("variant", "level", "key"), "drift.csv": ("variant", "task", "metric", "direction"),
           "transitions.csv": ("variant", "task", "metric", "n", "n_10", "n_01")}


def add_gate_parser(sub: Any) -> None:
    """`captrack gate`."""
    gate = sub.add_parser("gate", help="apply a release-gate policy (POLICY.yaml) to a comparison or board folder")
    gate.add_argument("policy", metavar="POLICY.yaml", help="the gate policy (README: In CI)")
    gate.add_argument("comparison", metavar="COMPARISON_DIR",
                      help="a `captrack compare --out` folder or a board folder (its capabilities.csv and drift.csv)")
    gate.add_argument("--report", metavar="DIR", help=f"write {', '.join(REPORT_FILES)} into DIR (created if missing)")
    gate.set_defaults(func=_cmd_gate)


def add_gate_options(parser: argparse.ArgumentParser) -> None:
    """`--gate POLICY.yaml` and `--gate-report DIR` of `captrack compare` and `captrack run`."""
    parser.add_argument("--gate", metavar="POLICY.yaml",
                        help="apply this release-gate policy to the comparison just computed (exit 3: fail)")
    parser.add_argument("--gate-report", metavar="DIR", help=f"with --gate: write {', '.join(REPORT_FILES)} into DIR")


def wants_gate(args: argparse.Namespace) -> bool:
    """Whether `args` asks for a gate (`--fail-on` or `--gate`); a policy is read here, before any work starts."""
    from captrack.errors import InputError
    from captrack.gate.policy import load_policy

    if getattr(args, "gate_report", None) and not getattr(args, "gate", None):
        raise InputError("--gate-report DIR goes with --gate POLICY.yaml (nothing was run)")
    if getattr(args, "gate", None):
        load_policy(args.gate)
    return bool(args.fail_on or getattr(args, "gate", None))


def item_limit(args: argparse.Namespace) -> int:
    """CompareOptions.drill_limit for `compare`: the texts of flipped items are read only for a gate report.
    The gate options are checked here, before the comparison starts (a bad policy costs no comparison)."""
    from captrack.report.drilldown import DRILL_LIMIT

    wants_gate(args)
    return DRILL_LIMIT if getattr(args, "gate_report", None) else 0


def gate_comparisons(console: Any, comparisons: list[Any], args: argparse.Namespace) -> int:
    """The exit status of `--fail-on` and `--gate` on comparisons computed in this process (never read from files):
    GATE_EXIT if either fails, else WARN_EXIT if a strict policy warns, else 0."""
    import pandas as pd

    from captrack.gate.fail_on import gate

    if not comparisons or not (args.fail_on or getattr(args, "gate", None)):
        return 0
    capabilities = pd.concat([c.capabilities for c in comparisons], ignore_index=True)
    drift = pd.concat([c.drift for c in comparisons], ignore_index=True)
    statuses = [gate(console, capabilities, args.fail_on, drift)]
    if getattr(args, "gate", None):
        transitions = pd.concat([c.transitions for c in comparisons], ignore_index=True)
        statuses.append(apply_policy(console, args.gate, capabilities, drift, transitions, args.gate_report, comparisons))
    return max(statuses, key=lambda s: (s == 3, s != 0))


def apply_policy(console: Any, policy_path: str, capabilities: Any, drift: Any, transitions: Any,
                 report: str | None, comparisons: Sequence[Any] = ()) -> int:
    """Apply a policy file to a comparison's tables, print each rule that did not pass and the decisions,
    write the report files when asked (with the texts of items that got worse where `comparisons`, computed in
    this process, carry them); returns the exit status (captrack.gate.outcomes)."""
    from captrack.files import write_atomic
    from captrack.gate.items import flipped_items
    from captrack.gate.outcomes import evaluate
    from captrack.gate.policy import load_policy
    from captrack.gate.report_files import (
        gate_json,
        gate_junit,
        gate_markdown,
        outcome_line,
        rule_flips,
    )

    result = evaluate(load_policy(policy_path), capabilities, drift)
    for outcome in result.outcomes:
        if outcome.outcome != "pass":
            style = "red" if outcome.counts and outcome.outcome in ("block", "missing") else "yellow"
            console.print(f"[{style}]{outcome.outcome}:[/] " + _plain(outcome_line(outcome)), highlight=False)
    decided = ", ".join(f"{variant}: {decision}" for variant, decision in result.decisions.items())
    console.print(f"gate {policy_path}: {len(result.policy.rules)} rule(s), {decided} (exit {result.exit_status})",
                  highlight=False, markup=False)
    if report:
        folder = _report_folder(report)
        keys = {(o.variant, task, metric) for o in result.outcomes for task, metric, *_ in rule_flips(o, transitions, drift)}
        items = flipped_items(comparisons, keys) if comparisons and keys else {}
        texts = (gate_markdown(result, transitions, drift, items), gate_json(result), gate_junit(result))
        for name, text in zip(REPORT_FILES, texts, strict=True):
            write_atomic(folder / name, text)
        console.print(f"wrote {', '.join(REPORT_FILES)} to {folder}", highlight=False, markup=False)
    return result.exit_status


def _report_folder(report: str) -> Path:
    """The report folder, created; refused inside a comparison or board folder (its next write replaces it whole)."""
    from captrack.errors import InputError
    from captrack.report.ownership import MANIFEST

    folder = Path(report)
    for parent in (folder.resolve(), *folder.resolve().parents):
        if (parent / MANIFEST).is_file() or (parent / "leaderboard.yaml").is_file():
            raise InputError(f"{report}: inside {parent}, a folder captrack writes whole (its next comparison or board "
                             "would refuse a folder it did not write); give a gate report folder outside it")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _plain(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def read_tables(folder: str | Path) -> tuple[Any, Any, Any]:
    """(capabilities, drift, transitions) of a comparison or board folder; transitions None where absent.

    Raises:
        InputError: the folder is missing, has neither capabilities.csv nor drift.csv, or a table lacks a column.
    """
    import pandas as pd

    from captrack.errors import InputError

    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder; give the --out folder of `captrack compare` or a board folder")
    tables: dict[str, Any] = {}
    for name, columns in _TABLES.items():
        path = folder / name
        if not path.is_file():
            tables[name] = None
            continue
        try:
            table = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={c: str for c in columns[:3]})
        except (OSError, ValueError, pd.errors.ParserError) as exc:
            raise InputError(f"{path}: cannot read it as a captrack table ({str(exc).splitlines()[0]})") from None
        lacking = [c for c in columns if c not in table.columns]
        if lacking:
            raise InputError(f"{path}: no column {', '.join(repr(c) for c in lacking)}; is it a captrack comparison's {name}?")
        tables[name] = table
    if tables["capabilities.csv"] is None and tables["drift.csv"] is None:
        raise InputError(f"{folder}: holds neither capabilities.csv nor drift.csv; give the --out folder of "
                         "`captrack compare` or a board folder")
    return tables["capabilities.csv"], tables["drift.csv"], tables["transitions.csv"]


def _cmd_gate(args: argparse.Namespace) -> int:
    from rich.console import Console

    from captrack.gate.policy import load_policy

    load_policy(args.policy)  # a bad policy is refused before the tables are read
    console = Console(stderr=True, soft_wrap=True)
    capabilities, drift, transitions = read_tables(args.comparison)
    return apply_policy(console, args.policy, capabilities, drift, transitions, args.report)
