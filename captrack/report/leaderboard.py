"""The definition of a leaderboard folder (`captrack leaderboard DIR`; captrack.compare.board builds it).

A leaderboard is defined by ``DIR/leaderboard.yaml``::

    title: SFT vs DPO vs RL on SmolLM2
    description: one paragraph shown on top of the page
    store: ../../runs/demo/store.duckdb      # a captrack store (relative to DIR; ${VAR:-default} allowed)
    # scores: scores.csv                     # or a tidy scores CSV (drift only)
    # reference: {base: base.csv, variants: {label: variant.csv}}  # or CapTrack averaged CSVs
    source_note: where the numbers come from (shown on the page)
    comparisons:
      - base: base
        variants:
          - {name: sft, algorithm: SFT, family: smollm2, size: 135M, data: arithmetic}
    capabilities: [C1, W3a]                  # optional: rows to show (default: all with data)
    bootstrap: 1000
    by: [category]                           # optional (store only): per-field tables (by_<field>.csv)
    margin: 5                                # optional: the verdicts' equivalence margin (points)
"""

from __future__ import annotations

from pathlib import Path

import yaml

from captrack.bounded import load_yaml, read_text
from captrack.errors import InputError
from captrack.paths import expand_path
from captrack.report.board_spec import LeaderboardSpec
from captrack.schemas import LeaderboardFile, parse_config

__all__ = ["LeaderboardSpec", "load_spec", "parse_spec"]

LABELS = ("family", "size", "algorithm", "data")


def load_spec(folder: str | Path) -> LeaderboardSpec:
    """Read and check ``folder/leaderboard.yaml``.

    Raises:
        InputError: missing file; a key missing, unknown or of the wrong type (key, value and what is
            allowed named); or a source that does not exist.
    """
    root = Path(folder).resolve()
    path = root / "leaderboard.yaml"
    try:
        raw = load_yaml(read_text(path))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"{path}: cannot read the leaderboard definition: {exc}") from exc
    return parse_spec(raw, root)


def parse_spec(raw: object, folder: str | Path) -> LeaderboardSpec:
    """Check a leaderboard definition given as data (what ``folder/leaderboard.yaml`` holds, or what `captrack run`
    writes there, taken from the experiment rather than read back from disk).

    Raises:
        InputError: as :func:`load_spec`.
    """
    root = Path(folder).resolve()
    path = root / "leaderboard.yaml"
    board = parse_config(LeaderboardFile, raw, path, "leaderboard definition")
    sources = [k for k in ("store", "scores", "reference") if getattr(board, k)]
    if len(sources) != 1:
        raise InputError(f"{path}: give exactly one of store, scores or reference (found {sources or 'none'})")
    variants = [v.labels() for c in board.comparisons for v in c.variants]
    if not variants and sources[0] != "reference":
        raise InputError(f"{path}: key 'comparisons' must list at least one base with variants, "
                         "e.g. [{base: base, variants: [{name: sft}]}]")
    reference = board.reference.model_dump() if board.reference else {}
    spec = LeaderboardSpec(
        folder=root,
        title=root.name if board.title is None else board.title,
        description=board.description,
        source_note=board.source_note,
        variants=tuple(variants),
        bases={v.name: c.base for c in board.comparisons for v in c.variants},
        store=expand_path(board.store, root) if board.store else None,
        scores=expand_path(board.scores, root) if board.scores else None,
        reference=reference,
        capabilities=tuple(board.capabilities),
        bootstrap=board.bootstrap,
        target=board.target,
        seed=board.seed,
        by=tuple(board.by),
        margin=float(board.margin),
        smoke=board.smoke,
    )
    if spec.by and spec.store is None:
        raise InputError(f"{path}: 'by' needs per-item results (a store); scores and references are aggregates")
    for source in (spec.store, spec.scores):
        if source is not None and not source.exists():
            experiment = path.parent / "experiment.yaml"
            fix = (f"`captrack run {experiment}` builds it and this board (`make boards` rebuilds every committed board)"
                   if experiment.is_file() else "ingest the runs into it first (`captrack ingest RUN_DIR --store STORE`)")
            raise InputError(f"{path}: source {source} does not exist; {fix}")
    return spec
