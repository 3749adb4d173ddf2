"""Bring your own generations: `captrack import` scores responses produced elsewhere with captrack's tasks, or takes
another tool's per-item outcomes (NeMo Evaluator, Inspect, lighteval, Every-Eval-Ever) as they are."""

from __future__ import annotations

from typing import TYPE_CHECKING

from captrack.lazy import lazy_getattr

if TYPE_CHECKING:  # imported on first use below, so `captrack --help` does not load the heavy modules
    from captrack.imports.formats import ADAPTERS, ReadOptions, Source, read_source
    from captrack.imports.run import ImportResult, Matched, import_run
    from captrack.imports.tool_outcomes import Outcome

_EXPORTS = {
    'ADAPTERS': 'captrack.imports.formats',
    'Source': 'captrack.imports.formats',
    'ReadOptions': 'captrack.imports.formats',
    'Outcome': 'captrack.imports.tool_outcomes',
    'read_source': 'captrack.imports.formats',
    'ImportResult': 'captrack.imports.run',
    'Matched': 'captrack.imports.run',
    'import_run': 'captrack.imports.run',
}


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())

__all__ = ["ADAPTERS", "ImportResult", "Matched", "Outcome", "ReadOptions", "Source", "import_run", "read_source"]
