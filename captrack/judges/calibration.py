"""`captrack judge --calibrate`: how often a judge agrees with the team's labels (accuracy, Cohen's kappa).

The labelled sets live in calibration.yaml (package data). Each set is judged exactly as its judged
metric is (same prompt file, same parser) through the same cache and retry path. A NaN verdict counts
as a disagreement in ``accuracy`` and is left out of ``kappa`` (reported as ``nan``), so an
unparsable judge cannot look good by abstaining.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captrack.bounded import load_yaml
from captrack.errors import InputError
from captrack.judges.base import Judge, JudgeError
from captrack.judges.cache import JudgeCache, cache_key
from captrack.judges.catalog import JudgedMetric, all_judged
from captrack.judges.prompts import load_prompt
from captrack.judges.reply_parsing import Labels, Verdict, failed
from captrack.judges.retry import Budget, ask

__all__ = ["CALIBRATION_FILE", "Agreement", "calibrate"]

CALIBRATION_FILE = Path(__file__).resolve().parent / "calibration.yaml"


@dataclass
class Agreement:
    """Agreement of a judge with one labelled set."""

    set: str
    metric: str
    prompt: str
    n: int
    nan: int
    accuracy: float  # NaN verdicts count as wrong
    kappa: float  # Cohen's kappa over the items with a verdict (NaN when fewer than 2 or undefined)
    reasons: dict[str, int] = field(default_factory=dict)


def calibrate(judge: Judge, cache: JudgeCache, budget: Budget | None = None, path: Path = CALIBRATION_FILE) -> list[Agreement]:
    """Judge every labelled set and compare with the labels.

    Raises:
        InputError: a malformed calibration file (set and field named).
    """
    from sklearn.metrics import cohen_kappa_score

    budget = budget or Budget()
    raw = load_yaml(path.read_text(encoding="utf-8"))
    results = []
    for name, body in (raw.get("sets") or {}).items():
        spec = _spec(path, name, body)
        assert isinstance(spec.parser, Labels)
        labels = {k.upper(): v for k, v in spec.parser.values.items()}
        truth, verdicts = [], []
        for i, item in enumerate(body["items"]):
            if str(item.get("label", "")).upper() not in labels:
                raise InputError(f"{path}: set {name}, item {i}: label must be one of {sorted(labels)}")
            truth.append(labels[str(item["label"]).upper()])
            verdicts.append(_verdict(judge, cache, budget, spec, item))
        scored = [(t, v.value) for t, v in zip(truth, verdicts, strict=True) if v.ok]
        reasons: dict[str, int] = {}
        for v in verdicts:
            if not v.ok:
                reasons[v.code] = reasons.get(v.code, 0) + 1
        kappa = float("nan")
        if len(scored) >= 2 and len({t for t, _ in scored} | {p for _, p in scored}) > 1:
            kappa = float(cohen_kappa_score([t for t, _ in scored], [p for _, p in scored]))
        correct = sum(1 for t, p in scored if t == p)
        results.append(Agreement(name, spec.metric, load_prompt(spec.prompt).ref, len(truth), len(truth) - len(scored),
                                 correct / len(truth) if truth else float("nan"), kappa, reasons))
    return results


def _spec(path: Path, name: str, body: Any) -> JudgedMetric:
    if not isinstance(body, dict) or "metric" not in body or not body.get("items"):
        raise InputError(f"{path}: set {name!r} needs a metric and a non-empty items list")
    for spec in all_judged():
        if spec.metric == body["metric"] and isinstance(spec.parser, Labels):
            return spec
    raise InputError(f"{path}: set {name!r} names {body['metric']!r}, which is not a label-judged metric")


def _verdict(judge: Judge, cache: JudgeCache, budget: Budget, spec: JudgedMetric, item: dict[str, Any]) -> Verdict:
    prompt = load_prompt(spec.prompt)
    messages = prompt.render({f: str(item.get(f, "")) for f in prompt.fields})
    key = cache_key(judge.id, judge.settings(), prompt.ref, messages)
    reply = cache.get(key)
    if reply is None:
        try:
            reply = ask(judge, messages, budget)
        except JudgeError as exc:
            return failed(exc.code, exc.detail)
        cache.put(key, judge.id, prompt.ref, reply)
    return spec.parser.parse(reply)
