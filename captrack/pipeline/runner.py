"""`captrack run`: train (when asked) → evaluate every checkpoint → ingest → compare → leaderboard.

Every stage writes a marker holding the hash of its inputs; a stage whose marker matches is
skipped, so a second run reuses everything. Evaluation uses one lm-eval request cache per
checkpoint and seed (named by the model's fingerprint), which lm-eval fills request by request:
a run killed mid-evaluation redoes only the requests that had not finished.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from captrack.backends import LOCAL_HF
from captrack.errors import InputError, UnknownNameError
from captrack.lmeval.vllm_shim import VLLM_MODEL
from captrack.pipeline.batches import Runs, check_executor, check_placements, run_batch, run_here
from captrack.pipeline.board import board_yaml, claim_board, experiment_comparisons, write_board
from captrack.pipeline.checkpoint_sweep import run_folders
from captrack.pipeline.dtype_choice import uses_bf16
from captrack.pipeline.experiment import Experiment, config_hash, more_items_hint
from captrack.pipeline.job_stages import DS_MODEL, eval_stage, train_stage
from captrack.pipeline.jobs import Placement
from captrack.pipeline.stage import Stage
from captrack.report.escape import console_text
from captrack.report.ownership import MANIFEST
from captrack.results.runfiles import results_files

if TYPE_CHECKING:
    from captrack.compare.board import BoardComparisons

__all__ = ["Stage", "limit_notes", "plan", "run_experiment", "validate"]

_LOCAL_WEIGHTS = (*LOCAL_HF, VLLM_MODEL)  # backends that load `pretrained` from a folder here (an alias is resolved first)


def _needs_resolving(spec: str) -> bool:
    """Whether `pretrained` names a captrack alias or a GGUF file (converted once into the model cache)."""
    from captrack.models import KNOWN_ALIASES

    return not Path(spec).expanduser().is_dir() and (spec.strip().lower() in KNOWN_ALIASES or spec.lower().endswith(".gguf"))


def _hub_id(spec: str) -> bool:
    """Whether `pretrained` names a Hugging Face hub model (not a folder here, an alias or a GGUF file)."""
    from captrack.pipeline.prepare import names_hub_model

    return not Path(spec).expanduser().exists() and not _needs_resolving(spec) and names_hub_model(spec)


def _fingerprint_file(path: Path) -> str:
    return f"{path.stat().st_size}:{path.stat().st_mtime_ns}" if path.is_file() else "missing"


def validate(experiment: Experiment) -> list[str]:
    """Fail before any work on a wrong model path, task name or label; return notes worth saying (limit_notes).

    Raises:
        InputError / UnknownNameError: with what to fix.
        ForeignFilesError: the board folder holds a file captrack did not write (captrack.report.ownership).
    """
    from captrack.lmeval import task_manager
    from captrack.models import KNOWN_ALIASES
    from captrack.pipeline.imported import validate_imports
    from captrack.pipeline.prepare import names_hub_model

    validate_imports(experiment)
    for checkpoint in experiment.checkpoints:
        if checkpoint.ranks > 1 and checkpoint.model != DS_MODEL:
            raise InputError(f"{experiment.source}: checkpoint {checkpoint.name!r}: ranks: {checkpoint.ranks} "
                             f"runs an evaluation over several processes, which only model: {DS_MODEL} does "
                             f"(got model: {checkpoint.model}); remove ranks or use {DS_MODEL}")
        if checkpoint.train or checkpoint.source or checkpoint.steps or checkpoint.model not in _LOCAL_WEIGHTS:
            continue  # trained here, imported, or checkpoints checked when the manifest was read
        pretrained = str(checkpoint.model_args["pretrained"])
        if pretrained.lower() not in KNOWN_ALIASES and not Path(pretrained).exists() and not names_hub_model(pretrained):
            raise InputError(f"{experiment.source}: checkpoint {checkpoint.name!r}: model path {pretrained} does not exist "
                             "(nor is it a Hugging Face hub id, org/name)")
    only_ours = all(t.startswith("captrack") for t in experiment.tasks)
    manager = task_manager(metadata=experiment.metadata or None, include_defaults=not only_ours)  # built once: limit_notes, items
    for pattern in experiment.tasks:
        if not manager.match_tasks([pattern]):
            raise UnknownNameError("task", pattern, manager.all_subtasks)
    selected = manager.match_tasks(list(experiment.tasks))
    for task in experiment.items:
        if task not in selected:
            raise UnknownNameError("task in 'items' (not among the experiment's tasks)", task, selected)
    _check_item_counts(experiment)
    claim_board(experiment)  # a board folder holding the user's files is refused now, not after the evaluations
    check_executor(experiment, Runs())
    return limit_notes(experiment)


def _check_item_counts(experiment: Experiment) -> None:
    """Refuse `items` asking a task for more distinct items than it has (before any model loads)."""
    from captrack.lmeval import task_manager

    if not experiment.items:
        return
    manager = task_manager(metadata=experiment.metadata or None, include_defaults=not all(t.startswith("captrack") for t in experiment.tasks))
    loaded = manager.load(sorted(experiment.items))["tasks"]
    for task, wanted in sorted(experiment.items.items()):
        found = len(loaded[task].eval_docs)
        if found < wanted:
            raise InputError(f"{experiment.source}: items asks {task} for {wanted} items but it has {found} distinct "
                             f"items{' with metadata ' + str(experiment.metadata) if experiment.metadata else ''}; "
                             + more_items_hint(task, wanted, found, experiment.metadata))



def limit_notes(experiment: Experiment) -> list[str]:
    """One line per task that has fewer items than a whole-number `limit` asks for (lm-eval silently runs fewer)."""
    from captrack.errors import CaptrackError
    from captrack.lmeval import task_manager

    if not isinstance(experiment.limit, int) or isinstance(experiment.limit, bool):
        return []
    manager = task_manager(metadata=experiment.metadata or None,
                           include_defaults=not all(t.startswith("captrack") for t in experiment.tasks))
    notes = []
    for task in manager.match_tasks(list(experiment.tasks)):
        try:
            found = len(manager.load([task])["tasks"][task].eval_docs)
        except (CaptrackError, KeyError):
            continue  # a task without data here is refused, with its fix, when it is evaluated
        if found < experiment.limit:
            more = " (a probe task generates more with metadata: {n: N})" if task.startswith("captrack_probe_") else ""
            notes.append(f"limit {experiment.limit}: {task} has {found} items, so it runs all {found}{more}")
    return notes


def plan(experiment: Experiment, console: Console, shown: BoardComparisons | None = None) -> list[Stage]:
    """The ordered stages of an experiment (nothing runs here).

    Args:
        shown: filled with the board's comparisons when the board stage runs (what `--fail-on` gates).
    """
    shown = [] if shown is None else shown
    from captrack.models import resolve_model
    from captrack.pipeline.imported import data_stage, import_stage

    stages: list[Stage] = []
    base = experiment.base
    base_spec = str(base.model_args.get("pretrained", ""))
    resolved: dict[str, str] = {}  # `pretrained` as written -> local folder (aliases, GGUF files)
    if experiment.data_sources is not None:
        stages.append(data_stage(experiment))

    def resolver(spec: str) -> Callable[[], Any]:
        if _hub_id(spec):  # loaded by its id (from the Hugging Face cache or the hub) where it is used
            return lambda: resolved.update({spec: spec})
        return lambda: resolved.update({spec: str(resolve_model(spec))})

    if not base.source:
        stages.append(Stage(f"resolve base model {base_spec}", experiment.work.marker("base-model"),
                            {"pretrained": base_spec}, resolver(base_spec), rerun_when_reused=True))
    others = {str(c.model_args.get("pretrained", "")) for c in experiment.checkpoints
              if c is not base and not c.train and not c.source and c.model in _LOCAL_WEIGHTS}
    for spec in sorted(s for s in others - {base_spec} if _needs_resolving(s)):  # every checkpoint named by an alias
        slug = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in spec)
        stages.append(Stage(f"resolve model {spec}", experiment.work.marker(f"model-{slug}"),
                            {"pretrained": spec}, resolver(spec), rerun_when_reused=True))
    for variant in experiment.variants:
        if variant.train:
            stages.append(train_stage(experiment, variant, lambda: resolved.get(base_spec, base_spec)))
    for checkpoint in experiment.checkpoints:
        for seed in experiment.seeds:
            stages += ([import_stage(experiment, checkpoint, seed)] if checkpoint.source else
                       [eval_stage(experiment, checkpoint, seed, resolved, step, out)  # a trajectory: one per step
                        for step, out in run_folders(experiment.work, checkpoint, seed)])
    runs, store = experiment.work.runs, experiment.work.store
    stages.append(Stage("ingest all runs", experiment.work.marker("ingest"),
                        lambda: {"results": sorted(str(p.relative_to(runs)) for p in results_files(runs))},
                        lambda: _ingest(experiment), produced=lambda: store.is_file()))
    board = experiment.leaderboard
    stages.append(Stage(f"compare and write leaderboard {board}", experiment.work.marker("leaderboard"),
                        lambda: {"store": _fingerprint_file(store), "board": board_yaml(experiment),
                                 "definition": _fingerprint_file(board / "leaderboard.yaml"),  # another run's board there
                                 "manifest": _fingerprint_file(board / MANIFEST), "code": _board_code()},
                        lambda: shown.extend(write_board(experiment)), produced=lambda: _board_whole(board)))
    return stages


def _board_code() -> str:
    """Hash of the code that turns a store into a board (analysis, comparison, report, taxonomy): a captrack that
    computes or draws differently rewrites the board instead of reusing the one an older captrack wrote."""
    import captrack

    root = Path(str(captrack.__file__)).parent
    files = sorted(p for sub in ("analysis", "compare", "report", "results") for p in (root / sub).glob("*.py"))
    return config_hash([p.read_text() for p in files] + [(root / "taxonomy.py").read_text()])


def _board_whole(folder: Path) -> bool:
    """Whether every file the board's manifest lists is still there (a deleted page or table rebuilds the board)."""
    from captrack.files import read_json_or_none

    manifest = read_json_or_none(folder / MANIFEST)
    files = manifest.get("files") if isinstance(manifest, dict) else None
    return isinstance(files, list) and bool(files) and all((folder / str(f)).is_file() for f in files)


