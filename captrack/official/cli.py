"""`captrack data build|mirror`: make the local mirror the official tasks read."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from captrack.official.mirror import DATA_DIR_ENV

__all__ = ["add_data_parser", "default_out"]


def default_out() -> Path:
    """$CAPTRACK_DATA_DIR, else ``<captrack cache>/data``."""
    from captrack.paths import cache_dir

    return Path(os.environ.get(DATA_DIR_ENV) or cache_dir() / "data")


def add_data_parser(sub: Any) -> None:
    """Add the `data` command group to the `captrack` parser."""
    data = sub.add_parser("data", help="build or download the CapTrack dataset mirror the official tasks read")
    actions = data.add_subparsers(metavar="ACTION")
    build = actions.add_parser("build", help="build the mirror offline from the benchmarks' original files")
    build.add_argument("--sources", required=True, help="folder of original benchmark files (gsm8k/, mmlu_pro/, ...)")
    build.add_argument("--out", help=f"mirror folder (default: ${DATA_DIR_ENV} or ~/.cache/captrack/data)")
    build.add_argument("--config", action="append", help="only this config (repeatable), e.g. gsm8k.subset")
    build.add_argument("--full", action="store_true",
                       help="also build every sampled config from its whole source (task metadata {\"subset\": \"full\"})")
    build.set_defaults(func=_cmd_build)
    mirror = actions.add_parser("mirror", help="copy the hub dataset tri-fair-lab/captrack (needs network)")
    mirror.add_argument("--out", help=f"mirror folder (default: ${DATA_DIR_ENV} or ~/.cache/captrack/data)")
    mirror.add_argument("--revision", help="hub revision (default: the latest commit)")
    mirror.set_defaults(func=_cmd_mirror)


def _cmd_build(args: argparse.Namespace) -> int:
    from rich.console import Console

    from captrack.official.build import build_mirror

    out = Path(args.out) if args.out else default_out()
    console = Console(stderr=True, soft_wrap=True)
    with console.status("building") as status:
        results = build_mirror(args.sources, out, args.config, progress=lambda n: status.update(f"building {n}"), full=args.full)
    for r in results:
        line = f"  built      {r.config:24s} {r.rows:6d} rows  {r.revision}" if r.built else f"  not built  {r.config:24s} {r.reason}"
        print(line)
    samples = [r for r in results if not r.config.endswith(" (full)")]
    built = sum(r.built for r in samples)
    full = f" (and {len(results) - len(samples)} full subsets)" if len(results) > len(samples) else ""
    print(f"{built} of {len(samples)} configs built{full} into {out}; set {DATA_DIR_ENV}={out} for the tasks to read it")
    return 0


def _cmd_mirror(args: argparse.Namespace) -> int:
    from captrack.official.hub import mirror_hub

    out = Path(args.out) if args.out else default_out()
    written = mirror_hub(out, args.revision)
    print(f"{len(written)} configs, {sum(written.values())} rows copied into {out}; set {DATA_DIR_ENV}={out}")
    return 0
