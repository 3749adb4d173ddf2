"""`captrack gate POLICY.yaml COMPARISON_DIR`, and `--gate POLICY.yaml` / `--gate-report DIR` on compare and run."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["REPORT_FILES", "add_gate_options", "add_gate_parser", "apply_policy", "check_report_folder",
           "gate_comparisons", "item_limit", "read_tables", "wants_gate", "without_floor"]

REPORT_FILES = ("gate.md", "gate.json", "gate-junit.xml")
"""What a gate writes into its report folder: Markdown, JSON and JUnit XML."""


def add_gate_parser(sub: Any) -> None:
    """`captrack gate`."""
    gate = sub.add_parser("gate", help="apply a release-gate policy (POLICY.yaml) to a comparison or board folder")
    gate.add_argument("policy", metavar="POLICY.yaml", help="the gate policy (docs/guides/ci-gate.md)")
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
    """Whether `args` asks for a gate (`--fail-on` or `--gate`); the policy is read here, once, and the report folder
    checked, before any work starts (the policy read is kept on `args` for the decision: a FIFO is read once)."""
    from captrack.errors import InputError
    from captrack.gate.policy import load_policy

    if getattr(args, "gate_report", None) and not getattr(args, "gate", None):
        raise InputError("--gate-report DIR goes with --gate POLICY.yaml (nothing was run)")
    if getattr(args, "gate", None):
        args.gate_policy = load_policy(args.gate)
        if getattr(args, "gate_report", None):
            check_report_folder(args.gate_report, "nothing was run")
    return bool(args.fail_on or getattr(args, "gate", None))


def item_limit(args: argparse.Namespace) -> int:
    """CompareOptions.drill_limit for `compare`: the texts of flipped items are read only for a gate report.
    The gate options are checked here, before the comparison starts (a bad policy costs no comparison)."""
    from captrack.report.drilldown import DRILL_LIMIT

    wants_gate(args)
    return DRILL_LIMIT if getattr(args, "gate_report", None) else 0


def gate_comparisons(console: Any, comparisons: list[Any], args: argparse.Namespace) -> int:
    """The exit status of `--fail-on` and `--gate` on comparisons computed in this process (never read from files):
    GATE_EXIT if either fails, else WARN_EXIT if a strict policy warns, else 0. Where both gates ran and the
    exit differs from the policy's own, a last line says the exit and why."""
    import pandas as pd

    from captrack.gate.fail_on import gate

    if not comparisons or not (args.fail_on or getattr(args, "gate", None)):
        return 0
    tables = [pd.concat([getattr(c, name) for c in comparisons], ignore_index=True)
              for name in ("capabilities", "drift", "transitions")]
    capabilities, drift, transitions = without_floor(console, *tables)
    statuses = [gate(console, capabilities, args.fail_on, drift)]
    if getattr(args, "gate", None):
        policy = getattr(args, "gate_policy", None) or args.gate
        statuses.append(apply_policy(console, policy, capabilities, drift, transitions, args.gate_report, comparisons))
    status = max(statuses, key=lambda s: (s == 3, s != 0))
    if len(statuses) == 2 and status != statuses[1]:
        console.print(f"exit {status}: --fail-on {args.fail_on} gave {statuses[0]}, the policy {statuses[1]} "
                      "(either gate failing gives 3)", highlight=False, markup=False)
    return status


def without_floor(console: Any, *tables: Any) -> tuple[Any, ...]:
    """`tables` without the rows of a backend's A/A floor pair (algorithm ``floor``, captrack.pipeline.floor): the
    floor is what the backend alone flips, a reference to read variants against, never a variant a gate passes or
    fails. Says which it left out; a table without an algorithm column is as it was."""
    from captrack.labels import FLOOR_ALGORITHM

    floors = sorted({str(v) for t in tables if "algorithm" in t.columns for v in
                     t.loc[t["algorithm"].astype(str) == FLOOR_ALGORITHM, "variant"]})
    if not floors:
        return tables
    console.print(f"not gated: {', '.join(floors)} (algorithm {FLOOR_ALGORITHM}: the backend's A/A floor, a reference)",
                  highlight=False, markup=False)
    return tuple(t[t["algorithm"].astype(str) != FLOOR_ALGORITHM] if "algorithm" in t.columns else t for t in tables)


