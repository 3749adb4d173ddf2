"""`--fail-on`: the verdict gate of `captrack compare` and `captrack run` for training pipelines."""

from __future__ import annotations

from typing import Any

__all__ = ["GATE_EXIT", "gate"]

GATE_EXIT = 3  # a verdict failed the gate (1 is a user error, 2 argparse's usage error)


def gate(console: Any, capabilities: Any, fail_on: str | None) -> int:
    """Exit status of `--fail-on`: GATE_EXIT after naming each capability cell with a failing verdict, else 0."""
    from rich.markup import escape

    from captrack.analysis.verdicts import failing_cells

    cells = failing_cells(capabilities, fail_on)
    for cell in cells:
        console.print(f"[red]fail:[/] {escape(cell)}", highlight=False)
    if cells:
        console.print(f"--fail-on {fail_on}: {len(cells)} capability cell(s) failed the gate (exit {GATE_EXIT})")
        return GATE_EXIT
    return 0
