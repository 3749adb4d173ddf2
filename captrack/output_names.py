"""The names of the files captrack writes whose name depends on the user's input, defined once for the layers that
write them (captrack.report) and the ones that name them in a message (captrack.analysis)."""

from __future__ import annotations

import re

__all__ = ["by_field_file"]


def by_field_file(field: str) -> str:
    """The output file of `--by field`: ``by_<field>.csv`` (characters unsafe in a file name become _)."""
    return "by_" + re.sub(r"[^A-Za-z0-9_.-]", "_", field) + ".csv"
