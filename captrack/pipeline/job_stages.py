"""The stages of `captrack run` that are jobs: a variant's training and a checkpoint's evaluation.

Each is a :class:`~captrack.pipeline.stage.Stage` whose work is a :class:`~captrack.pipeline.jobs.StageJob`,
built when the stage is ready (after the training it needs and the alias resolving): its arguments name the
weights, output folder and request cache as they are then, and its needs say the GPUs, ranks and planned
memory per GPU (captrack.backends.memory_plan, for the tasks' longest request: captrack.pipeline.request_lengths).
Run here or by an executor, the stage runs that job, so the same experiment writes the same files wherever it runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from captrack.backends import LOCAL_HF
from captrack.backends.adapters import ADAPTER_KEY, adapter_fingerprint
from captrack.errors import InputError
from captrack.lmeval.vllm_shim import VLLM_MODEL
from captrack.pipeline.executors.slurm_resources import evaluates_in_container
from captrack.pipeline.experiment import Checkpoint, Experiment, config_hash
from captrack.pipeline.interpreters import foreign_env, is_foreign, stage_python, wanted_python
from captrack.pipeline.jobs import Needs, StageJob, worker_command
from captrack.pipeline.request_lengths import ASSUMED_TOKENS
from captrack.pipeline.stage import Stage
from captrack.results.runfiles import results_files

if TYPE_CHECKING:
    from captrack.pipeline.layout import WorkFolder
    from captrack.pipeline.request_lengths import RequestLength

__all__ = ["DS_MODEL", "eval_stage", "fingerprint", "planned_gpu_memory", "request_length", "train_stage", "train_title"]

DS_MODEL = "captrack-ds"
"""The backend that runs over several ranks (``ranks: N`` on its checkpoint)."""
_PLAN_GPU_BYTES = 80 * 10**9  # the plan's totals do not depend on the GPU's size; only its `fits` does


def model_path(checkpoint: Checkpoint, experiment: Experiment, resolved: dict[str, str]) -> Path:
    """Where a checkpoint's weights are: its training output, or its `pretrained` with an alias resolved."""
    if checkpoint.train:
        return experiment.work.model(checkpoint.name)
    spec = str(checkpoint.model_args["pretrained"])
    return Path(resolved.get(spec, spec))


def fingerprint(path: Path) -> str:
    """Identity of a saved model folder: names, sizes, mtimes (cheap; changes when retrained)."""
    if not path.is_dir():
        return str(path)
    parts = [f"{p.name}:{p.stat().st_size}:{int(p.stat().st_mtime)}" for p in sorted(path.iterdir()) if p.is_file()]
    return config_hash(parts)


def planned_gpu_memory(model: str, model_args: dict[str, Any], ranks: int, batch_size: int, seq_len: int = 4096) -> int:
    """Planned bytes per GPU of evaluating `model_args` over `ranks` GPUs (captrack.backends.memory_plan) with batches
    of `batch_size` requests of `seq_len` tokens, 0 when the weights' config.json cannot be read (the job then has its
    GPUs to itself).

    An hf model is planned as one whole copy on one GPU; captrack-ds as its mode (``auto``: tp; an offload: zero3+it).
    """
    from captrack.backends.memory_plan import load_config, plan_memory

    dtype = str(model_args.get("dtype", "bfloat16")).lower()
    try:
        config = load_config(str(model_args.get("pretrained", "")))
        plans = {p.mode: p for p in plan_memory(config, max(1, ranks), _PLAN_GPU_BYTES,
                                                dtype_bytes=4 if dtype in ("float32", "fp32") else 2, batch_size=batch_size,
                                                seq_len=seq_len)}
    except (InputError, OSError):  # no config.json there, or not one the planner reads: the evaluation says why
        return 0
    mode = "tp"
    if model == DS_MODEL:
        mode = str(model_args.get("mode", "tp")).lower()
        offload = str(model_args.get("offload", "none")).lower()
        mode = f"zero3+{offload}" if offload != "none" else ("tp" if mode == "auto" else mode)
    return plans.get(mode, plans["tp"]).total


