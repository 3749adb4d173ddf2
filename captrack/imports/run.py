"""`captrack import`: score generations made elsewhere with captrack's tasks, into an ordinary lm-eval run.

The source is read by its format's adapter, matched document by document to the task's docs (by the
document's id, or lm-eval's index), then lm-eval runs the task with the `captrack-replay` backend.
Everything is written to a temporary sibling of RUN_DIR that is renamed at the end, so a failed
import (a missing or duplicated id, a refused task) leaves RUN_DIR untouched.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captrack.backends.recorded_answers import ReplayRecord, missing_message, write_replay
from captrack.bounded import load_json
from captrack.errors import InputError, UnknownNameError
from captrack.files import current_umask, write_atomic
from captrack.imports.formats import ReadOptions, Source, read_source
from captrack.imports.tool_outcomes import check_unique, select_task, write_outcomes
from captrack.results.runfiles import file_sha256

__all__ = ["REPLAY_FILE", "ImportResult", "Matched", "clean_stale_imports", "import_run", "model_name", "source_sha256"]

REPLAY_FILE = "replay.jsonl"  # the records replayed, kept in RUN_DIR beside lm-eval's files


@dataclass(frozen=True)
class Matched:
    """One task's match of source records to its docs: the doc indices scored and what did not match."""

    task: str
    indices: list[int]
    n_docs: int
    source_only: list[str] = field(default_factory=list)
    task_only: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ImportResult:
    """What `import_run` wrote."""

    out: Path
    results_file: Path
    matched: list[Matched]
    provenance: dict[str, Any]


def source_sha256(src: Path) -> str:
    """SHA-256 of the source file; of a folder, of its files' relative paths and SHA-256s in order."""
    if src.is_file():
        return file_sha256(src)
    digest = hashlib.sha256()
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(src).as_posix()}\t{file_sha256(path)}\n".encode())
    return digest.hexdigest()


def model_name(name: str, origin: str) -> str:
    """`name` as lm-eval will use it for a folder under RUN_DIR; refused when that folder would be RUN_DIR or its parent.

    lm-eval writes into ``<output_path>/<name with / and other reserved characters as __>``.

    Raises:
        InputError: the name is empty, ``.``, ``..`` or has a control character (its `origin` named).
    """
    shown = re.sub(r"[\"<>:/\\|?*\[\]]+", "__", name).strip()
    if shown in ("", ".", "..") or any(ord(c) < 32 for c in name):
        raise InputError(f"model name {name!r} (from {origin}) cannot name a folder inside RUN_DIR; "
                         "pass --name with at least one letter or digit")
    return name


def _check_duplicates(src: Path, records: list[ReplayRecord]) -> None:
    counts = Counter((r.task, r.id if r.id is not None else f"#{r.doc_id}") for r in records)
    twice = [f"{task}/{key}" for (task, key), n in counts.items() if n > 1]
    if twice:
        raise InputError(missing_message(f"{src}: documents with more than one response", twice,
                                         "keep one response per document; nothing was written"))


def _task_docs(tasks: list[str], metadata: Mapping[str, Any] | None = None) -> dict[str, list[Any]]:
    """Each task's documents in lm-eval's order (their index is lm-eval's doc_id), built with `metadata` (a probe's n)."""
    from captrack.lmeval import task_manager

    manager = task_manager(include_defaults=False, metadata=dict(metadata) if metadata else None)
    unknown = [t for t in tasks if not manager.match_tasks([t])]
    if unknown:
        raise UnknownNameError("captrack task", unknown[0], manager.match_tasks(["captrack_*"]))
    loaded = manager.load(tasks)["tasks"]
    return {t: list(loaded[t].eval_docs) for t in tasks}


def _match(task: str, docs: list[Any], records: list[ReplayRecord], id_field: str) -> Matched:
    """Map each record to its doc index; list the records no doc has and the docs no record has.

    Raises:
        InputError: two records name one document (once by ``id``, once by ``doc_id``, or twice); both named.
    """
    index = {str(d[id_field]): i for i, d in enumerate(docs) if isinstance(d, dict) and d.get(id_field) is not None}
    if any(r.id is not None for r in records) and not index:
        raise InputError(f"task {task}: its documents have no {id_field!r} field; key the source by doc_id (lm-eval's index)")
    found: dict[int, str] = {}
    source_only, twice, crossed = [], [], []
    for r in records:
        key = f"id {r.id}" if r.id is not None else f"doc_id {r.doc_id}"
        i = index.get(r.id) if r.id is not None else r.doc_id
        if r.id is not None and r.doc_id is not None and i is not None and i != r.doc_id:
            crossed.append(f"id {r.id} is document #{i} but its doc_id says #{r.doc_id}")
        elif i is None or not 0 <= i < len(docs):
            source_only.append(r.id if r.id is not None else f"#{r.doc_id}")
        elif i in found:
            twice.append(f"{task}/{found[i]} and {key} (document #{i})")
        else:
            found[i] = key
    if crossed:
        raise InputError(missing_message(f"task {task}: lines whose id and doc_id name two documents", crossed,
                                         "export the prompts again at the size you import (--items N), or keep one of "
                                         "the two keys; nothing was written"))
    if twice:
        raise InputError(missing_message("documents given more than once (by id and doc_id, or twice)", twice,
                                         "keep one response per document; nothing was written"))
    label = {i: key for key, i in index.items()}
    task_only = [label.get(i, f"#{i}") for i in range(len(docs)) if i not in found]
    return Matched(task, sorted(found), len(docs), source_only, task_only)


