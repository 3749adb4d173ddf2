"""The schemas of captrack's config files (pydantic), one declaration per file kind, and the value types
they share with the command line.

`parse_config` validates a loaded YAML document against one of them and turns every problem into one
InputError that names the file, the key, the value found and what is allowed there. A value that can be
given both in a file and on the command line (`margin`, `bootstrap`, a seed, a step, a doc field) is one
annotated type here; `cli_type` turns it into argparse's ``type=`` so both places apply the same rules.
"""

from __future__ import annotations

import argparse
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    TypeAdapter,
    ValidationError,
)

from captrack.errors import InputError
from captrack.labels import MAX_SEED, MAX_STEP, Seed, Step, VariantLabels

__all__ = [
    "MAX_BOOTSTRAP",
    "MAX_MARGIN",
    "MAX_STEP",
    "Bootstrap",
    "CheckpointEntry",
    "ComparisonEntry",
    "Concurrency",
    "Count",
    "DocField",
    "Epoch",
    "Every",
    "ExperimentFile",
    "LeaderboardFile",
    "Margin",
    "ReferenceEntry",
    "Requests",
    "Retries",
    "Seconds",
    "Seed",
    "ServeOptions",
    "Step",
    "VariantEntry",
    "check_value",
    "cli_type",
    "parse_config",
]

M = TypeVar("M", bound=BaseModel)

MAX_MARGIN = 100.0
"""The widest equivalence margin, in points: a wider one calls any change on a 0..100 scale equivalent."""
MAX_BOOTSTRAP = 100_000
"""The most bootstrap resamples (memory grows with resamples x items; 10,000 already gives stable 95% bounds)."""

Margin = Annotated[StrictFloat | StrictInt, Field(gt=0, le=MAX_MARGIN, description=(
    f"a number in (0, {MAX_MARGIN:g}]: the verdicts' equivalence margin in points (percent of the base mean for "
    "count metrics)"))]
Bootstrap = Annotated[StrictInt, Field(ge=0, le=MAX_BOOTSTRAP, description=(
    f"a whole number of bootstrap resamples in 0..{MAX_BOOTSTRAP:,} (0: none)"))]
Epoch = Annotated[StrictFloat | StrictInt, Field(ge=0, allow_inf_nan=False, description="a finite number ≥ 0")]
Every = Annotated[StrictInt, Field(ge=1, description="a whole number of optimizer steps ≥ 1 (not text, not a fraction)")]
Count = Annotated[StrictInt, Field(ge=1, le=10**9, description="a whole number in 1..1,000,000,000")]
Retries = Annotated[StrictInt, Field(ge=0, le=100, description="a whole number in 0..100")]
Requests = Annotated[StrictInt, Field(ge=0, le=10**12, description="a whole number of requests ≥ 0")]
Concurrency = Annotated[StrictInt, Field(ge=1, le=1024, description="a whole number of requests in flight in 1..1024")]
Seconds = Annotated[StrictFloat | StrictInt, Field(gt=0, le=86_400, allow_inf_nan=False, description=(
    "a number of seconds in (0, 86400]"))]
DocField = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^/\\]*[^\s/\\][^/\\]*$", description=(
    "a doc field name (text, not blank, without slashes), e.g. category"))]


def check_value(kind: Any, value: Any, where: str) -> Any:
    """`value` validated as `kind` (one of the annotated types above); returns it.

    Raises:
        InputError: ``<where>: <value> is not allowed: <why>; expected <what>``.
    """
    try:
        return TypeAdapter(kind).validate_python(value)
    except ValidationError as exc:
        raise InputError(f"{where}: {_show(value)} is not allowed: {_why(exc)}; expected {_described(kind)}") from None


def cli_type(kind: Any, parse: Callable[[str], Any] = str) -> Callable[[str], Any]:
    """argparse's ``type=`` for one of the annotated types above: text parsed (`parse`: int, float or str), then
    validated by the same rules as in a file."""
    def convert(text: str) -> Any:
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {_described(kind)}") from None
        try:
            return TypeAdapter(kind).validate_python(value)
        except ValidationError as exc:
            raise argparse.ArgumentTypeError(f"{text!r} is not allowed: {_why(exc)}; expected {_described(kind)}") from None

    return convert


def _why(exc: ValidationError) -> str:
    said = ("it is blank or holds a slash" if err["type"] == "string_pattern_mismatch" else str(err["msg"]).lower()
            for err in exc.errors())
    return "; ".join(dict.fromkeys(said))


