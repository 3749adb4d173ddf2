"""Reading one Inspect ``.eval`` log: a bounded check of the archive, then Inspect's own reader where installed.

The ``.eval`` layout is Inspect's, not a frozen spec, so where ``inspect_ai`` is installed the log is read by its
``read_eval_log`` (from the bytes captrack read and hashed, never the path again). Before that reader sees the
archive, :class:`captrack.imports.bounded_zip.BoundedZip` decompresses every member it will read in bounded
chunks and checks their sizes and CRC-32s, so a small archive that expands to gigabytes is refused in one line
first. Without ``inspect_ai`` (or with ``CAPTRACK_INSPECT_READER=captrack``) the same bounded reader parses the
members itself: ``header.json`` and ``samples/<id>_epoch_<n>.json``.

A sample member Inspect wrote twice (a requeued sample's re-run) is superseded by its last copy, as Inspect
reads it, and the count is reported; any other member name held twice is refused.
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captrack.bounded import load_json
from captrack.errors import InputError
from captrack.imports.bounded_zip import BoundedZip
from captrack.imports.reading import read_bytes

__all__ = ["READER_ENV", "LogContent", "read_log_content"]

READER_ENV = "CAPTRACK_INSPECT_READER"
"""``captrack`` forces captrack's own bounded reader even where inspect_ai is installed; ``inspect`` requires
inspect_ai's reader; unset or ``auto``: inspect_ai's where installed."""
_SAMPLE = re.compile(r"samples/.+_epoch_\d+\.json")
_HEADER = "header.json"


@dataclass(frozen=True)
class LogContent:
    """What one log holds, in the layout of Inspect's JSON: the header's fields and each sample's."""

    header: dict[str, Any]
    samples: list[tuple[str, dict[str, Any]]]
    """(where, sample) with ``id``, ``epoch``, ``input``, ``target``, ``output`` (``completion``) and ``scores``
    (scorer -> ``{value}``)."""
    superseded: int
    sha256: str
    reader: str


def _json(where: str, data: bytes) -> dict[str, Any]:
    try:
        value = load_json(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{where}: not JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise InputError(f"{where}: expected a JSON object")
    return value


def _use_inspect() -> bool:
    choice = os.environ.get(READER_ENV, "auto").strip().lower() or "auto"
    if choice not in ("auto", "inspect", "captrack"):
        raise InputError(f"{READER_ENV}={choice!r}: give auto, inspect (inspect_ai's reader) or captrack (the bounded "
                         "reader of captrack)")
    found = importlib.util.find_spec("inspect_ai") is not None
    if choice == "inspect" and not found:
        raise InputError(f"{READER_ENV}=inspect but inspect_ai is not installed; install it or unset {READER_ENV}")
    return found and choice != "captrack"


def read_log_content(path: Path, use_inspect: bool | None = None) -> LogContent:
    """One ``.eval`` log, checked with a bound and read by inspect_ai (`use_inspect`, default: where installed).

    Raises:
        InputError: not a ZIP, no ``header.json``, a member over the import limit or its declared size,
            damaged, held twice, or a log Inspect's reader refuses (the file and member named).
    """
    source = read_bytes(path)
    archive = BoundedZip(source, path, "an Inspect .eval log")
    with archive.archive:
        latest = archive.latest()
        archive.refuse_repeated(name for name in latest if not _SAMPLE.fullmatch(name))
        superseded = sum(1 for info in archive.infos if _SAMPLE.fullmatch(info.filename)) - \
            sum(1 for name in latest if _SAMPLE.fullmatch(name))
        if _HEADER not in latest:
            raise InputError(f"{path}: no header.json; the log is unfinished or truncated (Inspect writes it last)")
        if use_inspect if use_inspect is not None else _use_inspect():
            archive.verify(latest.values())  # everything Inspect's reader may open, bounded, before it opens it
            header, samples, reader = _by_inspect(path, source.data)
        else:
            wanted = [info for name, info in latest.items() if name == _HEADER or _SAMPLE.fullmatch(name)]
            archive.verify(wanted)  # a bomb refused before any member is kept in memory
            header = _json(f"{path}:{_HEADER}", archive.read(latest[_HEADER]))
            samples = [(f"{path}:{info.filename}", _json(f"{path}:{info.filename}", archive.read(info)))
                       for info in wanted if info.filename != _HEADER]
            reader = "captrack's bounded reader"
    return LogContent(header, samples, superseded, source.sha256, reader)


def _by_inspect(path: Path, data: bytes) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]], str]:
    """The header fields and samples captrack uses, read by inspect_ai's ``read_eval_log`` from `data`."""
    import inspect_ai
    from inspect_ai.log import read_eval_log

    try:
        log = read_eval_log(io.BytesIO(data), format="eval")
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, OSError, RuntimeError, zipfile.BadZipFile) as exc:
        text = " ".join(str(exc).split())[:200]
        raise InputError(f"{path}: Inspect's reader (inspect_ai {inspect_ai.__version__}) cannot read this log: "
                         f"{type(exc).__name__}: {text}") from exc
    header = {"status": log.status,
              "eval": log.eval.model_dump(mode="json", include={"task", "model", "scorers", "dataset", "config"}),
              "results": None if log.results is None else {"total_samples": log.results.total_samples}}
    samples = []
    for sample in log.samples or []:
        messages = sample.input if isinstance(sample.input, str) else [{"content": m.text} for m in sample.input]
        samples.append((f"{path}:samples/{sample.id}_epoch_{sample.epoch}.json", {
            "id": sample.id, "epoch": sample.epoch, "input": messages, "target": sample.target,
            "output": {"completion": sample.output.completion if sample.output else ""},
            "scores": {name: {"value": score.value} for name, score in (sample.scores or {}).items()}}))
    return header, samples, f"inspect_ai {inspect_ai.__version__}'s reader"
