"""A variant's labels, the one record of who a model is: defined here once and carried unchanged from the
experiment file through the store to the comparison and the board.

- the experiment's ``base:``/``variants:`` entries and leaderboard.yaml's variants are this record plus how
  to obtain the model (captrack.schemas derives both from it);
- `captrack ingest` writes it into the store's ``runs`` table, and `captrack compare --variant NAME` reads it
  back from there (captrack.results.stored_labels.variant_from_store);
- a comparison's variants and a board's rows are this record.

It is a frozen pydantic model so that a file's keys and the record are validated by the same rules.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictInt

__all__ = ["FLOOR_ALGORITHM", "LABEL_KEYS", "MAX_SEED", "MAX_STEP", "Label", "Seed", "Step", "VariantLabels", "floor_measures", "floor_name"]

MAX_STEP = 2**63 - 1
"""The largest training step a store holds (a signed 64-bit integer)."""
MAX_SEED = 2**31 - 1
"""The largest seed (a store's replicate column is a signed 32-bit integer)."""

Label = Annotated[str, Field(description="a label (text)")]
Seed = Annotated[StrictInt, Field(ge=0, le=MAX_SEED, description=f"a whole number in 0..{MAX_SEED}")]
Step = Annotated[StrictInt, Field(ge=0, le=MAX_STEP, description=f"a training step: a whole number in 0..{MAX_STEP}")]

LABEL_KEYS = ("algorithm", "family", "size", "data")
"""The labels a board groups variants by, in the order pages show them."""
FLOOR_ALGORITHM = "floor"
"""The algorithm of a backend's A/A floor pair (captrack.pipeline.floor): a reference, never gated as a variant."""


def floor_name(base: str, batch_size: int) -> str:
    """The name of `base`'s A/A floor evaluation at `batch_size` (captrack.pipeline.floor)."""
    return f"{base}-floor-bs{batch_size}"


def floor_measures(floor_base: str) -> str:
    """The base whose backend a floor pair measures, from the name of the pair's first evaluation: the base itself, or
    the base's own floor evaluation (:func:`floor_name`)."""
    head, said, batch = floor_base.rpartition(floor_name("", 0)[:-1])
    return head if said and batch.isdigit() else floor_base


class VariantLabels(BaseModel):
    """Who a variant is: its model name in the store, the labels it is grouped by, and where in a sweep it
    sits (the evaluation replicate, the training step of the checkpoint). Unknown keys are errors; a number
    given as a label becomes text."""

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True, frozen=True, populate_by_name=True)

    name: Annotated[str, Field(description="the model's name (text), e.g. sft")]
    algorithm: Label = ""
    family: Label = ""
    size: Label = ""
    data: Label = ""
    replicate: Seed | None = None
    """The evaluation replicate (None: the run's own seed)."""
    step: Step | None = None
    """The training step of the checkpoint (None: an end point, or the step its folder records)."""

    def labelled(self, **changes: object) -> VariantLabels:
        """This record with some labels changed (validated like a new one)."""
        return VariantLabels.model_validate({**self.model_dump(), **changes})

    def grouping(self) -> dict[str, str]:
        """The labels a board groups by, as a mapping (LABEL_KEYS)."""
        return {key: getattr(self, key) for key in LABEL_KEYS}
