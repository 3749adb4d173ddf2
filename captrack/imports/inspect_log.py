"""``captrack import --format inspect``: Inspect (inspect_ai) ``.eval`` logs.

An ``.eval`` log is a ZIP archive: ``header.json`` (``eval.task``, ``eval.model``, ``status``) and one
``samples/<id>_epoch_<n>.json`` per sample and epoch, holding ``id``, ``epoch``, ``input``, ``target``,
``output`` and ``scores`` (scorer name -> ``{value, answer, ...}``). Recent Inspect versions compress the
members with Zstandard (method 93), which Python's zipfile reads only from 3.14 on: those are decompressed
here with ``zstandard``. SRC is one ``.eval`` file or a folder of them (one task each).

Items are identified by the sample ``id``; the epoch becomes the replicate (epoch 1 -> replicate 0). The
outcome is the first scorer of the log (``--outcome SCORER`` picks another), converted as Inspect's own
``value_to_float`` does: ``C`` 1, ``I`` 0, ``P`` 0.5, ``N`` 0, yes/true 1, no/false 0, numbers as they are.
A sample without that score (an errored sample) is unscored (NaN). With ``--rescore`` the completions are
scored again by the captrack task named by ``--task``, the sample ids being that task's document ids.
"""

from __future__ import annotations

import hashlib
import math
import re
import struct
import zipfile
from pathlib import Path
from typing import Any

from captrack.backends.recorded_answers import ReplayRecord
from captrack.bounded import load_json
from captrack.errors import InputError
from captrack.imports.formats import ReadOptions, Source, adapter
from captrack.imports.reading import SourceBytes, max_source_bytes, read_bytes, text_id
from captrack.imports.tool_outcomes import Outcome, outcome_value

__all__ = ["read_inspect"]

_ZSTD = 93
_VALUES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0, "YES": 1.0, "NO": 0.0, "TRUE": 1.0, "FALSE": 0.0}


def _member(archive: zipfile.ZipFile, data: bytes, info: zipfile.ZipInfo, where: str) -> bytes:
    """One member's bytes: stored/deflated through zipfile, Zstandard decompressed here (bounded, CRC checked)."""
    limit = max_source_bytes()
    if info.file_size > limit:
        raise InputError(f"{where}: larger than the import limit of {limit >> 20} MiB")
    if info.compress_type != _ZSTD:
        return archive.read(info)
    import zlib

    import zstandard

    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26: info.header_offset + 30])
    start = info.header_offset + 30 + name_len + extra_len
    raw = data[start: start + info.compress_size]
    if len(raw) != info.compress_size:
        raise InputError(f"{where}: the archive ends inside this member (truncated)")
    out = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    if len(out) != info.file_size or zlib.crc32(out) != info.CRC:
        raise InputError(f"{where}: damaged member (size or CRC-32 differs from the archive's directory)")
    return bytes(out)