def _refuse_mismatch(matched: list[Matched], allow_partial: bool) -> None:
    problems = []
    for m in matched:
        size = ("; a probe has as many items as its metadata n: give the size its prompts were exported with (--items N; "
                "an experiment's metadata: {n: N})") if m.task.startswith("captrack_probe_") else ""
        if m.source_only:
            problems.append(missing_message(f"in the source but not in task {m.task}", m.source_only, "check the ids" + size))
        if m.task_only:
            problems.append(missing_message(f"in task {m.task} but not in the source", m.task_only, "add their responses" + size))
        if not m.indices:
            raise InputError(f"no document of task {m.task} has a response in the source; nothing was written. "
                             + " | ".join(problems))
    if problems and not allow_partial:
        raise InputError(" | ".join(problems) + " | nothing was written; --allow-partial scores the intersection")


def import_run(src: str | Path, fmt: str, out: str | Path, task: str | None = None, name: str | None = None,
               allow_partial: bool = False, response_column: str = "outputs", id_field: str = "id",
               log: Callable[[str], None] | None = None, metadata: Mapping[str, Any] | None = None,
               outcome: str | None = None, rescore: bool = False) -> ImportResult:
    """Score the generations in `src` with captrack's task(s) and write an lm-eval run folder at `out`.

    `metadata`: task metadata the documents are built with, as lm-eval's ``--metadata`` (a probe's size:
    ``{"n": 96}``, what `captrack import --items 96` passes; the same as the prompts were exported with).
    Another tool's log (a format whose adapter gives outcomes) is imported with the tool's own per-item
    outcomes as the scores (`outcome` picks which of its metrics), unless `rescore` asks captrack's task
    to score its responses again.

    Raises:
        InputError: `out` exists and is not empty, the source is malformed, ids are duplicated, or
            source and task disagree on the documents (without `allow_partial`); `out` is untouched.
    """
    source_path, target = _resolved(Path(src), "SRC"), _target(Path(out))
    if name is not None:
        model_name(name, "--name")
    source = read_source(fmt, source_path, task, ReadOptions(response_column, outcome, allow_partial))
    name = model_name(name or source.name, "--name" if name is not None else source.name_from or f"the name of {source_path}")
    if source.outcomes and not rescore:
        return _import_outcomes(source, source_path, target, fmt, task, name)
    if rescore and not source.records:
        raise InputError(f"{source_path}: --rescore needs responses keyed by a captrack or lm-eval document; "
                         f"this {fmt} source has none, so its own outcomes are the scores (drop --rescore)")
    _check_duplicates(source_path, source.records)
    tasks = sorted({r.task for r in source.records})
    if not tasks:
        raise InputError(f"{source_path}: holds no responses")
    docs = _task_docs(tasks, metadata)
    matched = [_match(t, docs[t], [r for r in source.records if r.task == t], id_field) for t in tasks]
    _refuse_mismatch(matched, allow_partial)
    for m in matched:
        if log and (m.source_only or m.task_only):
            log(f"{m.task}: scoring {len(m.indices)} of {m.n_docs} documents; {len(m.task_only)} have no response, "
                f"{len(m.source_only)} responses match no document")
    provenance = {"source": str(source_path), "format": fmt, "sha256": source.sha256 or source_sha256(source_path)}
    return _write_run(source, target, matched, provenance, id_field, name, dict(metadata or {}))


def _import_outcomes(source: Source, source_path: Path, target: Path, fmt: str, task: str | None,
                     name: str) -> ImportResult:
    """Write the tool's own per-item outcomes as an lm-eval run folder (staged, then renamed)."""
    outcomes = select_task(source_path, source.outcomes, task)
    check_unique(source_path, outcomes)
    provenance = {"source": str(source_path), "format": fmt, "sha256": source.sha256 or source_sha256(source_path)}
    with _staged(target) as work:
        first = write_outcomes(outcomes, work, name, provenance, source.note)
        results = target / first.relative_to(work)
    provenance["outcomes"] = source.note
    matched = []
    for t in sorted({o.task for o in outcomes}):
        items = sorted({o.index for o in outcomes if o.task == t})
        matched.append(Matched(t, items, len(items)))
    return ImportResult(target, results, matched, provenance)


