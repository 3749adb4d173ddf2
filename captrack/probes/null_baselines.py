"""Measured null baselines of the forced-choice and contrast probes: what a model that knows nothing scores.

A probe's chance level (1/k per item for ``acc`` and ``contrast_acc``, ``MetricSpec.chance_from_choices``)
is what the chance-adjusted numbers subtract. It is a promise about the task's options, not about a model,
and a task can break it: options of unequal token length (a summed loglikelihood prefers the shorter one),
the gold option always first (ties go to index 0), or a context that shifts every option alike. So it is
measured: random-weight models of the demo's architecture (SmolLM2-135M's config, several seeds) are
evaluated on every forced-choice and contrast probe (`tests/benchmarks/measure_probe_nulls.py`), and the
mean accuracy with its CI is committed in ``null_baselines.yaml`` beside this module.
`tests/probes/test_null_baselines.py` fails when a task's stated chance lies outside its measured null's CI,
or when a forced-choice task (or a new version of one) has no measured row.

The CI (:func:`crossed_interval`) treats seeds and items as two crossed random factors: every seed answers
the same items, so the per-seed means share the items' sampling error, and one random model's items are
not independent of each other (a random model has its own systematic preferences, which is why a single
seed can read 0.63 on a task whose null is 0.5). The variance of the grand mean is estimated from the
two-way ANOVA mean squares, ``(MS_seed + MS_item − MS_residual) / (S·I)`` (unbiased for
σ²_seed/S + σ²_item/I + σ²_e/(S·I)), never below the binomial ``p(1 − p)/(S·I)``, with a t quantile on
Satterthwaite's degrees of freedom.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from captrack.errors import InputError

__all__ = ["MIN_SEEDS", "NULL_BASELINES", "ChoiceTask", "Interval", "NullBaseline", "chance_adjusted_metrics",
           "choice_tasks", "crossed_interval", "null_problems", "read_null_baselines", "stated_chance"]

NULL_BASELINES = Path(__file__).with_name("null_baselines.yaml")
"""The committed measurements (written by tests/benchmarks/measure_probe_nulls.py)."""

METHOD = ("two-way crossed random effects (seeds x items): var = (MS_seed + MS_item - MS_residual)/(S*I), "
          "floored at p(1-p)/(S*I); t quantile on Satterthwaite df; 95%")

MIN_SEEDS = 5
"""Random-weight models a committed null is measured on, at least."""

_TO_DATASET = re.compile(r"""\bto_dataset\(\s*["']([^"']+)["']""")


@dataclass(frozen=True)
class ChoiceTask:
    """A probe task scored from option loglikelihoods (``output_type: multiple_choice``)."""

    task: str
    folder: str
    generator: str
    version: float
    metrics: tuple[str, ...]
    metadata: dict[str, Any]


def choice_tasks(folder: str | Path | None = None) -> list[ChoiceTask]:
    """Every forced-choice and contrast probe task in the task folders (read from the YAMLs, nothing run).

    Raises:
        InputError: a multiple-choice probe folder whose utils.py loads no generator (file named).
    """
    from captrack.bounded import load_yaml, read_text
    from captrack.paths import tasks_dir

    found = []
    for path in sorted(Path(folder or tasks_dir()).glob("probe_*/probe_*.yaml")):
        text = read_text(path)
        if not re.search(r"^output_type:\s*multiple_choice\s*$", text, re.M):
            continue
        hooks = path.parent / "utils.py"
        match = _TO_DATASET.search(read_text(hooks)) if hooks.is_file() else None
        if match is None:
            raise InputError(f"{hooks}: a multiple-choice probe's utils.py must load its items with "
                             "to_dataset(\"<generator>\", ...)")
        plain = "\n".join(line for line in text.splitlines() if "!function" not in line)
        config = load_yaml(plain)
        metadata = dict(config.get("metadata") or {})
        found.append(ChoiceTask(str(config["task"]), path.parent.name, match.group(1),
                                float(metadata.pop("version")), tuple(re.findall(r"^\s*- metric:\s*(\S+)\s*$", text, re.M)),
                                {k: v for k, v in metadata.items() if k != "note"}))
    return found


@dataclass(frozen=True)
class Interval:
    """A mean with its two-sided CI and what it was computed from."""

    mean: float
    low: float
    high: float
    se: float
    df: float


def crossed_interval(outcomes: NDArray[np.float64], level: float = 0.95) -> Interval:
    """Mean of a seeds x items table with a CI over both factors (module docstring; NaN cells are not allowed).

    Raises:
        InputError: fewer than 2 seeds or 2 items, or a NaN outcome.
    """
    from scipy import stats

    y = np.asarray(outcomes, dtype=float)
    if y.ndim != 2 or min(y.shape) < 2 or np.isnan(y).any():
        raise InputError(f"a null baseline needs a seeds x items table of >= 2 x 2 scored outcomes; got shape {y.shape}"
                         f"{' with NaN' if np.isnan(y).any() else ''}")
    s, i = y.shape
    mean = float(y.mean())
    seeds, items = y.mean(axis=1), y.mean(axis=0)
    ms_seed = i * float(((seeds - mean) ** 2).sum()) / (s - 1)
    ms_item = s * float(((items - mean) ** 2).sum()) / (i - 1)
    resid = y - seeds[:, None] - items[None, :] + mean
    ms_resid = float((resid ** 2).sum()) / ((s - 1) * (i - 1))
    combined = ms_seed + ms_item - ms_resid
    floor = mean * (1 - mean)
    if combined > floor and combined > 0:
        df = combined ** 2 / (ms_seed ** 2 / (s - 1) + ms_item ** 2 / (i - 1) + ms_resid ** 2 / ((s - 1) * (i - 1)))
        variance = combined / (s * i)
    else:
        df, variance = float(s * i - 1), floor / (s * i)
    se = math.sqrt(variance)
    half = float(stats.t.ppf(0.5 + level / 2, df)) * se
    return Interval(mean, mean - half, mean + half, se, float(df))


@dataclass(frozen=True)
class NullBaseline:
    """One committed row: a task's metric under random-weight models, and the chance level it states."""

    task: str
    metric: str
    version: float
    items: int
    seeds: tuple[int, ...]
    chance: float | None
    null: Interval
    seed_means: tuple[float, ...]


def read_null_baselines(path: Path | None = None) -> dict[tuple[str, str], NullBaseline]:
    """The committed null baselines by (task, metric).

    Raises:
        InputError: the file is missing or a row lacks a key (file and row named).
    """
    from captrack.bounded import load_yaml, read_text

    path = path or NULL_BASELINES
    if not path.is_file():
        raise InputError(f"{path} is missing; run python tests/benchmarks/measure_probe_nulls.py --write")
    rows: dict[tuple[str, str], NullBaseline] = {}
    for n, row in enumerate(load_yaml(read_text(path)).get("tasks") or []):
        try:
            chance = row["chance"]
            rows[(row["task"], row["metric"])] = NullBaseline(
                row["task"], row["metric"], float(row["version"]), int(row["items"]), tuple(row["seeds"]),
                None if chance is None else float(chance),
                Interval(float(row["measured"]), float(row["ci_low"]), float(row["ci_high"]), float(row["se"]),
                         float(row["df"])),
                tuple(float(v) for v in row["seed_means"]))
        except (KeyError, TypeError, ValueError) as error:
            raise InputError(f"{path}: tasks row {n + 1} is malformed ({error!r}); rewrite it with "
                             "python tests/benchmarks/measure_probe_nulls.py --write") from None
    return rows


def chance_adjusted_metrics(task: ChoiceTask) -> tuple[str, ...]:
    """The task's metrics whose chance level is 1/k per item (``MetricSpec.chance_from_choices``): the ones that promise one."""
    from captrack.metrics.registry import get_metric

    return tuple(m for m in task.metrics if get_metric(m).chance_from_choices)


def stated_chance(task: ChoiceTask, items: int) -> float:
    """The chance level the task states on its first `items` items of its seed: the mean over them of 1/k."""
    from captrack.probes import generate

    options = {k: v for k, v in task.metadata.items() if k not in ("seed", "n")}
    docs = generate(task.generator, int(task.metadata.get("seed", 1234)), items, **options)
    return float(np.mean([1 / len(d["choices"]) for d in docs]))


def null_problems(rows: dict[tuple[str, str], NullBaseline], tasks: list[ChoiceTask] | None = None) -> list[str]:
    """What is wrong with the committed nulls of `tasks` (default: every forced-choice and contrast probe), one line each.

    A chance-adjusted metric of a task needs a row measured on the task's current version with >= MIN_SEEDS
    seeds, whose recorded chance is what the task states now, and whose CI holds that chance.
    """
    redo = "re-measure with python tests/benchmarks/measure_probe_nulls.py --write"
    problems = []
    for task in choice_tasks() if tasks is None else tasks:
        for metric in chance_adjusted_metrics(task):
            row = rows.get((task.task, metric))
            where = f"{task.task} {metric}"
            if row is None:
                problems.append(f"{where}: no measured null in {NULL_BASELINES.name}; {redo}")
                continue
            if row.version != task.version:
                problems.append(f"{where}: null measured on version {row.version}, the task is at {task.version}; {redo}")
                continue
            if len(set(row.seeds)) < MIN_SEEDS:
                problems.append(f"{where}: null measured on {len(set(row.seeds))} seeds, < {MIN_SEEDS}; {redo}")
            chance = stated_chance(task, row.items)
            if row.chance is None or abs(row.chance - chance) > 5e-4:
                problems.append(f"{where}: recorded chance {row.chance}, the task states {chance:.4f} now; {redo}")
            elif not row.null.low <= chance <= row.null.high:
                problems.append(f"{where}: measured null {row.null.mean:.3f} [{row.null.low:.3f}, {row.null.high:.3f}] "
                                f"leaves its stated chance {chance:.3f}: fix the task's options or state the measured chance")
    return problems
