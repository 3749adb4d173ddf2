"""Experiment manifests for `captrack run`: checkpoints, tasks, seeds and the leaderboard to write.

An experiment YAML::

    name: my-experiment
    workdir: runs/my-experiment          # relative to the YAML's folder
    leaderboard: leaderboards/mine       # folder (leaderboard.yaml is written there)
    tasks: ["captrack_probe_*"]
    limit: null                          # lm-eval --limit (int, fraction or null)
    seeds: [0]                           # one evaluation replicate per seed
    apply_chat_template: true
    batch_size: 8
    metadata: {}                         # lm-eval --metadata (e.g. probe seed / n)
    base: {name: base, model: hf, model_args: {pretrained: /path/or/alias}, family: x, size: 1B}
    variants:
      - {name: sft, model: hf, model_args: {pretrained: /path}, algorithm: SFT, data: ...}
      - {name: dpo, train: {method: dpo, steps: 20, rows: 160}, algorithm: DPO}   # trained by the run

`pretrained` may be a local folder or a captrack model alias (``smollm2-135m-instruct``). A variant
with ``train:`` is post-trained from the base by the run itself (methods: sft, dpo, rl).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from captrack.errors import InputError, UnknownNameError
from captrack.schemas import CheckpointEntry, ExperimentFile, parse_config

__all__ = ["QUICK_TASKS", "Checkpoint", "Experiment", "config_hash", "demo_experiment", "load_experiment", "quick"]

TRAIN_METHODS = ("sft", "dpo", "rl")


@dataclass(frozen=True)
class Checkpoint:
    """One model to evaluate: an lm-eval model spec plus labels, or a training recipe."""

    name: str
    model: str = "hf"
    model_args: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)
    family: str = ""
    size: str = ""
    algorithm: str = ""
    data: str = ""


@dataclass(frozen=True)
class Experiment:
    """A parsed experiment manifest (paths resolved)."""

    name: str
    source: Path
    workdir: Path
    leaderboard: Path
    base: Checkpoint
    variants: tuple[Checkpoint, ...]
    tasks: tuple[str, ...] = ("captrack_probe_*",)
    limit: int | float | None = None
    seeds: tuple[int, ...] = (0,)
    apply_chat_template: bool = True
    batch_size: int = 8
    metadata: dict[str, Any] = field(default_factory=dict)
    title: str = ""
    description: str = ""

    @property
    def checkpoints(self) -> tuple[Checkpoint, ...]:
        """Base first, then the variants."""
        return (self.base, *self.variants)


def config_hash(value: Any) -> str:
    """Stable short hash of any JSON-able configuration."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _checkpoint(entry: CheckpointEntry, where: str) -> Checkpoint:
    train = dict(entry.train)
    if train and str(train.get("method", "")).lower() not in TRAIN_METHODS:
        raise UnknownNameError(f"training method of {entry.name!r}", str(train.get("method")), TRAIN_METHODS)
    if not train and not entry.model_args.get("pretrained"):
        raise InputError(f"{where}: checkpoint {entry.name!r} needs model_args.pretrained or a train recipe")
    return Checkpoint(name=entry.name, model=entry.model, model_args=dict(entry.model_args), train=train,
                      family=entry.family, size=entry.size, algorithm=entry.algorithm, data=entry.data)


def load_experiment(path: str | Path) -> Experiment:
    """Read and validate an experiment manifest against its schema (captrack.schemas.ExperimentFile).

    Raises:
        InputError: unreadable file; a key missing, unknown or of the wrong type (key, value and what
            is allowed named); duplicate names.
    """
    source = Path(path).resolve()
    try:
        raw = yaml.safe_load(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"{source}: cannot read the experiment: {exc}") from exc
    where = str(source)
    spec = parse_config(ExperimentFile, raw, source, "experiment")
    base = _checkpoint(spec.base, where)
    if base.train:
        raise InputError(f"{where}: the base cannot have a train recipe; it is what variants start from")
    variants = tuple(_checkpoint(v, where) for v in spec.variants)
    names = [base.name, *(v.name for v in variants)]
    if len(set(names)) != len(names):
        raise InputError(f"{where}: checkpoint names must be unique; got {names}")
    if len(set(spec.seeds)) != len(spec.seeds):
        raise InputError(f"{where}: key 'seeds' is {spec.seeds}: each seed once (a repeated seed repeats the same run)")
    folder = source.parent
    return Experiment(
        name=spec.name or source.stem,
        source=source,
        workdir=(folder / (spec.workdir or f"runs/{source.stem}")).resolve(),
        leaderboard=(folder / spec.leaderboard).resolve(),
        base=base,
        variants=variants,
        tasks=tuple(spec.tasks),
        limit=spec.limit,
        seeds=tuple(spec.seeds),
        apply_chat_template=spec.apply_chat_template,
        batch_size=spec.batch_size,
        metadata=dict(spec.metadata),
        title=spec.title,
        description=spec.description,
    )


def as_dict(experiment: Experiment) -> dict[str, Any]:
    """The experiment as plain data (for hashing and printing)."""
    return asdict(experiment)


def demo_experiment() -> Path:
    """The embedded demo's manifest (leaderboards/demo/experiment.yaml in a checkout)."""
    from captrack.paths import _CHECKOUT

    path = _CHECKOUT / "leaderboards" / "demo" / "experiment.yaml"
    if not path.is_file():
        raise InputError(
            f"the embedded demo ({path}) ships with the source checkout; clone captrack and run `make demo`, "
            "or pass your own EXPERIMENT.yaml"
        )
    return path


QUICK_TASKS = ("captrack_probe_c1_facts", "captrack_probe_c1_skills", "captrack_probe_w1_harmful",
               "captrack_probe_w1_benign", "captrack_probe_h3_tools")
"""What `--quick` evaluates when the experiment's tasks include them: CAN, WILL and HOW, loglikelihood and
generation, short outputs, so the whole pipeline is exercised in a few minutes on CPU."""


def quick(experiment: Experiment, limit: int = 3, steps: int = 2) -> Experiment:
    """A smoke-test version: few tasks, items and training steps, its own workdir and leaderboard."""
    import dataclasses
    from fnmatch import fnmatchcase

    variants = tuple(
        dataclasses.replace(v, train={**v.train, "steps": min(int(v.train.get("steps", steps)), steps),
                                      "rows": min(int(v.train.get("rows", 16)), 16)}) if v.train else v
        for v in experiment.variants
    )
    tasks = tuple(t for t in QUICK_TASKS if any(fnmatchcase(t, p) for p in experiment.tasks)) or experiment.tasks
    workdir = experiment.workdir.with_name(experiment.workdir.name + "-quick")
    return dataclasses.replace(experiment, variants=variants, tasks=tasks, limit=limit, workdir=workdir,
                               leaderboard=workdir / "leaderboard")
