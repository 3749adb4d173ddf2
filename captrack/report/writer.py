"""The one writer of output files: the contract CSVs of docs/design.md, summary.json and report.md (each written atomically).

`captrack compare` (write_comparison) and leaderboards (write_contract_tables) both write through
here, so a transitions.csv, drift.csv or capabilities.csv has the contract's columns wherever it is
found; extra tables go to files of their own.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from captrack.analysis.comparison import DRIFT_COLUMNS, TRANSITION_COLUMNS, Comparison
from captrack.analysis.drift import CAPABILITY_COLUMNS
from captrack.analysis.item_spool import DistributionItems
from captrack.errors import CaptrackError
from captrack.files import scratch_folder, staged_folder, write_atomic
from captrack.output_names import by_field_file
from captrack.report import items_ahead
from captrack.report.background import in_background
from captrack.report.escape import inert_cell
from captrack.report.fast_csv import csv_text, write_csv_rows
from captrack.report.items_ahead import ItemsAhead
from captrack.report.markdown import render_report
from captrack.report.over_training import over_training_sections, over_training_tables
from captrack.report.ownership import claim_folder, write_manifest
from captrack.taxonomy import Taxonomy, load_taxonomy

__all__ = ["CONTRACT_COLUMNS", "LABEL_COLUMNS", "inert_cell", "write_comparison", "write_contract_tables"]

CONTRACT_COLUMNS: dict[str, list[str]] = {
    "transitions.csv": TRANSITION_COLUMNS,
    "drift.csv": DRIFT_COLUMNS,
    "capabilities.csv": CAPABILITY_COLUMNS,
}


LABEL_COLUMNS = frozenset({"variant", "base", "model", "algorithm", "family", "size", "data", "task"})
"""Text columns holding names people chose. Every text column is made inert, these and any other
(rankings.csv's algorithm_a / algorithm_b, a by_<field>.csv's values), so a label never runs as a formula."""


def write_contract_tables(folder: Path, tables: Mapping[str, pd.DataFrame | DistributionItems]) -> list[Path]:
    """Write each table as ``folder/<name>``; contract files keep exactly the contract's columns, in order.

    Every text column (and header) is made inert for spreadsheets (captrack.report.escape.inert_cell);
    numbers are written as they are. A table kept on disk (DistributionItems) is written part by part.
    """
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, table in tables.items():
        text = _spooled_text(name, table) if isinstance(table, DistributionItems) else _csv_text(name, iter([table]))
        written.append(write_atomic(folder / name, text))
    return written


def _spooled_text(name: str, table: DistributionItems) -> Iterator[str | bytes]:
    """The CSV text of a table kept on disk: as a second core wrote it while the analysis ran
    (captrack.report.items_ahead), else part by part; from SHARED_ROWS rows with a second core, the text of its
    later parts (about half the rows) is written by a child process (captrack.report.background) while this one
    writes the first parts, and follows them: the same bytes as written here alone (read back as bytes)."""
    rows = table.part_rows
    follower = table.follower if name not in CONTRACT_COLUMNS else None
    ahead = follower.text(len(rows)) if isinstance(follower, ItemsAhead) else None
    if ahead is not None:  # written by a second core while the analysis ran
        yield from ahead
        return
    halfway = next((i + 1 for i in range(len(rows)) if 2 * sum(rows[:i + 1]) >= sum(rows)), len(rows))
    if sum(rows) < items_ahead.SHARED_ROWS or halfway >= len(rows) or not items_ahead.second_core_free():
        yield from _csv_text(name, table.frames())
        return
    with tempfile.TemporaryDirectory(prefix="csv-", dir=scratch_folder()) as folder:
        rest = Path(folder) / name
        job = in_background([(write_csv_rows, (table.spooled(halfway), rest), {})])
        try:
            yield from _csv_text(name, table.frames(stop=halfway))
            job.results()
        except CaptrackError as exc:
            raise CaptrackError(f"{name}: the process writing its later rows failed: {exc}") from exc
        finally:
            job.close()
        with rest.open("rb") as handle:
            yield from iter(lambda: handle.read(1 << 24), b"")


def _csv_text(name: str, parts: Iterator[pd.DataFrame]) -> Iterator[str]:
    """The CSV text of a table given as parts with the same columns: the header once, then every part's rows (a
    contract file with exactly the contract's columns, in order)."""
    columns = CONTRACT_COLUMNS.get(name)
    return csv_text(frame.reindex(columns=columns) for frame in parts) if columns else csv_text(parts)