def apply_policy(console: Any, policy: Any, capabilities: Any, drift: Any, transitions: Any,
                 report: str | None, comparisons: Sequence[Any] = ()) -> int:
    """Apply a policy (a `Policy`, or the path of its file) to a comparison's tables: write the report files when
    asked (with the texts of items that got worse where `comparisons`, computed in this process, carry them), then
    print each rule that did not pass and the decisions; returns the exit status (captrack.gate.outcomes).

    The report folder is checked before anything is decided, and the decision is printed only once the reports are
    written, so the exit it prints is the exit the command returns.
    """
    from captrack.files import write_atomic
    from captrack.gate.items import flipped_items
    from captrack.gate.outcomes import evaluate
    from captrack.gate.policy import Policy, load_policy
    from captrack.gate.report_files import (
        gate_json,
        gate_junit,
        gate_markdown,
        outcome_line,
        rule_flips,
    )

    policy = policy if isinstance(policy, Policy) else load_policy(policy)
    folder = check_report_folder(report, "nothing was decided") if report else None
    result = evaluate(policy, capabilities, drift)
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        keys = {(o.variant, task, metric) for o in result.outcomes for task, metric, *_ in rule_flips(o, transitions, drift)}
        items = flipped_items(comparisons, keys) if comparisons and keys else {}
        texts = (gate_markdown(result, transitions, drift, items), gate_json(result), gate_junit(result))
        for name, text in zip(REPORT_FILES, texts, strict=True):
            write_atomic(folder / name, text)
    for outcome in result.outcomes:
        if outcome.outcome != "pass":
            style = "red" if outcome.counts and outcome.outcome in ("block", "missing") else "yellow"
            console.print(f"[{style}]{outcome.outcome}:[/] " + _plain(outcome_line(outcome)), highlight=False)
    decided = ", ".join(f"{variant}: {decision}" for variant, decision in result.decisions.items())
    console.print(f"gate {policy.source}: {len(policy.rules)} rule(s), {decided} (exit {result.exit_status})",
                  highlight=False, markup=False)
    if folder is not None:
        console.print(f"wrote {', '.join(REPORT_FILES)} to {folder}", highlight=False, markup=False)
    return result.exit_status


def check_report_folder(report: str, said: str) -> Path:
    """The report folder, checked (not created): refused inside a comparison or board folder (its next write replaces it
    whole), where it is a file, or where it could not be created or written; `said` ends the message.

    Raises:
        InputError: the folder cannot take the report files.
    """
    import os

    from captrack.errors import InputError
    from captrack.report.ownership import MANIFEST

    folder = Path(report)
    for parent in (folder.resolve(), *folder.resolve().parents):
        if (parent / MANIFEST).is_file() or (parent / "leaderboard.yaml").is_file():
            raise InputError(f"{report}: inside {parent}, a folder captrack writes whole (its next comparison or board "
                             f"would refuse a folder it did not write); give a gate report folder outside it ({said})")
    existing = next((p for p in (folder, *folder.parents) if p.exists() or p.is_symlink()), Path("."))
    if not existing.is_dir():
        where = "is" if existing == folder else f"is inside {existing}, which is"
        raise InputError(f"{report}: {where} not a folder; give a folder for the gate report ({said})")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"{report}: cannot write in {existing} (permission denied); give a folder you can write ({said})")
    return folder


def _plain(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def read_tables(folder: str | Path) -> tuple[Any, Any, Any]:
    """(capabilities, drift, transitions) of a comparison or board folder (captrack.gate.folder.read_tables).

    Raises:
        InputError: a folder the gate cannot read in full; nothing is decided.
    """
    from captrack.gate.folder import read_tables as read

    return read(folder)


def _cmd_gate(args: argparse.Namespace) -> int:
    from rich.console import Console

    from captrack.gate.policy import load_policy

    policy = load_policy(args.policy)  # read once (a FIFO included); a bad policy is refused before the tables are read
    if args.report:
        check_report_folder(args.report, "nothing was decided")
    console = Console(stderr=True, soft_wrap=True)
    capabilities, drift, transitions = without_floor(console, *read_tables(args.comparison))
    return apply_policy(console, policy, capabilities, drift, transitions, args.report)
