"""Parity with the published CapTrack Qwen3-80B figures (../shared/anchors/captrack_qwen3_80b).

The four averaged files go through the tidy scores format and `captrack compare --scores`; every
published capability mean and std must come back to 1e-6.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from shared_paths import shared_dir

from captrack.analysis.scores import scores_from_reference
from captrack.cli import main
from captrack.taxonomy import load_taxonomy

ANCHORS = shared_dir() / "anchors" / "captrack_qwen3_80b"
VARIANTS = {
    "Qwen3 80B DPO": "qwen-3-80b-ioob-dpo-l-final_averaged.csv",
    "Qwen3 80B IFT": "qwen-3-80b-ioob-ift-l-final_averaged.csv",
    "Qwen3 80B IFT+DPO": "qwen-3-80b-iift-dpo-l-final_averaged.csv",
}

pytestmark = pytest.mark.skipif(not ANCHORS.is_dir(), reason=f"anchors not found at {ANCHORS}")


def test_taxonomy_membership_matches_the_published_aggregation() -> None:
    taxonomy = load_taxonomy()
    published = json.loads((ANCHORS / "aggregation_membership.json").read_text())
    for entry in published:
        cap = taxonomy.capability(entry["capability"])
        facet = next(f for f, label in cap.facets.items() if label == entry["published_column"])
        ours = {m.reference_column for m in cap.members if m.facet == facet and m.reference_column}
        assert ours == set(entry["member_metric_columns"]), entry["published_column"]


def test_compare_scores_reproduces_published_means_and_stds(tmp_path: Path) -> None:
    tidy = scores_from_reference(
        ANCHORS / "qwen-3-80b-in-oob_averaged.csv", {k: ANCHORS / v for k, v in VARIANTS.items()}
    )
    scores = tmp_path / "scores.csv"
    tidy.to_csv(scores, index=False)
    assert main(["compare", "--scores", str(scores), "--out", str(tmp_path / "out")]) == 0

    for ours_name, theirs_name in (("captrack_compatible.csv", "relative_differences.csv"),
                                   ("captrack_compatible_std.csv", "relative_differences_std.csv")):
        ours = pd.read_csv(tmp_path / "out" / ours_name, index_col="variant")
        theirs = pd.read_csv(ANCHORS / theirs_name, index_col=0)
        assert list(ours.columns) == list(theirs.columns)
        for variant in VARIANTS:
            np.testing.assert_allclose(
                ours.loc[variant].to_numpy(float), theirs.loc[variant].to_numpy(float), rtol=0, atol=1e-6,
                err_msg=f"{ours_name} {variant}",
            )


def test_capabilities_csv_carries_the_same_means(tmp_path: Path) -> None:
    tidy = scores_from_reference(ANCHORS / "qwen-3-80b-in-oob_averaged.csv", {"dpo": ANCHORS / VARIANTS["Qwen3 80B DPO"]})
    scores = tmp_path / "scores.csv"
    tidy.to_csv(scores, index=False)
    main(["compare", "--scores", str(scores), "--out", str(tmp_path / "out")])
    caps = pd.read_csv(tmp_path / "out" / "capabilities.csv")
    c1 = caps[(caps["level"] == "capability") & (caps["key"] == "C1")].iloc[0]
    published = pd.read_csv(ANCHORS / "relative_differences.csv", index_col=0)
    assert c1["mean_rel_drift_pct"] == pytest.approx(published.loc["Qwen3 80B DPO", "C1 Knowledge"], abs=1e-6)
    assert c1["n_metrics"] == 6
