"""`captrack import SRC --format ... --out RUN_DIR`: generations made elsewhere into an lm-eval run folder."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from captrack.registries import declared_names
from captrack.schemas import Count, cli_type

__all__ = ["FORMATS", "add_import_parser"]

FORMATS = tuple(sorted(name for module in sorted(Path(__file__).parent.glob("*.py"))
                      for name in declared_names(module, "adapter")))
"""The names of captrack.imports.formats.ADAPTERS, read from the ``@adapter(...)`` lines of this package's modules so
`captrack --help` need not import lm-eval (tests/test_cli.py checks that both agree)."""


def add_import_parser(sub: Any) -> None:
    """Add the `import` command to the `captrack` parser."""
    cmd = sub.add_parser("import", help="score generations made elsewhere (MMLU-Pro outputs, CapTrack model_responses, JSONL) or bring "
                                "another tool's per-item log (NeMo Evaluator, Inspect, lighteval, Every-Eval-Ever)")
    cmd.add_argument("src", metavar="SRC", help="the source file or folder")
    cmd.add_argument("--format", required=True, metavar="{" + ",".join(FORMATS) + "}",
                     help="how SRC is laid out (see README); an unknown name is refused with the close ones")
    cmd.add_argument("--task", help="the captrack task the responses answer (jsonl: required; mmlu-pro: default captrack_mmlu_pro_full)")
    cmd.add_argument("--out", required=True, metavar="RUN_DIR", help="new folder for the lm-eval run (must not exist or be empty)")
    cmd.add_argument("--name", help="model name to file the run under (default: from the source's name)")
    cmd.add_argument("--allow-partial", action="store_true", help="score the documents both the source and the task have; import an Inspect log the "
                     "run did not finish (status error or cancelled), saying how many samples are missing")
    cmd.add_argument("--response-column", default="outputs", help="response column of --format captrack files (default: outputs)")
    cmd.add_argument("--outcome", metavar="NAME",
                     help="another tool's log: which of its per-item metrics is the score (an Inspect scorer, a lighteval "
                          "metric, an Every-Eval-Ever result id; default: the first)")
    cmd.add_argument("--rescore", action="store_true",
                     help="another tool's log: score its responses again with the captrack task (--task, or the tool's task "
                          "name) instead of taking the tool's own per-item outcomes")
    cmd.add_argument("--items", type=cli_type(Count, int), metavar="N",
                     help="a probe's size: its first N generated items (the task's metadata n; give the N the prompts "
                          "were exported with, `captrack tasks export TASK --n N`)")
    cmd.set_defaults(func=_cmd_import)


def _cmd_import(args: argparse.Namespace) -> int:
    from rich.console import Console

    from captrack.imports.run import import_run
    from captrack.report.escape import console_text, terminal_text

    console = Console(stderr=True, soft_wrap=True)
    started = time.perf_counter()
    with console.status(f"importing {console_text(args.src)}"):
        result = import_run(args.src, args.format, args.out, task=args.task, name=args.name,
                            allow_partial=args.allow_partial, response_column=args.response_column,
                            metadata={"n": args.items} if args.items else None,
                            outcome=args.outcome, rescore=args.rescore,
                            log=lambda line: console.print(terminal_text(line), highlight=False, markup=False))
    note = result.provenance.get("outcomes")
    for m in result.matched:
        task = terminal_text(m.task)
        print(f"{task}: {len(m.indices)} items, the tool's own outcomes" if note else
              f"{task}: {len(m.indices)} of {m.n_docs} documents scored")
    if note:
        print(f"scores: {terminal_text(note)} (not re-scored; --rescore scores the responses with the captrack task)")
    print(terminal_text(f"wrote {result.results_file} in {time.perf_counter() - started:.1f} s "
                        f"(sha256 {result.provenance['sha256'][:12]} of {result.provenance['source']})"))
    return 0
