"""The A/A floor of a backend: the base evaluated twice by its own backend, apart only in batch size.

``floor: {batch_sizes: [1, 16]}`` in an experiment adds two checkpoints with the base's model, backend and model
arguments: ``<base>-floor-bs1`` (a base of its own) and ``<base>-floor-bs16`` (a variant compared with it, algorithm
``floor``); where the first batch size is the experiment's own, the base's own evaluation is the first run and only
``<base>-floor-bs16`` is added (compared with the base). Their pair is evaluated, stored and compared like any other,
so transitions.csv holds one row per task and metric for ``<base>-floor-bs16``: its forgetting and backward transfer
are the shares of items that flip 1→0 and 0→1 between the two runs, what the backend's batching alone does to the
same weights (vLLM's kernels give a request slightly different logits in different batches unless
VLLM_BATCH_INVARIANT=1). compare names the batch sizes as the one setting that differs. A variant's F and BT above
that floor are not the backend's. captrack.pipeline.experiment builds the two checkpoints from :class:`FloorPair`.
"""

from __future__ import annotations

from dataclasses import dataclass

from captrack.errors import InputError
from captrack.labels import FLOOR_ALGORITHM, floor_name

__all__ = ["FLOOR_ALGORITHM", "FloorPair", "floor_name", "floor_pair"]  # FLOOR_ALGORITHM, floor_name: owned by captrack.labels


@dataclass(frozen=True)
class FloorPair:
    """The two evaluations of a base's floor: names and batch sizes."""

    first: str
    """The first evaluation's name: the base's own when `reused`."""
    second: str
    first_batch: int
    second_batch: int
    reused: bool
    """The first evaluation is the base's own (the first batch size is the one the base is evaluated with)."""


def floor_pair(base: str, batch_sizes: list[int], base_batch: int, imported: bool, taken: list[str],
               where: str) -> FloorPair:
    """The floor of base `base` (evaluated at `base_batch`) at each of `batch_sizes`.

    Raises:
        InputError: the two batch sizes are the same, the base is `imported` generations (no model to evaluate), or a
            floor name is already a checkpoint's (`taken`).
    """
    first, second = batch_sizes
    if first == second:
        raise InputError(f"{where}: floor batch_sizes are [{first}, {second}]: give two different batch sizes, e.g. "
                         "[1, 16] (the same one twice repeats the same run); nothing was run")
    if imported:
        raise InputError(f"{where}: floor: base {base!r} is imported generations, not a model captrack evaluates; "
                         "remove floor, or make the first base a model (model_args.pretrained); nothing was run")
    reused = first == base_batch
    pair = FloorPair(base if reused else floor_name(base, first), floor_name(base, second), first, second, reused)
    clash = [n for n in (pair.first, pair.second)[int(reused):] if n in taken]
    if clash:
        raise InputError(f"{where}: floor names its evaluations {[pair.first, pair.second]}, but {clash[0]!r} is "
                         "already a checkpoint's name; rename that checkpoint; nothing was run")
    return pair
