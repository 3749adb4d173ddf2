"""The argument parser of the `captrack` command, in captrack's voice (sub-command usage, close names)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["FAIL_ON_HELP", "CaptrackParser", "print_error"]

FAIL_ON_HELP = ("exit 3 naming each cell that fails. regressed: the capabilities (and the (task, metric)s outside the "
                "taxonomy) whose regression Holm's step-down test rejects at a family-wise error of 2.5%% per variant "
                "(each such cell is also `regressed`, not every `regressed` cell fails: an unchanged variant fails at "
                "most 2.5%% of the time); inconclusive: those and every `inconclusive` cell")
"""The help of `--fail-on` (captrack compare and captrack run): the rule of captrack.gate.fail_on, as README states it
(argparse help: a percent sign doubled)."""


class CaptrackParser(argparse.ArgumentParser):
    """argparse with captrack's voice: a flag typo shows the sub-command's usage, and close names are offered."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and " " in self.prog and not self._subparsers:  # a sub-command's own flags: its usage, not the top's
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def error(self, message: str) -> Any:
        import re

        from captrack.errors import close_matches

        found = re.search(r"invalid choice: '([^']+)'", message) or re.search(r"unrecognized arguments: (\S+)", message)
        if found:
            known = [c for a in self._actions for c in (getattr(a, "choices", None) or ()) if isinstance(c, str)]
            known += [o for a in self._actions for o in a.option_strings]
            hints = close_matches(found.group(1), known)
            if hints:
                message += f"; did you mean {', '.join(hints)}?"
        super().error(message)


def print_error(message: str) -> None:
    """``error: <message>`` on stderr, the message shown literally (no rich markup)."""
    from rich.console import Console

    from captrack.report.escape import console_text

    Console(stderr=True, soft_wrap=True).print(f"[bold red]error:[/] {console_text(message)}", highlight=False)
