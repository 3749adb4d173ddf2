"""The MetricSpec registry: each per-sample metric is declared once, with its direction and kind.

Loading is acyclic and needs no list: every MetricSpec is declared in ``captrack.metrics.catalog``
(which imports nothing but this module; a ``declare(`` line marks it) and every module of
captrack.metrics with a line starting ``@scorer(`` is imported the first time a scorer is looked up
(:class:`captrack.registries.Registry`). The ``@scorer`` decorator checks its metrics against the
catalog only, so decorating never re-enters a half-imported scorer module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from captrack.errors import CaptrackError, UnknownNameError
from captrack.registries import Registry

__all__ = [
    "DIRECTIONS",
    "KINDS",
    "METRICS",
    "SCORERS",
    "Direction",
    "Kind",
    "MetricSpec",
    "RegisteredScorer",
    "Scorer",
    "all_metrics",
    "declare",
    "get_metric",
    "get_scorer",
    "lower_is_better",
    "score",
    "scored_answer",
    "scorer",
]

Direction = Literal["higher", "lower", "neutral"]
Kind = Literal["binary", "score", "count"]
DIRECTIONS: tuple[str, ...] = ("higher", "lower", "neutral")
KINDS: tuple[str, ...] = ("binary", "score", "count")

Scorer = Callable[[Mapping[str, Any], str], dict[str, float | None]]
F = TypeVar("F", bound=Scorer)


@dataclass(frozen=True)
class MetricSpec:
    """One per-sample metric.

    Attributes:
        name: the key lm-eval logs per sample (e.g. ``acc``).
        direction: ``higher`` / ``lower`` is better, or ``neutral`` (a style that has no good side).
        kind: ``binary`` (0/1 per item: transitions apply), ``score`` (in [0, 1]) or ``count``.
        description: one line a report reader understands.
        chance_from_choices: True when guessing among the item's k options scores 1/k (k read per item
            from the doc's ``choices`` at ingest; an item without options gets no chance term).
    """

    name: str
    direction: Direction
    kind: Kind
    description: str
    chance_from_choices: bool = False

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise CaptrackError(f"metric {self.name!r}: direction must be one of {DIRECTIONS}")
        if self.kind not in KINDS:
            raise CaptrackError(f"metric {self.name!r}: kind must be one of {KINDS}")

    @property
    def tracks_transitions(self) -> bool:
        """Whether 1→0 / 0→1 item transitions mean forgetting / gain for this metric."""
        return self.kind == "binary" and self.direction != "neutral"


@dataclass(frozen=True)
class RegisteredScorer:
    """A scorer, the metric names it produces and the answer reader it compares with the gold (if any)."""

    function: Scorer
    produces: tuple[str, ...]
    answer: Callable[[Mapping[str, Any], str], str] | None = None


METRICS: Registry[MetricSpec] = Registry("metric", scan="captrack.metrics", marker="declare(MetricSpec(")
SCORERS: Registry[RegisteredScorer] = Registry("scorer", scan="captrack.metrics", marker="@scorer(")


def declare(spec: MetricSpec) -> MetricSpec:
    """Add a metric to the registry; declaring one name twice is an error."""
    return METRICS.add(spec.name, spec)


def get_metric(name: str) -> MetricSpec:
    """Look a metric up by name.

    Raises:
        UnknownNameError: with the closest declared names.
    """
    return METRICS.get(name)


def lower_is_better(name: str) -> bool:
    """Whether a lower value of metric `name` is better: its declared direction; an undeclared metric (one of
    lm-eval's own, e.g. ``em`` or ``prompt_level_strict_acc``) is taken as higher-is-better, as compare reports it."""
    try:
        return get_metric(name).direction == "lower"
    except UnknownNameError:
        return False


def all_metrics() -> dict[str, MetricSpec]:
    """Every declared metric, by name."""
    return METRICS.entries()


def scorer(name: str, produces: Sequence[str],
           answer: Callable[[Mapping[str, Any], str], str] | None = None) -> Callable[[F], F]:
    """Register a pure per-sample scorer ``(doc, response) -> {metric: value | None}``.

    Every metric it produces must be declared first; the registered function checks
    that it returns exactly those keys, so a task YAML and its scorer cannot drift apart.
    `answer` is the function the scorer itself calls to read the answer it compares with the gold
    (drill-down pages show its result; scoring that text again gives the same value); scorers that
    judge the whole response (instructions, style) have none.
    """
    for metric_name in produces:
        get_metric(metric_name)

    def register(function: F) -> F:
        SCORERS.add(name, RegisteredScorer(function, tuple(produces), answer))
        return function

    return register


def scored_answer(name: str, doc: Mapping[str, Any], response: str) -> str | None:
    """The answer scorer `name` reads from `response` ("" when it finds none); None when the scorer
    judges the whole response rather than an answer read from it."""
    found = SCORERS.get(name).answer
    return None if found is None else found(doc, response)


def get_scorer(name: str) -> tuple[Scorer, tuple[str, ...]]:
    """Return a registered scorer and the metric names it produces."""
    METRICS.load()  # the scorers' metrics first: a scorer module checks them as it registers
    found = SCORERS.get(name)
    return found.function, found.produces


def score(name: str, doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """Run scorer `name` on one response; None marks a value that could not be scored."""
    function, produces = get_scorer(name)
    values = function(doc, response)
    if set(values) != set(produces):
        raise CaptrackError(
            f"scorer {name!r} returned {sorted(values)}, but declares {sorted(produces)}"
        )
    return values