def _resolved(path: Path, what: str) -> Path:
    """`path` made absolute with its links followed.

    Raises:
        InputError: a symbolic-link loop.
    """
    try:
        return path.resolve(strict=False)
    except (OSError, RuntimeError) as exc:  # RuntimeError: a link loop before Python 3.13
        raise InputError(f"{what} {path}: cannot be resolved ({exc}); fix the symbolic link") from exc


def _target(out: Path) -> Path:
    """RUN_DIR checked before any work: a new or empty folder (a link to one is followed)."""
    if out.is_symlink() and not out.exists():
        raise InputError(f"RUN_DIR {out} is a symbolic link to nothing; give a new folder path")
    target = _resolved(out, "RUN_DIR") if out.is_symlink() else out
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InputError(f"{out} already exists and is not empty; choose a new RUN_DIR")
    if target.parent.exists() and not target.parent.is_dir():
        raise InputError(f"{target.parent} is a file; RUN_DIR must be inside a folder")
    return target


@contextmanager
def _staged(target: Path) -> Iterator[Path]:
    """A temporary sibling of `target` to write into, renamed to `target` when the block ends without an error
    (removed otherwise: a failed import leaves nothing)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_imports(target)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}{_TEMP_MARK}", dir=target.parent))
    (work / _OWNER).write_text(str(os.getpid()), encoding="utf-8")
    try:
        yield work
        (work / _OWNER).unlink()
        os.chmod(work, 0o777 & ~current_umask())  # mkdtemp's 0700 -> what mkdir would have made
        if target.exists():
            target.rmdir()  # an empty folder the user made beforehand
        work.rename(target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _write_run(source: Source, target: Path, matched: list[Matched], provenance: dict[str, Any],
               id_field: str, name: str, metadata: dict[str, Any]) -> ImportResult:
    """Run lm-eval with the replay backend into a temporary sibling of `target`, then rename it."""
    from captrack.lmeval.evaluate import EvalSpec, evaluate_checkpoint

    with _staged(target) as work:
        replay = write_replay(work / REPLAY_FILE, [dataclasses.replace(r, doc_id=None) if r.id is not None else r
                                                   for r in source.records])  # an id checked against its doc_id: one key
        complete = all(len(m.indices) == m.n_docs for m in matched)
        spec = EvalSpec(
            model="captrack-replay",
            model_args={"pretrained": name, "responses": str(replay), "id_field": id_field, **provenance},
            tasks=[m.task for m in matched], batch_size=1, apply_chat_template=False, device="cpu",
            samples=None if complete else {m.task: m.indices for m in matched}, metadata=metadata,
        )
        results = evaluate_checkpoint(spec, work)
        _record_import(results, work, target, provenance, matched)
    return ImportResult(target, target / results.relative_to(work), matched, provenance)


_TEMP_MARK = ".import-"
_OWNER = ".captrack-import-owner"  # the PID of the import writing a temp folder


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def clean_stale_imports(target: Path) -> list[Path]:
    """Remove temp folders of earlier imports to `target` whose process is gone (killed, e.g. kill -9); returns them."""
    removed = []
    for folder in target.parent.glob(f".{glob.escape(target.name)}{_TEMP_MARK}*"):
        try:
            owner = int((folder / _OWNER).read_text(encoding="utf-8").strip() or 0)
        except (OSError, ValueError):
            owner = 0
        try:  # a folder made this instant may not have its owner file yet
            fresh = not owner and time.time() - folder.stat().st_mtime < 60
        except OSError:
            continue
        if folder.is_dir() and not fresh and not (owner and _alive(owner)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _record_import(results: Path, work: Path, target: Path, provenance: dict[str, Any], matched: list[Matched]) -> None:
    """Say in the results file that its responses were imported, and from what (atomic rewrite)."""
    data = load_json(results.read_text(encoding="utf-8"))
    args = data.setdefault("config", {}).setdefault("model_args", {})
    if isinstance(args, dict):
        args["responses"] = str(target / REPLAY_FILE)  # where the replay file lands after the rename
    data["captrack_import"] = {
        **provenance,
        "replay_file": REPLAY_FILE,
        "tasks": {m.task: {"scored": len(m.indices), "documents": m.n_docs, "without_response": m.task_only,
                           "matching_no_document": m.source_only} for m in matched},
    }
    write_atomic(results, json.dumps(data, indent=2, ensure_ascii=False, default=str))