def _described(kind: Any) -> str:
    for meta in typing.get_args(kind)[1:]:
        if getattr(meta, "description", None):
            return str(meta.description)
    return "a valid value"


class _Config(BaseModel):
    """Unknown keys are errors (a typo is never silently ignored); a number given as a label becomes text."""

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True, frozen=True, populate_by_name=True)


Text = Annotated[str, Field(description="text")]
_SET_BY_CAPTRACK = "not a key of this file (replicates come from seeds:, training steps from checkpoints:)"


# -- experiment manifests (captrack run EXPERIMENT.yaml) ---------------------------------------------------

class _EntryLabels(VariantLabels):
    """A file's variant entry: the labels record (captrack.labels) as keys; replicates and steps are not set
    by hand (they come from ``seeds:`` and ``checkpoints:``)."""

    replicate: None = Field(None, description=_SET_BY_CAPTRACK)
    step: None = Field(None, description=_SET_BY_CAPTRACK)

    def labels(self) -> VariantLabels:
        """The entry's labels record."""
        return VariantLabels.model_validate(self.model_dump(include=set(VariantLabels.model_fields)))


class ServeOptions(_Config):
    """``serve: {server: vllm, parallel: N}``: how a checkpoint's evaluation is served (captrack.lmeval.served)."""

    server: Literal["vllm"] = Field(description="vllm: a vLLM OpenAI-compatible server the job starts")
    parallel: StrictInt = Field(1, ge=1, le=64, description=(
        "a whole number 1-64: lm-eval processes sending the checkpoint's task groups to the server at once (lm-eval "
        "tokenises on one core; 1 on a CPU)"))


class CheckpointEntry(_EntryLabels):
    """`base:` or one entry of `variants:`: its labels and how to obtain the model."""

    model: Text = Field("hf", description="an lm-eval model type (text), e.g. hf")
    model_args: dict[str, Any] = Field(default_factory=dict, description="a mapping, e.g. {pretrained: /path}")
    train: dict[str, Any] = Field(default_factory=dict, description="a mapping, e.g. {method: sft, steps: 16}")
    import_: dict[str, Any] | None = Field(None, alias="import", description=(
        "a mapping {format: FORMAT (`captrack import --help` lists them), path: FILE[, task: TASK][, allow_partial: true]}"))
    base: Text = Field("", description="the name of the base this variant is compared with (text; default: the first base)")
    checkpoints: Text | list[Text] | None = Field(None, description=(
        "saved training checkpoints to evaluate, each a step of a trajectory: a glob (text) such as "
        "out/checkpoint-* or a list of folders"))
    ranks: StrictInt = Field(1, ge=1, le=4096, description=(
        "a whole number ≥ 1: the processes (one GPU each) a captrack-ds evaluation runs over"))
    python: Text = Field("", description=(
        "the interpreter (a path, text) its evaluation runs under, e.g. an environment with vllm and lm_eval"))
    serve: Literal["", "vllm"] | ServeOptions = Field("", description=(
        "vllm: evaluate a model: vllm checkpoint through a vLLM server the job starts (lm-eval's local-completions); "
        "or a mapping {server: vllm, parallel: N}"))

    def served_by(self) -> str:
        """The server its ``serve:`` names ("" when not served)."""
        return self.serve.server if isinstance(self.serve, ServeOptions) else self.serve

    def serve_parallel(self) -> int:
        """Its ``serve:``'s lm-eval processes at once (``serve: vllm``: 1)."""
        return self.serve.parallel if isinstance(self.serve, ServeOptions) else 1


class FloorEntry(_Config):
    """``floor:``: the base evaluated twice by its own backend, apart only in batch size (the backend's A/A floor)."""

    batch_sizes: list[Annotated[StrictInt, Field(ge=1)]] = Field([1, 16], min_length=2, max_length=2, description=(
        "two different whole numbers ≥ 1, e.g. [1, 16]: the batch sizes of the two evaluations"))