def _ingest(experiment: Experiment) -> None:
    """Ingest every run into a new store beside the old one, verify it, then rename it into place.

    A failure (a full disk included) leaves the earlier store as it was.
    """
    from captrack.results.publish import discard_store, publish_store
    from captrack.results.runfiles import discover_runs
    from captrack.results.store import Store, StoreError

    store_path, tmp = experiment.work.store, experiment.work.new_store
    discard_store(tmp)
    runs_in = rows_in = 0
    try:
        with Store(tmp) as store:
            for checkpoint in experiment.checkpoints:
                for seed in experiment.seeds:
                    for step, folder in run_folders(experiment.work, checkpoint, seed):
                        done = store.ingest(discover_runs(folder), checkpoint.labels.labelled(replicate=seed, step=step),
                                            fixed=checkpoint in experiment.bases)
                        runs_in += len(done)
                        rows_in += sum(r.rows for r in done)
    except (StoreError, OSError) as exc:
        discard_store(tmp)
        kept = f"the earlier store {store_path} is kept" if store_path.exists() else "no store was written"
        raise InputError(f"could not write the store {tmp}: {' '.join(str(exc).split())}; {kept}; "
                         "free disk space if it is full and rerun") from exc
    except BaseException:
        discard_store(tmp)
        raise
    publish_store(tmp, store_path, runs_in, rows_in)


