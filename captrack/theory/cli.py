"""The `captrack theory` subcommand (wired into captrack.cli by its owner)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_theory_parser", "cmd_theory"]


def add_theory_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `theory --out DIR [--quick]` to an argparse subparsers object; returns the new parser."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "theory", help="simulate mass forgetting vs drift in a two-mode Gaussian mixture and check the claims")
    parser.add_argument("--out", required=True, help="output folder (tables, figures, claims.md)")
    parser.add_argument("--quick", action="store_true", help="a smaller grid (seconds instead of a minute)")
    parser.set_defaults(func=cmd_theory)
    return parser


def cmd_theory(args: argparse.Namespace) -> int:
    """Run the theory lab, print the claims table, and return 0."""
    from rich.console import Console

    from captrack.theory.lab import run_theory

    summary = run_theory(Path(args.out), quick=args.quick, progress=True)
    console = Console(soft_wrap=True)
    for claim in summary["claims"]:
        verdict = "[green]supported[/]" if claim["supported"] else "[bold red]NOT supported[/]"
        console.print(f"{verdict}  {claim['id']}: {claim['headline']}", highlight=False)
    console.print(f"criteria and evidence: {Path(args.out) / 'claims.md'}", highlight=False)
    return 0