def plans_gpu_memory(experiment: Experiment) -> bool:
    """Whether jobs' GPU memory is planned from their requests' real lengths: on a node with GPUs (the local
    executor's inventory) or for a cluster executor. A CPU node's run skips it: counting every prompt with the
    tokenizer costs tens of seconds a model folder (each checkpoint of a trajectory), and there is nothing to pack.
    """
    options = dict(experiment.executor or {})
    if str(options.pop("name", "local")) != "local":
        return True
    from captrack.pipeline.executors.local import gpu_inventory

    return bool(gpu_inventory(options))


def request_length(spec: dict[str, Any]) -> RequestLength:
    """The longest request of the evaluation in job spec `spec` (its model, tasks, limit, items, chat template)."""
    from captrack.pipeline.request_lengths import longest_request

    items = {task: len(docs) for task, docs in (spec.get("samples") or {}).items()}
    return longest_request(str(spec["model_args"].get("pretrained", "")), list(spec["tasks"]), spec.get("metadata") or {},
                           spec.get("limit"), items, bool(spec.get("apply_chat_template")))


def _training_code() -> str:
    """Hash of the training package: a change to a recipe's code retrains, as a change to its manifest does."""
    import captrack.training

    folder = Path(str(captrack.training.__file__)).parent
    return config_hash([path.read_text() for path in sorted(folder.glob("*.py"))])


_METHOD_COST = {"sft": 1.0, "dpo": 1.2, "rl": 2.5}
"""Seconds per step relative to SFT (the demo's 16 steps: SFT 64 s, DPO 68 s, RL 150 s): GRPO samples its answers.
Starting the longest training first lets its evaluation start early instead of running alone at the end."""


def train_title(variant: Checkpoint) -> str:
    """The title of `variant`'s training stage (what its evaluation `needs`)."""
    return f"train {variant.name} ({variant.train.get('method')}, {variant.train.get('steps')} steps)"


def train_stage(experiment: Experiment, variant: Checkpoint, base_dir: Callable[[], str]) -> Stage:
    """Post-train `variant` from the base's local folder (`base_dir`, read when the training starts)."""
    from captrack.pipeline.stage_job import run_job
    from captrack.training.harness import RECORD_FILE

    out = experiment.work.model(variant.name)

    def job(threads: int) -> StageJob:
        return StageJob("train", f"train-{variant.name}", train_title(variant),
                        {"recipe": variant.train, "base": str(Path(base_dir()).resolve()), "out": str(out)},
                        Needs(gpus=1, threads=threads))

    return Stage(train_title(variant), experiment.work.marker(f"train-{variant.name}"),
                 {"recipe": variant.train, "base": experiment.base.model_args, "code": _training_code()},
                 lambda: run_job(job(1)), produced=lambda: (out / RECORD_FILE).is_file(), side_by_side=True,
                 cost=float(variant.train.get("steps", 1)) * _METHOD_COST.get(str(variant.train.get("method")), 1.0),
                 job=job)


def _eval_needs(experiment: Experiment, checkpoint: Checkpoint, spec: dict[str, Any], threads: int) -> Needs:
    """An evaluation's needs: captrack-ds one GPU per rank, its memory planned; vllm `tensor_parallel_size` GPUs in one
    process, unplanned (vLLM takes gpu_memory_utilization of each GPU for its KV cache: GPUs of its own); hf one GPU."""
    if checkpoint.model == VLLM_MODEL:
        return Needs(gpus=_whole(checkpoint.model_args.get("tensor_parallel_size", 1)), ranks=1, threads=threads)
    ranks = checkpoint.ranks if checkpoint.model == DS_MODEL else 1
    seq_len = request_length(spec).tokens if plans_gpu_memory(experiment) else ASSUMED_TOKENS
    return Needs(gpus=ranks, ranks=ranks, threads=threads,
                 gpu_memory=planned_gpu_memory(checkpoint.model, spec["model_args"], ranks, spec["batch_size"], seq_len))


def _whole(value: Any) -> int:
    try:
        return max(1, int(value))
    except (TypeError, ValueError):
        return 1


def run_here_or_under(job: StageJob, work: WorkFolder) -> None:
    """Run `job` in this process, or, when it names another interpreter, as its worker under that one (its output on
    this console; the worker's report beside its spec), waiting for it.

    Raises:
        CaptrackError: the worker failed (its exit status; its traceback is above).
    """
    from captrack.pipeline.stage_job import run_job

    if not is_foreign(job.python):
        run_job(job)
        return
    from captrack.errors import CaptrackError
    from captrack.processes import plan_threads, spawn

    spec = job.write(work.job_spec(job.id))
    threads = os.environ.get("CAPTRACK_THREADS") or str(plan_threads().threads)
    env = foreign_env({**os.environ, "CAPTRACK_THREADS": threads, "OMP_NUM_THREADS": threads, **job.env}, job.python)
    code = spawn(worker_command(spec, job.python), env=env, stdout=None, stderr=None).wait()
    if code != 0:
        raise CaptrackError(f"{job.title} failed: its worker under {job.python} exited with status {code} (its output is "
                            f"above; spec {spec})")


