"""Experiment manifests for `captrack run`: checkpoints, tasks, seeds and the leaderboard to write.

An experiment YAML::

    name: my-experiment
    workdir: runs/my-experiment          # relative to the YAML's folder; ${VAR} / ${VAR:-default} expanded
    leaderboard: leaderboards/mine       # folder (leaderboard.yaml is written there; default: <file stem>-leaderboard
                                         # beside the file); captrack writes only into a folder that is its own
    tasks: ["captrack_probe_*"]
    limit: null                          # lm-eval --limit (int, fraction or null)
    items: {}                            # or per task: {captrack_probe_c2_logic: 400} (the first N items;
                                         # lm-eval --samples; a task not named runs all its items)
    seeds: [0]                           # one evaluation replicate per seed
    apply_chat_template: true
    batch_size: 8
    metadata: {}                         # lm-eval --metadata (e.g. probe seed / n)
    title: ..., description: ..., source_note: ...   # shown on the leaderboard
    target: ""                           # the task post-training aims at: the page states its change
    base: {name: base, model: hf, model_args: {pretrained: /path/or/alias}, family: x, size: 1B}
    variants:
      - {name: sft, model: hf, model_args: {pretrained: /path}, algorithm: SFT, data: ...}
      - {name: dpo, train: {method: dpo, steps: 20, rows: 160}, algorithm: DPO}   # trained by the run
      - {name: rl, model: vllm, model_args: {pretrained: /path, dtype: bfloat16, tensor_parallel_size: 2}}
      - {name: lora, model_args: {pretrained: /path, adapter: out/lora}}   # a PEFT adapter (captrack.backends.adapters)
      - {name: lora-run, model_args: {pretrained: /path}, checkpoints: "out/lora/checkpoint-*"}  # an adapter per step
    floor: {batch_sizes: [8, 16]}        # the base again at batch size 16: its backend's A/A floor (variants may be [])

`pretrained` may be a local folder or a captrack model alias (``smollm2-135m-instruct``). A variant
with ``train:`` is post-trained from the base by the run itself (methods: sft, dpo, rl). ``model: vllm`` evaluates in
the vLLM environment, ``python: PATH`` under that interpreter (captrack.pipeline.interpreters); with ``serve: vllm``
its job starts a vLLM server and evaluates through it (captrack.lmeval.served).

Generations made elsewhere: a checkpoint may give ``import: {format, path[, task][, allow_partial]}``
instead of a model; its evaluation is `captrack import` (see captrack.imports). ``base`` may be a list
of checkpoints, each variant naming its own with ``base: NAME`` (default: the first). Paths in
``import.path`` and ``data`` may use ``${VAR:-default}`` and are relative to the YAML's folder.
Official tasks read the CapTrack data mirror: ``data: {sources: DIR, configs: [mmlu_pro.full]}``
builds it offline into ``<workdir>/data`` (``captrack data build``), ``data: {dir: DIR}`` names one::

    base:
      - {name: llama-8b, import: {format: mmlu-pro, path: "${CAPTRACK_SHARED:-../shared}/data/x.zip"}}
    variants:
      - {name: llama-8b-instruct, base: llama-8b, import: {format: mmlu-pro, path: ...}}
    data: {sources: "${CAPTRACK_SHARED:-../shared}/data", configs: [mmlu_pro.full]}
    by: [category]                       # also break transitions down by these doc fields
    margin: 5                            # verdicts' equivalence margin (points; default 5)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from captrack.backends import check_model_name
from captrack.backends.adapters import check_adapter
from captrack.bounded import load_yaml, read_text
from captrack.errors import InputError, UnknownNameError
from captrack.labels import VariantLabels
from captrack.lmeval.vllm_shim import VLLM_MODEL
from captrack.paths import expand_path
from captrack.pipeline.interpreters import manifest_python
from captrack.pipeline.layout import WorkFolder, default_workdir
from captrack.pipeline.saved_checkpoints import beside, saved_steps
from captrack.schemas import CheckpointEntry, ExperimentFile, parse_config

__all__ = ["Checkpoint", "Experiment", "config_hash", "default_leaderboard", "load_experiment", "more_items_hint",
           "trained_steps"]

TRAIN_METHODS = ("sft", "dpo", "rl")


@dataclass(frozen=True)
class Checkpoint:
    """One model to evaluate: an lm-eval model spec plus labels, or a training recipe."""

    labels: VariantLabels
    model: str = "hf"
    model_args: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict)
    """``import:``: format, path (resolved), task, allow_partial — generations made elsewhere, no model."""
    base: str = ""
    """Variants: the name of the base they are compared with ("" = the experiment's first base)."""
    steps: tuple[tuple[int, Path], ...] = ()
    """``checkpoints:``: (training step, checkpoint folder) of each saved checkpoint, by step (a trajectory)."""
    step_adapters: bool = False
    """Each of `steps`' folders is a PEFT adapter over ``model_args['pretrained']`` (captrack.pipeline.saved_checkpoints)."""
    ranks: int = 1
    """``ranks:``: the processes (one GPU each) a captrack-ds evaluation runs over (captrack.pipeline.executors)."""
    python: str = ""
    """``python:``: the interpreter its evaluation runs under ("": captrack's; captrack.pipeline.interpreters)."""
    serve: str = ""
    """``serve: vllm``: its evaluation goes through a server the job starts (captrack.lmeval.served)."""
    serve_parallel: int = 1
    """``serve: {parallel: N}``: lm-eval processes sending to that server at once (captrack.lmeval.served_groups)."""
    batch_size: int = 0
    """Its evaluations' batch size (0: the experiment's; a ``floor:`` pair sets its own: captrack.pipeline.floor)."""

    @property
    def name(self) -> str:
        """The checkpoint's name (its model name in the store)."""
        return self.labels.name


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
    items: dict[str, int] = field(default_factory=dict)
    """Per task, how many of its items to run (the first N); exclusive with `limit`."""
    seeds: tuple[int, ...] = (0,)
    apply_chat_template: bool = True
    batch_size: int = 8
    metadata: dict[str, Any] = field(default_factory=dict)
    title: str = ""
    description: str = ""
    source_note: str = ""
    other_bases: tuple[Checkpoint, ...] = ()
    data_sources: Path | None = None
    data_configs: tuple[str, ...] = ()
    data_dir: Path | None = None
    by: tuple[str, ...] = ()
    target: str = ""
    margin: float = 5.0  # the verdicts' equivalence margin (captrack.analysis.verdicts)
    smoke: bool = False  # a smoke test (`--quick`): its board says so and claims nothing beyond verdicts
    executor: dict[str, Any] = field(default_factory=dict)
    """``executor:``: where the stage jobs run: {name: local|slurm, ...options} (captrack.pipeline.executors)."""
    dtype: str | None = None
    """``dtype:``: auto or a dtype for every checkpoint and training (captrack.pipeline.dtype_choice); None: each its own."""

    @property
    def work(self) -> WorkFolder:
        """The layout of the work folder (captrack.pipeline.layout)."""
        return WorkFolder(self.workdir)

    @property
    def bases(self) -> tuple[Checkpoint, ...]:
        """Every base: the first (what trained variants start from), then the others."""
        return (self.base, *self.other_bases)

    @property
    def checkpoints(self) -> tuple[Checkpoint, ...]:
        """Bases first, then the variants."""
        return (*self.bases, *self.variants)

    def base_of(self, variant: Checkpoint) -> str:
        """The name of the base `variant` is compared with."""
        return variant.base or self.base.name


def default_leaderboard(folder: Path, stem: str) -> Path:
    """The board folder of an experiment file that names none: ``<its folder>/<its stem>-leaderboard``.

    A folder of its own, named after the file: never the experiment's folder (whose other files are the
    user's), and two experiments side by side never share one board.
    """
    return folder / f"{stem}-leaderboard"


def config_hash(value: Any) -> str:
    """Stable short hash of any JSON-able configuration."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


_IMPORT_KEYS = ("format", "path", "task", "allow_partial")


def _import_spec(raw: Any, name: str, where: str, folder: Path) -> dict[str, Any]:
    """The ``import:`` of checkpoint `name`, its path expanded and resolved against `folder`."""
    from captrack.paths import expand_path

    if not isinstance(raw, dict) or not raw.get("format") or not raw.get("path"):
        raise InputError(f"{where}: checkpoint {name!r}: import needs format and path, e.g. "
                         "{format: mmlu-pro, path: model_outputs.zip}; got " + repr(raw))
    unknown = set(raw) - set(_IMPORT_KEYS)
    if unknown:
        raise InputError(f"{where}: checkpoint {name!r}: import has unknown key(s) {sorted(unknown)}; known: {_IMPORT_KEYS}")
    return {"format": str(raw["format"]), "path": str(expand_path(str(raw["path"]), folder)),
            "task": str(raw["task"]) if raw.get("task") else None, "allow_partial": bool(raw.get("allow_partial", False))}


def _checkpoint(entry: CheckpointEntry, where: str, folder: Path) -> Checkpoint:
    check_model_name(entry.model, f"lm-eval model type of checkpoint {entry.name!r} in {where}")
    if entry.serve and entry.model != VLLM_MODEL:
        raise InputError(f"{where}: checkpoint {entry.name!r} says serve: {entry.serve} but model: {entry.model}; a served "
                         f"checkpoint is model: {VLLM_MODEL} (its model_args are vLLM's)")
    if entry.checkpoints is not None:
        return _replay(entry, where, folder)
    train = dict(entry.train)
    source = _import_spec(entry.import_, entry.name, where, folder) if entry.import_ is not None else {}
    if source and (train or entry.model_args):
        raise InputError(f"{where}: checkpoint {entry.name!r} gives import and a model or train recipe; keep one")
    if train and str(train.get("method", "")).lower() not in TRAIN_METHODS:
        raise UnknownNameError(f"training method of {entry.name!r}", str(train.get("method")), TRAIN_METHODS)
    if not source and not train and not entry.model_args.get("pretrained"):
        raise InputError(f"{where}: checkpoint {entry.name!r} needs model_args.pretrained, a train recipe or an import")
    model_args = dict(entry.model_args)
    if isinstance(model_args.get("pretrained"), str):
        model_args["pretrained"] = beside(model_args["pretrained"], folder)
    model_args = check_adapter(entry.name, entry.model, model_args, where, folder)  # a PEFT adapter
    return Checkpoint(labels=entry.labels(), model=entry.model, model_args=model_args, train=train,
                      source=source, base=entry.base, python=manifest_python(entry.python, folder), serve=entry.served_by(),
                      serve_parallel=entry.serve_parallel())


def _replay(entry: CheckpointEntry, where: str, folder: Path) -> Checkpoint:
    """A ``checkpoints:`` variant (captrack.pipeline.checkpoint_sweep), its saved folders (weights, or adapters over
    ``model_args.pretrained``) found and checked now (captrack.pipeline.saved_checkpoints; InputError there)."""
    saved = saved_steps(entry, where, folder)
    return Checkpoint(labels=entry.labels(), model=entry.model, model_args=saved.model_args, base=entry.base,
                      python=manifest_python(entry.python, folder), steps=saved.steps, step_adapters=saved.adapters,
                      serve=entry.served_by(), serve_parallel=entry.serve_parallel())


def trained_steps(variant: Checkpoint, workdir: Path, where: str) -> Checkpoint:
    """A variant trained by the run with ``save_steps: N`` is a trajectory: the checkpoints its training saves
    every N steps (captrack.training.harness.checkpoint_saver), the last one its end point.

    Raises:
        InputError: save_steps not a whole number ≥ 1 dividing the recipe's steps.
    """
    every = variant.train.get("save_steps")
    if every is None:
        return variant
    total = variant.train.get("steps")
    if not isinstance(every, int) or isinstance(every, bool) or every < 1 or not isinstance(total, int) or total % every:
        raise InputError(f"{where}: variant {variant.name!r}: train.save_steps is {every!r}; give a whole number ≥ 1 that "
                         f"divides train.steps ({total!r}), so the last checkpoint is the trained model")
    from captrack.training.harness import CHECKPOINTS_DIR

    folder = WorkFolder(workdir).model(variant.name) / CHECKPOINTS_DIR
    return replace(variant, steps=tuple((s, folder / f"checkpoint-{s}") for s in range(every, total + 1, every)))


def _data(raw: Any, where: str, folder: Path) -> dict[str, Any]:
    """``data:``: {sources, configs} (built by the run) or {dir} (a mirror), paths expanded."""
    from captrack.paths import expand_path

    if not raw:
        return {}
    if not isinstance(raw, dict) or bool(raw.get("sources")) == bool(raw.get("dir")) or set(raw) - {"sources", "configs", "dir"}:
        raise InputError(f"{where}: data must be {{sources: DIR, configs: [...]}} or {{dir: MIRROR}}; got {raw!r}")
    if raw.get("dir"):
        return {"data_dir": expand_path(str(raw["dir"]), folder)}
    if not raw.get("configs"):
        raise InputError(f"{where}: data.sources needs data.configs, the configs to build (e.g. [mmlu_pro.full])")
    return {"data_sources": expand_path(str(raw["sources"]), folder), "data_configs": tuple(str(c) for c in raw["configs"])}


def _bases(raw: CheckpointEntry | list[CheckpointEntry], variants: tuple[Checkpoint, ...], where: str,
           folder: Path) -> tuple[Checkpoint, ...]:
    """The base checkpoint(s), checked against what the variants name."""
    entries = raw if isinstance(raw, list) else [raw]
    for entry in entries:
        if entry.checkpoints is not None:
            raise InputError(f"{where}: base {entry.name!r} gives checkpoints: the base is one fixed model that every "
                             "step of a trajectory is compared with; move the checkpoints to a variant (nothing was run)")
    bases = tuple(_checkpoint(b, where, folder) for b in entries)
    if not bases:
        raise InputError(f"{where}: 'base' lists no checkpoint")
    for checkpoint in bases:
        if checkpoint.train or checkpoint.base:
            raise InputError(f"{where}: base {checkpoint.name!r} cannot have a train recipe or a base; it is what variants start from")
    names = [b.name for b in bases]
    for variant in variants:
        if variant.base and variant.base not in names:
            raise UnknownNameError(f"base of variant {variant.name!r}", variant.base, names)
        if variant.train and bases[0].source:
            raise InputError(f"{where}: variant {variant.name!r} is trained from the base, but base {names[0]!r} is imported generations")
    return bases


def _with_floor(floor: list[int] | None, bases: tuple[Checkpoint, ...], variants: tuple[Checkpoint, ...],
                names: list[str], batch_size: int, where: str) -> tuple[tuple[Checkpoint, ...], tuple[Checkpoint, ...]]:
    """``floor:``'s batch sizes: the first base again at each, a pair of its own (captrack.pipeline.floor); InputError
    when there is neither a variant nor a floor."""
    if floor is None and not variants:
        raise InputError(f"{where}: key 'variants' is an empty list: list the checkpoints to compare with the base, each "
                         "a mapping with a name (or ask only for the base's floor: floor: {batch_sizes: [1, 16]})")
    if floor is None:
        return bases, variants
    from captrack.pipeline.floor import FLOOR_ALGORITHM, floor_pair

    base = bases[0]
    pair = floor_pair(base.name, floor, base.batch_size or batch_size, bool(base.source or base.steps), names, where)
    second = replace(base, labels=base.labels.labelled(name=pair.second, algorithm=FLOOR_ALGORITHM),
                     batch_size=pair.second_batch, base=pair.first)
    first = () if pair.reused else (replace(base, labels=base.labels.labelled(name=pair.first), batch_size=pair.first_batch),)
    return (*bases, *first), (*variants, second)


def load_experiment(path: str | Path) -> Experiment:
    """Read and validate an experiment manifest against its schema (captrack.schemas.ExperimentFile).

    Raises:
        InputError: unreadable file; a key missing, unknown or of the wrong type (key, value and what
            is allowed named); duplicate names.
    """
    source = Path(path).resolve()
    try:
        raw = load_yaml(read_text(source))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"{source}: cannot read the experiment: {exc}") from exc
    where = str(source)
    spec = parse_config(ExperimentFile, raw, source, "experiment")
    folder = source.parent
    variants = tuple(_checkpoint(v, where, folder) for v in spec.variants)
    bases = _bases(spec.base, variants, where, folder)
    names = [*(b.name for b in bases), *(v.name for v in variants)]
    if len(set(names)) != len(names):
        raise InputError(f"{where}: checkpoint names must be unique; got {names}")
    for name in names:  # each names folders under the work folder (runs/<name>, models/<name>)
        if name.strip() in ("", ".", "..") or any(c in name for c in "/\\") or any(ord(c) < 32 for c in name):
            raise InputError(f"{where}: checkpoint name {name!r} cannot name a folder; use letters, digits, '-', '_' or '.'")
    if spec.items and spec.limit is not None:
        raise InputError(f"{where}: give 'limit' (every task) or 'items' (per task), not both")
    if len(set(spec.seeds)) != len(spec.seeds):
        raise InputError(f"{where}: key 'seeds' is {spec.seeds}: each seed once (a repeated seed repeats the same run)")
    workdir = expand_path(spec.workdir, folder) if spec.workdir else default_workdir(folder, source.stem).resolve()
    ranks = {e.name: e.ranks for e in [*(spec.base if isinstance(spec.base, list) else [spec.base]), *spec.variants]}
    bases, variants = (tuple(replace(c, ranks=ranks[c.name]) for c in group) for group in (bases, variants))
    variants = tuple(trained_steps(v, workdir, where) for v in variants)
    bases, variants = _with_floor(spec.floor.batch_sizes if spec.floor else None, bases, variants, names, spec.batch_size,
                                  where)
    return Experiment(
        name=spec.name or source.stem,
        source=source,
        workdir=workdir,
        leaderboard=expand_path(spec.leaderboard, folder) if spec.leaderboard is not None else
        default_leaderboard(folder, source.stem),
        base=bases[0],
        variants=variants,
        tasks=tuple(spec.tasks),
        limit=spec.limit,
        items=dict(spec.items),
        seeds=tuple(spec.seeds),
        apply_chat_template=spec.apply_chat_template,
        batch_size=spec.batch_size,
        metadata=dict(spec.metadata),
        title=spec.title,
        description=spec.description,
        source_note=spec.source_note,
        other_bases=bases[1:],
        by=tuple(spec.by),
        **_data(spec.data, where, folder),
        target=spec.target,
        margin=float(spec.margin),
        executor=dict(spec.executor),
        dtype=spec.dtype,
    )


def as_dict(experiment: Experiment) -> dict[str, Any]:
    """The experiment as plain data (for hashing and printing)."""
    return asdict(experiment)


def more_items_hint(task: str, wanted: int, found: int, metadata: dict[str, Any]) -> str:
    """What to do when `items` asks `task` for `wanted` items and it has `found`: a probe generates its metadata n (raise
    it, unless n is already past `wanted`), other tasks have what they have (lower `items`)."""
    n = metadata.get("n")
    if task.startswith("captrack_probe_") and (not isinstance(n, int) or n < wanted):
        return (f"a probe generates as many items as its metadata n: add `metadata: {{n: {wanted}}}` to the experiment "
                f"(every probe then generates {wanted}), or lower items to {found}")
    return f"lower it to {found} (a generator's repeats are not new items)"