def _json(where: str, data: bytes) -> dict[str, Any]:
    try:
        value = load_json(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{where}: not JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise InputError(f"{where}: expected a JSON object")
    return value


def _completion(output: Any) -> str:
    if not isinstance(output, dict):
        return ""
    if isinstance(output.get("completion"), str) and output["completion"]:
        return str(output["completion"])
    choices = output.get("choices") or []
    content = (choices[0].get("message") or {}).get("content") if choices and isinstance(choices[0], dict) else ""
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def _score(where: str, value: Any) -> float:
    """A score value as Inspect's value_to_float reads it."""
    if isinstance(value, str):
        key = value.strip().upper()
        if key in _VALUES:
            return _VALUES[key]
        try:
            return float(key)
        except ValueError as exc:
            raise InputError(f"{where}: score value {value!r} is not one Inspect reads as a number "
                             "(C, I, P, N, yes/no, a number)") from exc
    if isinstance(value, dict | list):
        raise InputError(f"{where}: the score holds several values ({str(value)[:60]}); name one with --outcome SCORER")
    return outcome_value(where, value)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # chat messages
        return "\n".join(str(m.get("content", "")) if isinstance(m, dict) else str(m) for m in value)
    return "" if value is None else str(value)


def _read_log(path: Path, options: ReadOptions) -> tuple[list[Outcome], str, str, str]:
    """One .eval log: its outcomes, the model, the scorer read, and the SHA-256 of the file."""
    source: SourceBytes = read_bytes(path)
    import io

    try:
        archive = zipfile.ZipFile(io.BytesIO(source.data))
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(f"{path}: not an Inspect .eval log (a ZIP archive): {exc}; the file is truncated or damaged") from exc
    with archive:
        members = {i.filename: i for i in archive.infolist()}
        if "header.json" not in members:
            raise InputError(f"{path}: no header.json; the log is unfinished or truncated (Inspect writes it last)")
        header = _json(f"{path}:header.json", _member(archive, source.data, members["header.json"], f"{path}:header.json"))
        spec = header.get("eval") or {}
        task = re.sub(r"[/\\]", "_", str(spec.get("task") or path.stem))
        names = [n for n in members if re.fullmatch(r"samples/.+_epoch_\d+\.json", n)]
        if not names:
            raise InputError(f"{path}: no samples/<id>_epoch_<n>.json members (status {header.get('status')!r})")
        samples = [_json(f"{path}:{n}", _member(archive, source.data, members[n], f"{path}:{n}")) for n in names]
    scorer = options.outcome or _first_scorer(path, spec, samples)
    if not any(scorer in (sample.get("scores") or {}) for sample in samples):
        known = sorted({str(k) for sample in samples for k in (sample.get("scores") or {})})
        raise InputError(f"{path}: no sample has a score from scorer {scorer!r} (scorers: {', '.join(known) or 'none'})")
    outcomes: list[Outcome] = []
    order: dict[str, int] = {}
    for name, sample in zip(names, samples, strict=True):
        where = f"{path}:{name}"
        item = text_id(where, sample.get("id"))
        epoch = sample.get("epoch")
        if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 1:
            raise InputError(f"{where}: epoch {epoch!r} is not a positive integer")
        scores = sample.get("scores") or {}
        score = scores.get(scorer)
        value = math.nan if score is None else _score(f"{where}: scores.{scorer}", (score or {}).get("value"))
        index = order.setdefault(item, len(order))
        outcomes.append(Outcome(task, item, epoch - 1, value, index, _completion(sample.get("output")),
                                _text(sample.get("input")), _text(sample.get("target"))))
    return outcomes, str(spec.get("model") or ""), scorer, source.sha256


def _first_scorer(path: Path, spec: dict[str, Any], samples: list[dict[str, Any]]) -> str:
    for entry in spec.get("scorers") or []:
        if isinstance(entry, dict) and entry.get("name"):
            return str(entry["name"])
    for sample in samples:
        if sample.get("scores"):
            return str(next(iter(sample["scores"])))
    raise InputError(f"{path}: its samples hold no scores; score the log first (`inspect score`)")


@adapter("inspect")
def read_inspect(src: Path, task: str | None, options: ReadOptions) -> Source:
    """Inspect ``.eval`` logs: samples by ``id`` and ``epoch``, the first scorer's value the outcome."""
    files = sorted(src.glob("*.eval")) if src.is_dir() else [src]
    if not files:
        raise InputError(f"{src}: no .eval logs in this folder")
    outcomes, models, scorers, digest = [], set(), set(), hashlib.sha256()
    for path in files:
        rows, model, scorer, sha = _read_log(path, options)
        digest.update(f"{path.name}\t{sha}\n".encode())
        outcomes += rows
        models.add(model)
        scorers.add(scorer)
    model = next(iter(models)) if len(models) == 1 and "" not in models else src.stem
    target = task or (outcomes[0].task if outcomes else "")
    records = [] if any(o.replicate for o in outcomes) else [
        ReplayRecord(task=target, response=o.response, id=o.item, prompt=o.prompt or None) for o in outcomes]
    note = f"Inspect's own score per (sample id, epoch), scorer {', '.join(sorted(scorers))} (value_to_float)"
    return Source(records, model.replace("/", "__"), digest.hexdigest(), outcomes, note)