def run_experiment(experiment: Experiment, dry_run: bool = False, console: Console | None = None,
                   wait: bool = False, board: BoardComparisons | None = None, executor: str | None = None,
                   detach: bool = False) -> dict[str, float]:
    """Run (or, with `dry_run`, print) every stage; returns wall seconds per stage run.

    Consecutive side-by-side stages (trainings, evaluations) that have work to do run as jobs of the run's
    executor (`executor`, else the experiment's ``executor:``, else local: worker processes, one per usable core
    or packed onto the node's GPUs; captrack.pipeline.batches); the rest run here, one after another.
    One runner at a time holds the work folder (captrack.pipeline.lock): a second one refuses naming
    the holder's PID, or with `wait` waits for it; a lock file deleted or replaced while this one works
    stops it at the next stage.

    Args:
        executor: ``captrack run --executor NAME`` (captrack.pipeline.executors).
        detach: hand the jobs on and return without waiting for them (a later run re-attaches and finishes).
        board: when given (not a dry run), filled with this run's comparisons, the ones its board shows: those the
            board stage computed, or, when the stage was reused, computed again from the store (still under the
            lock), so a gate never reads a file of the board folder that another run may have written.

    Raises:
        WorkFolderBusyError: another `captrack run` holds the work folder (and not `wait`).
        LockLostError: the lock file was deleted or replaced while this run worked.
    """
    console = console or Console(soft_wrap=True)
    check_executor(experiment, Runs(executor, detach))  # first: a block or --detach that cannot be used runs nothing
    for note in validate(experiment) or []:
        console.print(f"[yellow]note:[/] {console_text(note)}", highlight=False)
    if dry_run:
        return _run_stages(experiment, dry_run, console, [], lambda: None, Runs(executor, False))
    from captrack.pipeline.lock import work_folder_lock

    shown: BoardComparisons = []
    with work_folder_lock(experiment.workdir, wait=wait, log=lambda line: console.print(line, markup=False)) as lock:
        timings = _run_stages(experiment, dry_run, console, shown, lock.check, Runs(executor, detach))
        if board is not None:
            if not shown:  # the board stage was reused: the same comparisons, from the same store, now
                console.print("[dim]comparing again for the gate (the board was reused)[/]")
                shown = experiment_comparisons(experiment)
            lock.check()
            board.extend(shown)
    return timings


