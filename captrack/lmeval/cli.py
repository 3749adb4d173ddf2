"""`captrack tasks`: list captrack's lm-eval tasks, print their folder, or write their wired keys."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from captrack.errors import CaptrackError
from captrack.schemas import Count, cli_type

__all__ = ["add_tasks_parser"]


def add_tasks_parser(sub: Any) -> None:
    """Add the `tasks` command to the `captrack` parser."""
    tasks = sub.add_parser("tasks", help="list captrack's lm-eval tasks (or print their folder, or write their wiring)")
    tasks.add_argument("--path", action="store_true", help="print the folder to pass to lm-eval --include_path")
    tasks.add_argument("--available", action="store_true",
                       help="print, comma-separated, the tasks that can run here (items generated, or data found in the "
                            "mirror/cache): lm_eval --tasks \"$(captrack tasks --available)\"")
    tasks.add_argument("--full", action="store_true",
                       help="with --path: the folder of the opt-in full-size tasks (e.g. captrack_mmlu_pro_full)")
    tasks.add_argument("--write", action="store_true",
                       help="write each task YAML's tag, higher_is_better and probe version from the taxonomy, the "
                            "MetricSpec and the generator (captrack.lmeval.wiring); other lines stay as written")
    tasks.add_argument("--check", action="store_true", help="as --write, but only list the YAMLs it would change (exit 1 if any)")
    tasks.add_argument("--new", metavar="TASK", help="write the folder of a new probe task (YAML, utils.py, README skeleton) "
                                                     "from --generator, --scorer and its taxonomy member")
    tasks.add_argument("--generator", help="with --new: the probe generator its items come from (@generator NAME)")
    tasks.add_argument("--scorer", help="with --new: the captrack scorer of a generated answer (none: forced choice, acc)")
    tasks.add_argument("--export", metavar="TASK", help="write TASK's prompts to --out as JSON Lines (id, doc_id, prompt), to "
                                                        "generate elsewhere and `captrack import --format jsonl`")
    tasks.add_argument("--n", type=cli_type(Count, int), metavar="N",
                       help="with --export: a probe's size, its first N generated items (import with --items N)")
    tasks.add_argument("--out", type=Path, metavar="FILE", help="with --export: the JSON Lines file to write (must not exist)")
    tasks.set_defaults(func=_cmd_tasks)


def _cmd_tasks(args: argparse.Namespace) -> int:
    from captrack.paths import full_tasks_dir, tasks_dir

    if args.path:
        print(full_tasks_dir() if args.full else tasks_dir())
        return 0
    if args.new:
        return _new(args.new, args.generator, args.scorer)
    if args.export:
        return _export(args.export, args.out, args.n)
    if args.write or args.check:
        return _write(check=args.check)
    from captrack.official.availability import available_tasks, mirror_in_use

    if args.available:
        found = available_tasks(Path(tasks_dir()))
        mirror = mirror_in_use()
        where = f"mirror {mirror}" if mirror else "no CAPTRACK_DATA_DIR mirror; the Hugging Face cache or hub"
        print(f"{len(found)} task(s) can run here ({where})", file=sys.stderr)
        print(",".join(found))
        return 0
    _list(Path(tasks_dir()))
    return 0


def _new(task: str, generator: str | None, scorer: str | None) -> int:
    from captrack.errors import InputError
    from captrack.lmeval.scaffold import new_probe_task

    if not generator:
        raise InputError("--new needs --generator NAME: the @generator its items come from")
    for path in new_probe_task(task, generator, scorer):
        print(f"wrote: {path}")
    print("next: the README's TODOs, the task's test (tests/probes/test_validity.py), then `make test`", file=sys.stderr)
    return 0


def _export(task: str, out: Path | None, n: int | None) -> int:
    from captrack.errors import InputError
    from captrack.lmeval.export import export_prompts

    if out is None:
        raise InputError("--export needs --out FILE: the JSON Lines file to write the prompts to")
    count = export_prompts(task, out, n)
    size = f" --items {n}" if n else ""
    print(f"wrote {count} prompts of {task} to {out}; add a 'response' to each line, then "
          f"`captrack import FILE --format jsonl --task {task}{size} --out RUN_DIR`", file=sys.stderr)
    return 0


def _write(check: bool) -> int:
    from captrack.lmeval.wiring import task_yamls, write_tasks

    changed = write_tasks(check=check)
    for path in changed:
        print(f"{'stale' if check else 'wrote'}: {path}")
    print(f"{len(changed)} of {len(task_yamls())} task YAML(s) {'differ from their wiring' if check else 'rewritten'}",
          file=sys.stderr)
    return 1 if check and changed else 0


def _list(folder: Path) -> None:
    from captrack.official.availability import data_status, task_metadata
    from captrack.taxonomy import load_taxonomy

    taxonomy = load_taxonomy()
    print(f"{'task':40s} {'data':52s} tags")
    for path in sorted(folder.glob("*/*.yaml"), key=lambda p: p.stem):
        task = f"captrack_{path.stem}"
        try:
            tags = ", ".join(taxonomy.tags_for(task)[1:])
        except CaptrackError:
            tags = "(not in the taxonomy)"
        status = data_status(task_metadata(path))
        data = status.source if not status.needs_data else f"{'ok' if status.available else 'MISSING'}: {status.source}"
        print(f"{task:40s} {data:52s} {tags}")
