"""Training recipes named in experiment manifests (``train: {method: sft|dpo|rl, ...}``).

All three post-train from the same base on the same generated target domain (multi-step
arithmetic word problems) with the same number of optimiser steps and examples, so their
drift can be compared at equal budget.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from captrack.errors import UnknownNameError

__all__ = ["RECIPES", "run_recipe"]


def _sft(recipe: Mapping[str, Any], base: Path, out: Path) -> dict[str, Any]:
    from captrack.training.problems import arithmetic_sft_rows
    from captrack.training.sft import train_sft

    rows = arithmetic_sft_rows(int(recipe.get("rows", 160)), seed=int(recipe.get("data_seed", 0)), domain=_domain(recipe))
    return train_sft(base, out, rows, steps=int(recipe["steps"]), seed=int(recipe.get("seed", 0)), **_extra(recipe))


def _dpo(recipe: Mapping[str, Any], base: Path, out: Path) -> dict[str, Any]:
    from captrack.training.preference import train_dpo
    from captrack.training.problems import arithmetic_preference_rows

    rows = arithmetic_preference_rows(int(recipe.get("rows", 160)), seed=int(recipe.get("data_seed", 0)), domain=_domain(recipe))
    return train_dpo(base, out, rows, steps=int(recipe["steps"]), seed=int(recipe.get("seed", 0)), **_extra(recipe))


def _rl(recipe: Mapping[str, Any], base: Path, out: Path) -> dict[str, Any]:
    from captrack.training.problems import arithmetic_prompt_rows
    from captrack.training.rl import train_rl

    rows = arithmetic_prompt_rows(int(recipe.get("rows", 160)), seed=int(recipe.get("data_seed", 0)), domain=_domain(recipe))
    return train_rl(base, out, rows, steps=int(recipe["steps"]), seed=int(recipe.get("seed", 0)), **_extra(recipe))


RECIPES: dict[str, Callable[[Mapping[str, Any], Path, Path], dict[str, Any]]] = {"sft": _sft, "dpo": _dpo, "rl": _rl}
_COMMON = {"method", "steps", "rows", "seed", "data_seed", "domain"}


def _domain(recipe: Mapping[str, Any]) -> str:
    return str(recipe.get("domain", "multi_step"))


def _extra(recipe: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in recipe.items() if k not in _COMMON}


def run_recipe(recipe: Mapping[str, Any], base: Path, out: Path) -> dict[str, Any]:
    """Train `out` from `base` following `recipe`; returns the training record."""
    method = str(recipe.get("method", "")).lower()
    if method not in RECIPES:
        raise UnknownNameError("training method", method, RECIPES)
    return RECIPES[method](recipe, base, out)
