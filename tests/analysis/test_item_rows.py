"""Items of one row each skip pandas' group-bys (captrack.analysis.item_rows): what they give must be bit for bit what
the group-bys give. The same rows shuffled take the group-by path (unsorted rows are not one-row items), so each
function is compared with itself on both orders."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from captrack.analysis.by_field import group_table
from captrack.analysis.churn import answer_churn_counts, seed_agreements
from captrack.analysis.curves import item_means
from captrack.analysis.item_rows import one_row_items
from captrack.analysis.verdict_tables import item_labels
from captrack.labels import VariantLabels
from captrack.results.pairing import PAIRED_COLUMNS, PairedItems

TASKS = [("arc", "acc"), ("gsm8k", "exact_match"), ("mtbench", "rating"), ("zeta_é", "acc")]


def _paired(seed: int = 0, replicates: tuple[int, ...] = (0,)) -> PairedItems:
    """Sorted paired rows as captrack.results.pairing gives them: 0/1 values, a rating, -0.0, repeated documents."""
    rng = np.random.default_rng(seed)
    rows = []
    for task, metric in TASKS:
        for replicate in replicates:
            for doc in range(25):
                doc_hash = f"h{doc % 21:03d}"  # four hashes twice: occ 0 and 1
                occ = doc // 21
                binary = metric != "rating"
                base, variant = (float(rng.integers(0, 2)) if binary else float(rng.uniform(1, 10)) for _ in range(2))
                rows.append({"task": task, "filter": "none", "metric": metric, "replicate": replicate, "doc_hash": doc_hash,
                             "occ": occ, "doc_id": doc, "base": -0.0 if doc == 3 else base, "variant": variant,
                             "n_choices": 4 if doc % 5 else 3, "base_run": f"b{replicate}", "variant_run": f"v{replicate}"})
    items = pd.DataFrame(rows, columns=PAIRED_COLUMNS).sort_values(
        ["task", "metric", "replicate", "doc_hash", "occ"], kind="stable", ignore_index=True)
    items["n_choices"] = items["n_choices"].astype("Int32")
    items["replicate"] = items["replicate"].astype("int32")
    return PairedItems("base", "sft", items, pd.DataFrame(), list(replicates))


def _shuffled(paired: PairedItems, labels: pd.Series | None = None) -> tuple[PairedItems, pd.Series | None]:
    """The same rows (and their labels) in another order: the group-by path."""
    frame = paired.items.assign(_label=labels if labels is not None else None)
    frame = frame.sample(frac=1.0, random_state=3).reset_index(drop=True)
    moved = frame.pop("_label")
    assert one_row_items(frame) is None
    return PairedItems(paired.base, paired.variant, frame, paired.keys, paired.replicates), moved


def _same(a: object, b: object) -> None:
    """Equal, floats bit for bit (NaN and -0.0 included)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a) == sorted(b)
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    else:
        assert repr(a) == repr(b)


def test_sorted_one_row_items_are_found_and_repeats_or_disorder_are_not() -> None:
    paired = _paired()
    found = one_row_items(paired.items)
    assert found is not None and list(found.runs) == TASKS
    assert one_row_items(_paired(replicates=(0, 1)).items) is None  # an item's replicates: rows of one item
    assert one_row_items(_shuffled(paired)[0].items) is None


@pytest.mark.parametrize("seed", [0, 1])
def test_item_means_and_labels_are_the_group_bys_bit_for_bit(seed: int) -> None:
    paired = _paired(seed)
    labels = pd.Series([None if i % 7 == 0 else f"src{i % 4}" for i in range(len(paired.items))], dtype=object)
    shuffled, moved = _shuffled(paired, labels)
    _same(item_means(paired), item_means(shuffled))
    assert moved is not None
    _same(item_labels(paired, labels), item_labels(shuffled, moved))
    assert item_means(paired)[("sft", "arc", "acc")][0][3] == 0.0 and not np.signbit(item_means(paired)[("sft", "arc", "acc")][0][3])


def test_pairs_table_is_the_group_by_bit_for_bit() -> None:
    paired = _paired()
    variant = VariantLabels(name="sft", algorithm="SFT")
    fast = group_table(paired.items, variant, n_resamples=200, seed=1)
    slow = group_table(_shuffled(paired)[0].items, variant, n_resamples=200, seed=1)
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)
    for column in ("base_value", "variant_value", "delta", "delta_ci_low", "delta_ci_high"):
        assert fast[column].to_numpy().tobytes() == slow[column].to_numpy().tobytes()


def test_seed_agreements_and_answer_churn_are_the_group_bys() -> None:
    paired, shuffled = _paired(), _shuffled(_paired())[0]
    lower = {("arc", "acc"): False, ("gsm8k", "exact_match"): False, ("zeta_é", "acc"): True}
    _same(seed_agreements(paired, lower), seed_agreements(shuffled, lower))
    assert set(seed_agreements(paired, lower)) == set(lower)
    answers = {("arc", "b0", "v0"): {"acc": [("A", "a "), ("B", "C")]}, ("gsm8k", "b0", "v0"): None}
    _same(answer_churn_counts(paired, answers), answer_churn_counts(shuffled, answers))
    counts, unreadable = answer_churn_counts(paired, answers)
    assert counts[("arc", "acc")] == 1.0 and np.isnan(counts[("gsm8k", "exact_match")]) and unreadable == ["gsm8k"]


def test_per_replicate_table_is_the_group_by_on_the_same_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same sorted rows, grouped from their runs or by pandas (one_row_items said no): the same table."""
    from captrack.analysis import variant_part

    paired = _paired()
    fast = variant_part._per_replicate(paired)
    monkeypatch.setattr(variant_part, "one_row_items", lambda items: None)
    slow = variant_part._per_replicate(paired)
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)
    assert list(fast["replicate"].unique()) == [0] and str(fast["replicate"].dtype) == "int64"