def eval_stage(experiment: Experiment, checkpoint: Checkpoint, seed: int, resolved: dict[str, str], step: int | None,
               out: Path) -> Stage:
    """Evaluate `checkpoint` (at training `step`) with `seed` into `out`, as a job."""
    weights = dict(checkpoint.steps)[step] if step is not None else None  # a saved checkpoint of a trajectory
    name = f"eval-{checkpoint.name}-{seed}" if step is None else f"eval-{checkpoint.name}-step{step}-{seed}"
    title = (f"evaluate {checkpoint.name} (seed {seed})" if step is None else
             f"evaluate {checkpoint.name} at step {step} (seed {seed})")

    def model_args() -> dict[str, Any]:
        if weights is not None and checkpoint.step_adapters:  # the step's adapter over the base's weights
            return {"dtype": "float32", **checkpoint.model_args, "pretrained": str(model_path(checkpoint, experiment, resolved)),
                    ADAPTER_KEY: str(weights)}
        path = weights or model_path(checkpoint, experiment, resolved)
        return {"dtype": "float32", **checkpoint.model_args, "pretrained": str(path)}

    def job(threads: int) -> StageJob:
        args = model_args()
        identity = fingerprint(Path(args["pretrained"])) + adapter_fingerprint(args)  # a changed adapter: new answers
        cache = experiment.work.request_cache(checkpoint.name, seed, identity, step)
        spec = {"model_args": args, "tasks": list(experiment.tasks), "model": checkpoint.model,
                "batch_size": checkpoint.batch_size or experiment.batch_size, "limit": experiment.limit,
                "apply_chat_template": experiment.apply_chat_template, "seed": seed, "metadata": experiment.metadata,
                "samples": {task: list(range(n)) for task, n in experiment.items.items()} or None}
        python = stage_python(checkpoint.model, checkpoint.python, f"{experiment.source}: checkpoint {checkpoint.name!r}",
                              evaluates_in_container(experiment.executor))
        served: dict[str, Any] = {"serve": checkpoint.serve} if checkpoint.serve else {}  # the job starts a server
        served |= {"parallel": checkpoint.serve_parallel} if served and checkpoint.serve_parallel > 1 else {}
        return StageJob("evaluate", name, title, {"spec": spec, "out": str(out), "cache": str(cache), **served},
                        _eval_needs(experiment, checkpoint, spec, threads), python=python or "")

    def inputs() -> dict[str, Any]:
        """The evaluation's configuration and the identity of the weights it reads (a retrained variant re-evaluates)."""
        return {"checkpoint": checkpoint.name, "model": checkpoint.model, "model_args": checkpoint.model_args,
                "train": checkpoint.train, "tasks": experiment.tasks, "limit": experiment.limit, "seed": seed,
                "chat": experiment.apply_chat_template, "metadata": experiment.metadata,
                "weights": fingerprint(Path((args := model_args())["pretrained"])) + adapter_fingerprint(args)} \
            | ({"items": experiment.items} if experiment.items else {}) \
            | ({"step": step} if step is not None else {}) | ({"ranks": checkpoint.ranks} if checkpoint.ranks > 1 else {}) \
            | ({"batch_size": checkpoint.batch_size} if checkpoint.batch_size else {}) \
            | ({"serve": checkpoint.serve} if checkpoint.serve else {}) \
            | ({"python": python} if (python := wanted_python(checkpoint.model, checkpoint.python)) else {})

    as_job = checkpoint.model in (*LOCAL_HF, DS_MODEL, VLLM_MODEL) or bool(checkpoint.python)
    return Stage(title, experiment.work.marker(name), inputs, lambda: run_here_or_under(job(1), experiment.work),
                 produced=lambda: any(results_files(out)), side_by_side=as_job,
                 needs=(train_title(checkpoint),) if checkpoint.train else (), job=job if as_job else None)
