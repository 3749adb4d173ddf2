"""The A/A floor of a backend: the base evaluated twice by its own backend, apart only in batch size.

``floor: {batch_sizes: [1, 16]}`` in an experiment adds two checkpoints with the base's model, backend and model
arguments: ``<base>-floor-bs1`` (a base of its own) and ``<base>-floor-bs16`` (a variant compared with it, algorithm
``floor``); where the first batch size is the experiment's own, the base's own evaluation is the first run and only
``<base>-floor-bs16`` is added (compared with the base). Their pair is evaluated, stored and compared like any other, so transitions.csv holds one row per task and
metric for ``<base>-floor-bs16``: its forgetting and backward transfer are the shares of items that flip 1→0 and 0→1
between the two runs, what the backend's batching alone does to the same weights (vLLM's kernels give a request
slightly different logits in different batches unless VLLM_BATCH_INVARIANT=1). compare names the batch sizes as the
one setting that differs. A variant's F and BT above that floor are not the backend's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from captrack.errors import InputError

if TYPE_CHECKING:
    from captrack.pipeline.experiment import Checkpoint

__all__ = ["FLOOR_ALGORITHM", "floor_checkpoints", "floor_name"]

FLOOR_ALGORITHM = "floor"
"""The algorithm label of a floor pair's second evaluation."""


def floor_name(base: str, batch_size: int) -> str:
    """The name of `base`'s floor evaluation at `batch_size`."""
    return f"{base}-floor-bs{batch_size}"


def floor_checkpoints(base: Checkpoint, batch_sizes: list[int], batch_size: int, taken: list[str],
                      where: str) -> tuple[Checkpoint | None, Checkpoint]:
    """(its first evaluation, as a base; its second, as a variant of that base): `base` at each of `batch_sizes`; the
    first is None when it is `base` itself (evaluated at the experiment's `batch_size`).

    Raises:
        InputError: the two batch sizes are the same, the base is imported generations (no model to evaluate), or a
            floor name is already a checkpoint's (`taken`).
    """
    first, second = batch_sizes
    if first == second:
        raise InputError(f"{where}: floor batch_sizes are [{first}, {second}]: give two different batch sizes, e.g. "
                         "[1, 16] (the same one twice repeats the same run); nothing was run")
    if base.source or base.steps:
        raise InputError(f"{where}: floor: base {base.name!r} is imported generations, not a model captrack evaluates; "
                         "remove floor, or make the first base a model (model_args.pretrained); nothing was run")
    reused = first == (base.batch_size or batch_size)
    names = [base.name if reused else floor_name(base.name, first), floor_name(base.name, second)]
    clash = [n for n in names[int(reused):] if n in taken]
    if clash:
        raise InputError(f"{where}: floor names its evaluations {names}, but {clash[0]!r} is already a checkpoint's "
                         "name; rename that checkpoint; nothing was run")
    one = None if reused else replace(base, labels=base.labels.labelled(name=names[0]), batch_size=first, base="")
    two = replace(base, labels=base.labels.labelled(name=names[1], algorithm=FLOOR_ALGORITHM), batch_size=second,
                  base=names[0])
    return one, two