class ExperimentFile(_Config):
    """An experiment manifest (see captrack.pipeline.experiment)."""

    name: Text | None = None
    title: Text = ""
    description: Text = ""
    workdir: Text | None = Field(None, description="a folder (text), relative to the manifest")
    leaderboard: Text | None = Field(None, description=(
        "a folder (text), relative to the manifest (default: <manifest stem>-leaderboard beside it)"))
    tasks: list[str] = Field(["captrack_probe_*"], min_length=1,
                             description='a list of task names or globs, e.g. ["captrack_probe_*"]')
    limit: Annotated[StrictInt, Field(ge=1)] | Annotated[StrictFloat, Field(gt=0, le=1)] | None = Field(
        None, description="null, a whole number of items ≥ 1, or a fraction in (0, 1]")
    items: dict[str, Annotated[StrictInt, Field(ge=1)]] = Field(default_factory=dict, description=(
        "a mapping task name -> whole number ≥ 1: the first N items of that task (lm-eval --samples); "
        "not with limit"))
    seeds: list[Seed] = Field([0], min_length=1, description=(
        f"a list of whole numbers in 0..{MAX_SEED}, one evaluation replicate per seed: e.g. [0] (one run) or "
        "[0, 1, 2] (three)"))
    apply_chat_template: StrictBool = Field(True, description="true or false")
    batch_size: StrictInt = Field(8, ge=1, description=(
        "a whole number ≥ 1 (a fixed batch size, so replicates and ranks see the same batches; "
        "lm-eval's 'auto' is not supported)"))
    metadata: dict[str, Any] = Field(default_factory=dict, description="a mapping passed to lm-eval --metadata")
    base: CheckpointEntry | list[CheckpointEntry] = Field(description=(
        "a mapping with at least name and model_args.pretrained (or import), or a list of such mappings"))
    data: dict[str, Any] | None = Field(None, description="a mapping {sources: DIR, configs: [...]} or {dir: MIRROR}")
    by: list[DocField] = Field(default_factory=list, description=(
        "a list of doc fields to break results down by, e.g. [category]"))
    source_note: Text = ""
    target: Text = Field("", description="the task the post-training aims at (text), e.g. captrack_probe_c2_word_problems")
    margin: Margin = 5.0
    executor: dict[str, Any] = Field(default_factory=dict, description=(
        "a mapping {name: local|slurm, ...its options}: where the stage jobs run (default local)"))
    variants: list[CheckpointEntry] = Field(description=(
        "a list of checkpoint mappings, each with a name (an empty list only with floor:)"))
    floor: FloorEntry | None = Field(None, description=(
        "a mapping {batch_sizes: [1, 16]}: evaluate the base twice, at each batch size, as a pair of its own"))
    dtype: Literal["auto", "bfloat16", "float32", "float16"] | None = Field(None, description=(
        "auto (bfloat16 where the hardware has bfloat16 arithmetic, else float32), bfloat16, float32 or float16: every "
        "checkpoint's dtype and every training's bfloat16 autocast; unset: each entry's own"))


# -- leaderboard.yaml (captrack leaderboard DIR) -----------------------------------------------------------

class VariantEntry(_EntryLabels):
    """One variant of a comparison: its labels (``name``: its model name in the store)."""


class ComparisonEntry(_Config):
    """One base and the variants compared with it."""

    base: Text = Field(description="the base model's name (text)")
    variants: list[VariantEntry] = Field(min_length=1, description="a list of mappings, each with a name, e.g. [{name: sft}]")


class ReferenceEntry(_Config):
    """CapTrack averaged CSVs: one for the base, one per variant label."""

    base: Text = Field(description="a CSV path (text)")
    variants: dict[str, str] = Field(min_length=1, description="a mapping of variant label to CSV path")


class LeaderboardFile(_Config):
    """A leaderboard definition (see captrack.report.leaderboard)."""

    title: Text | None = None
    description: Text = ""
    source_note: Text = ""
    store: Text | None = Field(None, description="a captrack store path (text)")
    scores: Text | None = Field(None, description="a scores CSV path (text)")
    reference: ReferenceEntry | None = Field(None, description="a mapping {base: CSV, variants: {label: CSV}}")
    comparisons: list[ComparisonEntry] = Field(default_factory=list, description=(
        "a list of mappings {base: NAME, variants: [{name: ...}, ...]}"))
    capabilities: list[str] = Field(default_factory=list, description="a list of capability keys, e.g. [C1, W3a]")
    bootstrap: Bootstrap = 1000
    seed: Seed = 0
    by: list[DocField] = Field(default_factory=list, description=(
        "a list of doc fields to break results down by, e.g. [category]"))
    target: Text = Field("", description="the task the post-training aims at (text): the page states its change per variant")
    margin: Margin = 5.0
    smoke: bool = Field(False, description=(
        "true for a smoke test (`captrack run --quick` writes it): the page ranks no algorithms and claims no findings"))


# -- validation with messages people can act on --------------------------------------------------------------

