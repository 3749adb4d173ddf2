"""``captrack import --format inspect``: Inspect (inspect_ai) ``.eval`` logs.

An ``.eval`` log is a ZIP archive: ``header.json`` (``eval.task``, ``eval.model``, ``status``) and one
``samples/<id>_epoch_<n>.json`` per sample and epoch, holding ``id``, ``epoch``, ``input``, ``target``,
``output`` and ``scores`` (scorer name -> ``{value, answer, ...}``). It is read by
:mod:`captrack.imports.inspect_files`: every member checked with a bound first (a Zstandard or deflate bomb is
refused in one line), then Inspect's own reader where inspect_ai is installed, captrack's bounded reader
otherwise. SRC is one ``.eval`` file or a folder of them (one task each).

A log Inspect did not finish (status ``error``, ``cancelled``) is refused, naming how many samples are missing;
``--allow-partial`` imports the samples it holds and the import's note says how many are missing.

Items are identified by the sample ``id``; the epoch becomes the replicate (epoch 1 -> replicate 0). The
outcome is the first scorer of the log (``--outcome SCORER`` picks another), converted as Inspect's own
``value_to_float`` does: ``C`` 1, ``I`` 0, ``P`` 0.5, ``N`` 0, yes/true 1, no/false 0, numbers as they are,
every value held to [0, 1] (text such as "7", "inf" or "nan" is refused). A sample without that score (an
errored sample) is unscored (NaN). With ``--rescore`` the completions are
scored again by the captrack task named by ``--task``, the sample ids being that task's document ids.
"""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path
from typing import Any

from captrack.backends.recorded_answers import ReplayRecord
from captrack.errors import InputError
from captrack.imports.formats import ReadOptions, Source, adapter
from captrack.imports.inspect_files import LogContent, read_log_content
from captrack.imports.reading import text_id
from captrack.imports.tool_outcomes import Outcome, outcome_value

__all__ = ["read_inspect"]

_VALUES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0, "YES": 1.0, "NO": 0.0, "TRUE": 1.0, "FALSE": 0.0}
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


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
    """A score value as Inspect's value_to_float reads it, then held to [0, 1] like every tool's outcome.

    Text is a letter grade (C, I, P, N), yes/no, true/false or a plain decimal number; "inf", "nan" and other
    text are refused, and a number outside [0, 1] ("7") is refused as a number would be.
    """
    if isinstance(value, str):
        key = value.strip().upper()
        if key in _VALUES:
            return _VALUES[key]
        if not _NUMBER.fullmatch(key):
            raise InputError(f"{where}: score value {value!r} is not one captrack reads as an outcome (C, I, P, N, "
                             "yes/no, true/false or a number in [0, 1]); name another scorer with --outcome SCORER")
        return outcome_value(where, float(key))
    if isinstance(value, dict | list):
        raise InputError(f"{where}: the score holds several values ({str(value)[:60]}); name one with --outcome SCORER")
    return outcome_value(where, value)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # chat messages
        return "\n".join(str(m.get("content", "")) if isinstance(m, dict) else str(m) for m in value)
    return "" if value is None else str(value)


def _expected(header: dict[str, Any]) -> int | None:
    """How many sample records the run planned: Inspect's total_samples, else its samples (count or ids) x epochs."""
    total = (header.get("results") or {}).get("total_samples")
    if isinstance(total, int) and not isinstance(total, bool) and total > 0:
        return total
    spec = header.get("eval") or {}
    dataset, epochs = spec.get("dataset") or {}, (spec.get("config") or {}).get("epochs") or 1
    ids, count = dataset.get("sample_ids"), dataset.get("samples")  # inspect_ai fills missing ids from those present
    planned = max(len(ids) if isinstance(ids, list) else 0, count if isinstance(count, int) else 0)
    return planned * epochs if planned > 0 and isinstance(epochs, int) and epochs > 0 else None


def _partial(path: Path, log: LogContent, options: ReadOptions) -> str:
    """Refuse a log Inspect did not finish (status error, cancelled, started) unless allowed; what is missing."""
    status = log.header.get("status")
    if status == "success":
        return ""
    expected, present = _expected(log.header), len({(s.get("id"), s.get("epoch")) for _, s in log.samples})
    missing = (f"{max(expected - present, 0)} of its {expected} samples missing" if expected is not None
               else "it does not record how many samples it planned")
    if not options.allow_partial:
        raise InputError(f"{path}: Inspect marks this log {status!r}, {missing}; nothing was written. Finish the run "
                         f"(`inspect eval-retry {path}`), or import the {present} samples it holds with --allow-partial")
    return f"; log status {status!r}: {missing}, the {present} it holds imported (--allow-partial)"


def _read_log(path: Path, options: ReadOptions) -> tuple[list[Outcome], str, str, str, str]:
    """One .eval log: its outcomes, the model, the scorer read, the SHA-256 of the file and what to note."""
    log = read_log_content(path)
    note = _partial(path, log, options)
    spec = log.header.get("eval") or {}
    task = re.sub(r"[/\\]", "_", str(spec.get("task") or path.stem))
    if not log.samples:
        raise InputError(f"{path}: no samples/<id>_epoch_<n>.json members (status {log.header.get('status')!r})")
    samples = [sample for _, sample in log.samples]
    scorer = options.outcome or _first_scorer(path, spec, samples)
    if not any(scorer in (sample.get("scores") or {}) for sample in samples):
        known = sorted({str(k) for sample in samples for k in (sample.get("scores") or {})})
        raise InputError(f"{path}: no sample has a score from scorer {scorer!r} (scorers: {', '.join(known) or 'none'})")
    outcomes: list[Outcome] = []
    order: dict[str, int] = {}
    for where, sample in log.samples:
        item = text_id(where, sample.get("id"))
        epoch = sample.get("epoch")
        if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 1:
            raise InputError(f"{where}: epoch {epoch!r} is not a positive integer")
        score = (sample.get("scores") or {}).get(scorer)
        value = math.nan if score is None else _score(f"{where}: scores.{scorer}", (score or {}).get("value"))
        index = order.setdefault(item, len(order))
        outcomes.append(Outcome(task, item, epoch - 1, value, index, _completion(sample.get("output")),
                                _text(sample.get("input")), _text(sample.get("target"))))
    if log.superseded:
        note += (f"; {log.superseded} sample record(s) written again by Inspect (a requeued sample), the last copy "
                 "taken as Inspect reads it")
    return outcomes, str(spec.get("model") or ""), scorer, log.sha256, f"{path.name}: read by {log.reader}{note}"


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
    outcomes, models, scorers, digest, notes = [], set(), set(), hashlib.sha256(), []
    for path in files:
        rows, model, scorer, sha, read = _read_log(path, options)
        digest.update(f"{path.name}\t{sha}\n".encode())
        outcomes += rows
        models.add(model)
        scorers.add(scorer)
        notes.append(read)
    from_log = len(models) == 1 and "" not in models
    model = next(iter(models)) if from_log else src.stem
    name_from = f"eval.model in {files[0]}" if from_log else ""
    target = task or (outcomes[0].task if outcomes else "")
    records = [] if any(o.replicate for o in outcomes) else [
        ReplayRecord(task=target, response=o.response, id=o.item, prompt=o.prompt or None) for o in outcomes]
    note = (f"Inspect's own score per (sample id, epoch), scorer {', '.join(sorted(scorers))} (value_to_float); "
            + "; ".join(notes))
    return Source(records, model.replace("/", "__"), digest.hexdigest(), outcomes, note, name_from)
