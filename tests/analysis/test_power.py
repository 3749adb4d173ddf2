"""The planned minimum detectable effect: README's figures, near 0 and 1, and the verdict's own power by simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from captrack.analysis import power
from captrack.analysis.power import detection_power, mde_binary, mde_continuous
from captrack.analysis.verdicts import paired_change


@pytest.mark.parametrize(("n", "points"), [(50, 27.3), (300, 11.4), (500, 8.8), (12032, 1.8)])
def test_half_rate_figures_in_the_readme(n: int, points: float) -> None:
    assert round(100 * mde_binary(n, 0.5), 1) == points


def test_a_task_solved_on_every_item_is_not_powered_by_thirty_items() -> None:
    # ψ = 2p(1 − p) alone would plan ~10 points here; a drop of δ flips δ·n items, all one way.
    assert mde_binary(30, 1.0) > 0.2
    assert mde_binary(30, 0.0) == pytest.approx(mde_binary(30, 1.0))


def test_the_rate_is_symmetric_and_more_items_detect_less() -> None:
    assert mde_binary(200, 0.9) == pytest.approx(mde_binary(200, 0.1))
    sizes = [mde_binary(n, 0.7) for n in (50, 100, 200, 400, 800)]
    assert sizes == sorted(sizes, reverse=True)
    assert np.isnan(mde_binary(3, 0.5)) and np.isnan(mde_binary(0, 0.5))


@pytest.mark.parametrize(("n", "p"), [(200, 0.9), (390, 0.5), (150, 0.05), (80, 1.0)])
def test_simulated_power_at_the_mde_is_near_eighty_percent(n: int, p: float) -> None:
    """Independent outcomes at p and at p moved δ toward 1/2: the verdict (paired_change) calls the change in
    ≈ 80% of runs (the MDE is planned by its own rule)."""
    delta = mde_binary(n, p)
    q = p - delta if p > 0.5 else p + delta
    rng = np.random.default_rng(0)
    runs, rejected = 1000, 0
    for _ in range(runs):
        base, variant = rng.random(n) < p, rng.random(n) < q
        called = paired_change(base.astype(float), variant.astype(float), "binary", "higher", 5.0).verdict
        rejected += called == ("regressed" if q < p else "improved")
    assert 0.75 <= rejected / runs <= 0.86  # 80% ± 4 Monte-Carlo SEs and the step of a discrete rule


def test_a_given_discordance_plans_a_smaller_change() -> None:
    """Real pairs agree more than independent outcomes: at 10% of items flipping, n = 400 detects ~4 points."""
    independent, assumed = mde_binary(400, 0.5), mde_binary(400, 0.5, discordance=0.10)
    assert assumed < independent / 2
    assert detection_power(400, (0.10 + assumed) / 2, (0.10 - assumed) / 2) == pytest.approx(0.80, abs=0.01)


def test_scores_use_the_paired_sd() -> None:
    assert mde_continuous(100, 0.5) == pytest.approx((1.959963984540054 + 0.8416212335729143) * 0.05)


@pytest.mark.parametrize("n", [1, 7, 60, 1000, 5000, 40000])
@pytest.mark.parametrize("psi", [1e-6, 0.003, 0.2, 0.5, 0.97, 1.0])
def test_only_counts_below_the_kept_weight_are_left_out_so_the_power_is_the_same(n: int, psi: float) -> None:
    """detection_power weighs only the discordant counts near nψ (power._likely_counts): every count left out
    weighs at most 1e-14, the weights it keeps drop, and the power equals the sum over all n + 1 counts."""
    toward, away = 0.7 * psi, 0.3 * psi
    psi = min(toward + away, 1.0)  # as detection_power adds them
    likely = power._likely_counts(n, psi)
    everything = np.arange(n + 1)
    left_out = everything[(everything < likely[0]) | (everything > likely[-1])]
    assert (binom.pmf(left_out, n, psi) <= 1e-14).all()
    weight = binom.pmf(everything, n, psi)
    d, w = everything[weight > 1e-14], weight[weight > 1e-14]
    need = np.floor((d + power.CONTINUITY + power.Z_ALPHA * np.sqrt(d)) / 2.0) + 1.0
    full = float((w * np.where(need <= d, binom.sf(need - 1.0, d, toward / psi), 0.0)).sum())
    assert detection_power(n, toward, away) == full  # bit for bit: the same terms, in the same order