def parse_config(model: type[M], raw: Any, path: Path, what: str) -> M:
    """Validate a loaded YAML document; every problem is named by key, value found and what is allowed.

    Raises:
        InputError: the document does not fit `model` (all problems listed, one per key).
    """
    if not isinstance(raw, dict):
        raise InputError(f"{path}: {what} must be a mapping of keys (key: value lines); got {_show(raw)}")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        errors = _relevant(model, exc.errors())
        by_key: dict[str, list[Any]] = {}
        for err in errors:
            by_key.setdefault(_where(model, tuple(err["loc"]))[0], []).append(err)
        problems = [_problem(model, errs) for errs in by_key.values()]
        raise InputError(f"{path}: invalid {what}: " + "; ".join(problems)) from None


_SHAPE_ERRORS = ("model_type", "dict_type", "list_type", "model_attributes_type")


def _relevant(model: type[BaseModel], errors: list[Any]) -> list[Any]:
    """Drop a union's wrong-shape branch errors ("not a list") where another branch says what is really wrong.

    `base:` may be a mapping or a list of mappings: a mapping with a misplaced key fails both branches,
    and only the mapping branch's error (the key) helps.
    """
    keys = [_where(model, tuple(err["loc"]))[0] for err in errors]
    keep = []
    for err, key in zip(errors, keys, strict=True):
        deeper = any(other != key and (other.startswith(key + ".") or other.startswith(key + "[")) for other in keys)
        if err["type"] in _SHAPE_ERRORS and deeper:
            continue
        keep.append(err)
    return keep or errors


def _problem(model: type[BaseModel], errs: list[Any]) -> str:
    """One key's problem; several errors on one key come from a union (e.g. int or float): say what is allowed."""
    err = errs[0]
    key, allowed = _where(model, tuple(err["loc"]))
    if err["type"] == "missing":
        return f"key '{key}' is missing; expected {allowed or 'a value'}"
    if err["type"] == "extra_forbidden":
        message = f"key '{key}' is not allowed (value {_show(err['input'])})" + (f"; allowed keys: {allowed}" if allowed else "")
        name = key.rsplit(".", 1)[-1]
        if "." in key and name in model.model_fields:
            message += f"; '{name}' is a top-level key of this file, not of '{key.rsplit('.', 1)[0]}'"
        return message
    said = "not a mapping" if err["type"] in ("model_type", "dict_type") else err["msg"].lower()
    found = f"key '{key}' is {_show(err['input'])}" + ("" if len(errs) > 1 else f": {said}")
    return found + (f"; expected {allowed}" if allowed else "")


def _where(model: type[BaseModel], loc: tuple[Any, ...]) -> tuple[str, str]:
    """The key path as written in YAML (union branch tags dropped) and the allowed values of the last key."""
    parts: list[str] = []
    current: Any = model
    allowed = ""
    branches: dict[str, Any] = {}  # the union tags pydantic puts in `loc` after a union-typed field -> that branch
    for step in loc:
        if isinstance(step, int):
            parts[-1:] = [f"{parts[-1]}[{step}]"] if parts else [f"[{step}]"]
            continue
        if step in branches:
            current = branches.pop(step)
            continue
        branches = {}
        fields = getattr(current, "model_fields", None) if isinstance(current, type) else None
        if fields is None:
            if current is dict:
                parts.append(str(step))
            continue  # a union branch tag such as 'int' or 'float'
        by_alias = {f.alias: name for name, f in fields.items() if f.alias}
        step = by_alias.get(step, step)
        if step not in fields:
            parts.append(str(step))
            allowed = ", ".join(f.alias or name for name, f in fields.items() if f.annotation is not type(None))
            break
        info = fields[step]
        parts.append(str(info.alias or step))
        allowed = info.description or ""
        current = _inner_model(info.annotation)
        branches = _union_branches(info.annotation)
    return ".".join(parts) or "(top level)", allowed


def _union_branches(annotation: Any) -> dict[str, Any]:
    """pydantic's loc tag of each config-model branch of a union (``X``, ``list[X]``) -> the model inside it."""
    out: dict[str, Any] = {}
    if typing.get_origin(annotation) in (Union, types.UnionType):
        for arg in typing.get_args(annotation):
            inner = _inner_model(arg)
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                tag = inner.__name__ if arg is inner else f"list[{inner.__name__}]"
                out[tag] = inner
    return out


def _inner_model(annotation: Any) -> Any:
    """The config model (or dict) inside an annotation such as ``list[X]`` or ``X | None``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin is dict:
        return dict
    if origin in (list, Union, types.UnionType, Annotated):
        for arg in typing.get_args(annotation):
            found = _inner_model(arg)
            if found is not None:
                return found
    return None


def _show(value: Any) -> str:
    text = repr(value)
    return (text if len(text) <= 80 else text[:77] + "...") + f" ({type(value).__name__})"
