"""A variant's labels as `captrack ingest` recorded them: what a comparison reads, so a user types them once."""

from __future__ import annotations

from typing import Any

from captrack.errors import InputError
from captrack.labels import LABEL_KEYS, VariantLabels

__all__ = ["stored_labels", "variant_from_store"]


def stored_labels(store: Any, name: str) -> VariantLabels:
    """The labels recorded for model `name` in `store` (captrack.results.store.Store); empty where none were given.

    Raises:
        InputError: the model's runs were ingested under different values of one label (both named).
    """
    present = [key for key in LABEL_KEYS if store.has_column("runs", key)]  # stores before size/data had none
    rows = store.con.execute(
        f"SELECT DISTINCT {', '.join(present)} FROM runs WHERE model = ?", [name]).fetchall()
    found: dict[str, str] = {}
    for key, values in zip(present, zip(*rows, strict=True) if rows else (), strict=False):
        given = sorted({str(v) for v in values if v})
        if len(given) > 1:
            raise InputError(f"{store.path}: model {name!r} was ingested under {len(given)} {key} labels "
                             f"({', '.join(map(repr, given))}); re-ingest its runs under one (captrack ingest ... "
                             f"--{key} ...), nothing was written")
        found[key] = given[0] if given else ""
    return VariantLabels.model_validate({"name": name, **found})


def variant_from_store(store: Any, name: str, algorithm: str = "") -> VariantLabels:
    """The variant `name` as the store labels it; an `algorithm` given on the command line may fill in an
    unlabelled variant but never relabel one.

    Raises:
        InputError: `algorithm` differs from the one recorded at ingest (both named).
    """
    labels = stored_labels(store, name)
    if algorithm and labels.algorithm and algorithm != labels.algorithm:
        raise InputError(f"--variant {name}:{algorithm}: {name!r} was ingested with algorithm {labels.algorithm!r}, "
                         f"not {algorithm!r}; give --variant {name} (the store's label) or re-ingest it under "
                         f"--algorithm {algorithm} (nothing was written)")
    return labels.labelled(algorithm=algorithm) if algorithm and not labels.algorithm else labels