def _run_stages(experiment: Experiment, dry_run: bool, console: Console, shown: BoardComparisons,
                check: Callable[[], None], runs: Runs) -> dict[str, float]:
    """Every stage in order, reused where its marker matches (run_experiment, under the work-folder lock, which
    `check` confirms is still this runner's before each stage and each marker)."""
    stages = plan(experiment, console, shown)
    check_placements(experiment, stages, runs, console)  # a stage that can never be placed: refused before any work
    timings: dict[str, float] = {}
    batch: list[Stage] = []

    def finish(stage: Stage, seconds: float, placement: Placement | None = None, queued: float = 0.0) -> None:
        check()
        timings[stage.title] = seconds
        stage.write_marker(placement, queued)
        waited = f" (queued {queued:.1f} s before it)" if queued >= 0.05 else ""
        console.print(f"[green]done[/] {console_text(stage.title)} in {seconds:.1f} s{waited}")

    for i, stage in enumerate(stages, start=1):
        check()
        label = f"[{i}/{len(stages)}] {stage.title}"
        waits = any(need in {b.title for b in batch} for need in stage.needs)  # judged once what it needs has run
        if stage.side_by_side and not dry_run and (waits or not stage.done()):
            console.print(f"{console_text(label)}: queued")
            batch.append(stage)
            continue
        if not stage.side_by_side:
            if not run_batch(experiment, batch, console, finish, runs):
                return timings  # detached: its jobs run on; a later run re-attaches
            batch = []
        if stage.done():
            console.print(f"[dim]{console_text(label)}: unchanged, reusing[/]")
            if stage.rerun_when_reused and not dry_run:
                stage.action()  # e.g. resolving the cached base: instant, and later stages need it
            continue
        if dry_run:
            console.print(f"{console_text(label)}: would run")
            continue
        console.rule(console_text(label))
        run_here(stage, console, finish, stage.job is not None and uses_bf16(experiment))
    run_batch(experiment, batch, console, finish, runs)
    return timings
