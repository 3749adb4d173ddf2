"""`--fail-on`: the verdict gate of `captrack compare` and `captrack run` for training pipelines.

The gate of each variant checks its capabilities and its (task, metric)s outside the taxonomy; a cell fails
`regressed` only where Holm's step-down test rejects "no regression" at a family-wise error of 2.5% per
variant (captrack.analysis.verdicts.gate_family), so an unchanged variant fails at most 2.5% of the time
however many capabilities it has. It decides from the comparison computed in the same process, never
from a file on disk.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GATE_EXIT", "WARN_EXIT", "gate", "gate_method"]

GATE_EXIT = 3  # a verdict failed the gate (1 is a user error, 2 argparse's usage error)
WARN_EXIT = 4  # a gate policy with `strict: true` whose decision is `warn` for some variant and `fail` for none


def gate_method(family_size: int | None = None) -> str:
    """How `--fail-on regressed` decides, in one sentence (report.md and the console say it)."""
    size = f" ({family_size} cells)" if family_size is not None else ""
    return ("a cell fails `regressed` where Holm's step-down test over the capabilities and out-of-taxonomy "
            f"(task, metric)s each variant's gate checks{size} rejects 'no regression' at a family-wise error of "
            "2.5% (one-sided p-values of the verdicts' own tests)")


def gate(console: Any, capabilities: Any, fail_on: str | None, drift: Any = None) -> int:
    """Exit status of `--fail-on`: GATE_EXIT after naming each failing cell, else 0 after saying what was checked.

    Args:
        capabilities, drift: this comparison's capabilities.csv and drift.csv tables (drift: the (task,
            metric)s outside the taxonomy are gated too).
    """
    from rich.markup import escape

    from captrack.analysis.verdicts import failing_cells, gate_family

    if not fail_on:
        return 0
    family = gate_family(capabilities, drift)
    cells = failing_cells(capabilities, fail_on, drift)
    for cell in cells:
        console.print(f"[red]fail:[/] {escape(cell)}", highlight=False)
    variants = family["variant"].nunique() if len(family) else 0
    if cells:
        console.print(f"--fail-on {fail_on}: {len(cells)} cell(s) failed the gate (exit {GATE_EXIT}); "
                      + gate_method(), highlight=False, markup=False)
        return GATE_EXIT
    console.print(f"--fail-on {fail_on}: passed: {len(family)} cell(s) of {variants} variant(s) checked, none failed; "
                  + gate_method(), highlight=False, markup=False)
    return 0