def write_comparison(
    comparison: Comparison, out: str | Path, inputs: dict[str, Any], taxonomy: Taxonomy | None = None
) -> list[Path]:
    """Write transitions.csv, drift.csv, capabilities.csv, replicates.csv, the CapTrack-layout
    tables, power.csv and rankings.csv (items only), summary.json and report.md into `out`; returns the paths written.

    `out` is replaced whole, with a .captrack-manifest.json listing what was written (captrack.report.ownership).

    Raises:
        ForeignFilesError: `out` holds a file captrack did not write (named); nothing was written or removed.
    """
    folder = Path(out)
    claim_folder(folder, "compare")  # refused before any work when `out` holds anything captrack did not write

    def still_ours() -> None:  # a file the user put there while the comparison was written is not deleted either
        claim_folder(folder, "compare")

    # all or nothing: never a new summary.json beside an old report.md; the manifest says what is captrack's
    with staged_folder(folder, before_swap=still_ours) as staging:
        written = _write_comparison(comparison, staging, inputs, taxonomy or load_taxonomy())
        write_manifest(staging, "compare", [p.name for p in written])
    return [folder / p.name for p in written]


def _write_comparison(comparison: Comparison, folder: Path, inputs: dict[str, Any], taxonomy: Taxonomy) -> list[Path]:
    """Write every comparison file into `folder` (a staging folder)."""
    means, stds = comparison.compatible
    tables = {
        "transitions.csv": comparison.transitions,
        "drift.csv": comparison.drift,
        "capabilities.csv": comparison.capabilities,
        "replicates.csv": comparison.replicates,
        "captrack_compatible.csv": means.reset_index(),
        "captrack_compatible_std.csv": stds.reset_index(),
    }
    if not comparison.aggregate_only:  # per-item statistics: none exist for aggregate scores
        tables |= {"power.csv": comparison.power, "rankings.csv": comparison.contrasts}
    if not comparison.distribution.empty:
        tables |= {
            "distribution_items.csv": comparison.distribution_items,
            "distribution.csv": comparison.distribution,
            "distribution_by_algorithm.csv": comparison.distribution_by_algorithm,
            "calibration.csv": comparison.calibration,
        }
    if comparison.by_field:
        tables |= {by_field_file(name): frame for name, frame in comparison.by_field.items()}
    over = over_training_tables([comparison.curves] if comparison.curves is not None else [])  # drift over training
    written = write_contract_tables(folder, tables | over)
    _, over_md, figures = over_training_sections(over, folder, prefix="")
    written += figures
    summary = {
        "base": comparison.base,
        "variants": [{"name": v.name, "algorithm": v.algorithm} for v in comparison.variants],
        "inputs": inputs,
        "counts": comparison.counts,
        "replicate_spread_pct": comparison.replicate_spread,
        "warnings": comparison.warnings,
        "judged": comparison.judged,
        "files": [p.name for p in written] + ["summary.json", "report.md"],
    }
    if "curves.csv" in over:  # trajectories: the steps each variant was evaluated at
        steps = over["curves.csv"].groupby("variant", sort=False)["step"].unique()
        summary["trajectories"] = {str(v): sorted(int(s) for s in values) for v, values in steps.items()}
    written.append(write_atomic(folder / "summary.json", json.dumps(_json_safe(summary), indent=2, sort_keys=False)))
    written.append(write_atomic(folder / "report.md", render_report(comparison, taxonomy, inputs) + ("\n" + over_md if over_md else "")))
    return written


def _json_safe(value: Any) -> Any:
    """NaN and inf become null (JSON has no NaN); numpy scalars become Python ones."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return value
