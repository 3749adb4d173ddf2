"""A trajectory's items: every training step of a variant paired with the base, like an end point."""

from __future__ import annotations

from captrack.results.pairing import PairedItems, pair_runs
from captrack.results.steps import check_base_has_no_steps, model_steps, stepped_models
from captrack.results.store import Store
from captrack.taxonomy import Taxonomy

__all__ = ["check_base", "pair_steps", "pair_variant", "stepped_variants"]


def check_base(store: Store, base: str) -> None:
    """Refuse a base whose runs carry training steps (captrack.results.steps.check_base_has_no_steps)."""
    check_base_has_no_steps(store.con, base)


def stepped_variants(store: Store, variants: list[str]) -> set[str]:
    """Which of `variants` have runs with training steps (a trajectory: paired step by step, see pair_steps), in one
    query."""
    return stepped_models(store.con, variants)


def pair_steps(store: Store, base: str, variant: str, taxonomy: Taxonomy, allow_partial: bool) -> dict[int, PairedItems]:
    """Step -> `variant`'s items at that step paired with `base`'s ({} when its runs carry no step).

    Raises:
        MismatchError: a step whose items do not pair with the base (see pair_runs), naming the variant.
    """
    return {step: pair_runs(store, base, variant, taxonomy, allow_partial, step=step)
            for step in model_steps(store.con, variant)}


def pair_variant(store: Store, base: str, variant: str, taxonomy: Taxonomy,
                 allow_partial: bool) -> tuple[PairedItems, dict[int, PairedItems]]:
    """The variant's end point paired with the base (a trajectory's last step), and every step ({} without steps).

    Raises:
        InputError: the base carries steps (check_base).
        MismatchError: items that do not pair (pair_runs).
    """
    check_base(store, base)
    steps = pair_steps(store, base, variant, taxonomy, allow_partial)
    return (steps[max(steps)] if steps else pair_runs(store, base, variant, taxonomy, allow_partial)), steps
