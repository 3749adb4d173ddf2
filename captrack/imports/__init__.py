"""Bring your own generations: `captrack import` scores responses produced elsewhere with captrack's tasks."""

from __future__ import annotations

from captrack.imports.formats import ADAPTERS, Source, read_source
from captrack.imports.run import ImportResult, Matched, import_run

__all__ = ["ADAPTERS", "ImportResult", "Matched", "Source", "import_run", "read_source"]
