"""first_step_significant by the window scan over the K steps (issue 53, item 1): max-T over windows of
consecutive steps (captrack.analysis.curve_windows), each window the paired change of the per-item mean over its
checkpoints, standardised by its item-level SE, with the joint null from the items."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from captrack.analysis.curve_windows import MemberSteps, scan_windows, trajectory_members
from captrack.analysis.verdicts import combine_changes
from captrack.taxonomy import load_taxonomy

N, P0, NOISE = 300, 0.6, 0.05


def _trajectory(seed: int, k: int, onset: int | None, loss: float = 0.04) -> tuple[list[str], list[float], MemberSteps]:
    """One task of N items, base rate 0.6, each checkpoint the base with fresh 5% + 5% flips and, from `onset` on,
    `loss` more of the items forgotten; each step's verdict and p-value as curves.csv's."""
    rng = np.random.default_rng(seed)
    base = (rng.random(N) < P0).astype(float)
    changes = np.empty((N, k))
    verdicts, p_values = [], []
    for step in range(1, k + 1):
        extra = loss if onset is not None and step >= onset else 0.0
        u = rng.random(N)
        value = np.where(base == 1, (u >= (NOISE + extra) / P0).astype(float), (u < NOISE / (1 - P0)).astype(float))
        change = combine_changes([("t", base, value, "binary", "higher")], 5.0)
        verdicts.append(change.verdict)
        p_values.append(change.p_value)
        changes[:, step - 1] = 100.0 * (value - base)
    return verdicts, p_values, MemberSteps(changes, [str(i) for i in range(N)])


def test_a_regression_from_step_five_of_ten_is_dated_at_or_after_its_onset() -> None:
    verdicts, p_values, member = _trajectory(5, 10, onset=5, loss=0.08)
    scan = scan_windows(list(range(1, 11)), [member], verdicts, p_values)
    assert scan.first_step is not None and scan.first_step >= 5
    assert scan.first_step == 6  # this seed: a window ending at step 6 is the first to clear its bar
    # every flagged window ends at or after the onset, and the flagged ones are regressions
    flagged = [w for w, f in zip(scan.windows, scan.flagged, strict=True) if f]
    assert flagged and all(end >= 5 for _, end in flagged)
    assert all(z < 0 for z, f in zip(scan.z, scan.flagged, strict=True) if f)
    # a window of the six changed steps: its Δ is the items' mean change over steps 5-10, z = Δ/SE over items
    at = scan.windows.index((4, 9))
    per_item = member.changes[:, 4:10].mean(axis=1)
    z = per_item.mean() / (per_item.std(ddof=1) / math.sqrt(N))
    assert scan.z[at] == pytest.approx(z, rel=1e-9)


def test_a_null_trajectorys_thresholds_lie_between_one_test_and_bonferroni() -> None:
    verdicts, p_values, member = _trajectory(11, 10, onset=None)
    scan = scan_windows(list(range(1, 11)), [member], verdicts, p_values)
    assert scan.first_step is None
    thresholds = scan.critical + scan.penalty  # each window's |z| bar
    assert len(scan.windows) == 55
    assert thresholds.min() > norm.isf(0.025)  # never laxer than one 5% test
    single = scan.penalty[scan.windows.index((0, 0))] + scan.critical
    whole = scan.penalty[scan.windows.index((0, 9))] + scan.critical
    # the whole trajectory's window is cheaper than Holm's first step (Bonferroni over the 10 steps); a single
    # step pays more (the penalty spends the error on sustained changes)
    assert 2.0 < whole < norm.isf(0.025 / 10) < single < 3.7
    assert 0.6 < scan.critical < 1.2


def test_one_step_is_the_end_points_verdict() -> None:
    member = MemberSteps(np.zeros((N, 1)), [str(i) for i in range(N)])
    for verdict, p, expected in (("regressed", 0.049, 7), ("improved", 0.0001, 7), ("inconclusive", 0.051, None),
                                 ("equivalent", 0.9, None)):
        scan = scan_windows([7], [member], [verdict], [p])
        assert scan.first_step == expected, (verdict, p)
        assert scan.critical + scan.penalty[0] == pytest.approx(norm.isf(0.025), rel=1e-12)
    # through combine_changes: 2 gained, 12 forgotten of 100 (score p = 0.0129 < 0.05)
    base = np.r_[np.ones(60), np.zeros(40)]
    value = base.copy()
    value[:12], value[60:62] = 0.0, 1.0
    change = combine_changes([("t", base, value, "binary", "higher")], 5.0)
    scan = scan_windows([3], [MemberSteps(100.0 * (value - base)[:, None], list(map(str, range(100))))],
                        [change.verdict], [change.p_value])
    assert change.verdict == "regressed" and scan.first_step == 3


def test_unscored_items_are_left_out_of_a_window_never_counted_as_zero() -> None:
    _, _, member = _trajectory(3, 4, onset=1, loss=0.08)
    changes = member.changes.copy()
    changes[:40, 2] = np.nan  # 40 items unscored at step 3
    scan = scan_windows([1, 2, 3, 4], [MemberSteps(changes, member.units)], ["inconclusive"] * 4, [0.5] * 4)
    for window in ((0, 3), (1, 2), (0, 1)):
        block = changes[:, window[0]:window[1] + 1]
        per_item = block[np.isfinite(block).all(axis=1)].mean(axis=1)
        assert scan.z[scan.windows.index(window)] == pytest.approx(
            per_item.mean() / (per_item.std(ddof=1) / math.sqrt(per_item.size)), rel=1e-9)
    zeroed = scan_windows([1, 2, 3, 4], [MemberSteps(np.nan_to_num(changes), member.units)], ["inconclusive"] * 4,
                          [0.5] * 4)
    assert not np.isclose(zeroed.z[scan.windows.index((0, 3))], scan.z[scan.windows.index((0, 3))])
    # a member that no step scores is no member at all
    empty = MemberSteps(np.full((10, 4), np.nan), [f"e{i}" for i in range(10)])
    both = scan_windows([1, 2, 3, 4], [MemberSteps(changes, member.units), empty], ["inconclusive"] * 4, [0.5] * 4)
    assert np.allclose(both.z, scan.z) and both.critical == pytest.approx(scan.critical)


def test_forms_of_the_same_items_are_one_unit_and_clusters_widen_the_bar() -> None:
    _, _, member = _trajectory(9, 5, onset=2, loss=0.06)
    twin_units = MemberSteps(member.changes, member.units)
    independent = MemberSteps(member.changes, [f"other-{u}" for u in member.units])
    steps, verdicts, p_values = list(range(1, 6)), ["inconclusive"] * 5, [0.5] * 5
    alone = scan_windows(steps, [member], verdicts, p_values)
    shared = scan_windows(steps, [member, twin_units], verdicts, p_values)
    apart = scan_windows(steps, [member, independent], verdicts, p_values)
    multi = [i for i, (j, e) in enumerate(alone.windows) if j < e]
    assert np.allclose(shared.z[multi], alone.z[multi])  # two copies of the same items: no new evidence
    assert np.allclose(apart.z[multi], math.sqrt(2) * alone.z[multi], rtol=2e-3)  # independent items: √2 more
    clustered = scan_windows(steps, [member], verdicts, p_values, df=5.0)
    assert clustered.critical > alone.critical + 0.3


def test_trajectory_members_align_items_across_steps_and_keep_unscored_as_nan() -> None:
    taxonomy = load_taxonomy()
    key = ("v", "captrack_mmlu_pro_subset", "acc")
    items = {10: {key: (np.array([1.0, 0.0, 1.0]), np.array([0.0, 0.0, 1.0]))},
             20: {key: (np.array([0.0, 1.0]), np.array([1.0, 1.0]))}}
    identities = {10: {key: ["a", "b", "c"]}, 20: {key: ["b", "a"]}}  # item c unscored at step 20
    members, df = trajectory_members("v", items, identities, {}, {}, taxonomy)["C1"]
    assert df is None and len(members) == 1
    rows = {unit.rsplit("\x1f", 1)[1]: i for i, unit in enumerate(members[0].units)}
    changes = members[0].changes
    assert changes[rows["a"]].tolist() == [-100.0, 0.0] and changes[rows["b"]].tolist() == [0.0, 100.0]
    assert changes[rows["c"], 0] == 0.0 and math.isnan(changes[rows["c"], 1])
    clusters = {10: {key: ["x", "x", "y"]}, 20: {key: ["x", "x"]}}
    members, df = trajectory_members("v", items, identities, clusters, {}, taxonomy)["C1"]
    assert df == 1.0 and len(set(members[0].units)) == 2


def test_each_window_draws_with_its_own_degrees_of_freedom() -> None:
    """A long window averages each checkpoint's sparse flips, so its SE is estimated better than a two-step window's:
    more degrees of freedom; a one-step window is its verdict's calibrated test (normal); clusters cap them all."""
    from captrack.analysis import curve_windows as cw

    _, _, member = _trajectory(3, 10, onset=None)
    windows = [(j, e) for e in range(10) for j in range(e + 1)]
    _, factor, weights = cw._window_moments([member], tuple(windows), 10)
    df = cw._df(factor @ weights, [j < e for j, e in windows], None)
    length = np.array([e - j + 1 for j, e in windows])
    assert np.isinf(df[length == 1]).all()
    assert 20 < df[length == 2].mean() < df[length == 6].mean() < df[length == 10].mean() < math.inf
    capped = cw._df(factor @ weights, [j < e for j, e in windows], 15.0)
    assert (capped == np.minimum(df, 15.0)).all()
    scale = cw._t_scale(df)
    assert (scale[:, length == 1] == 1.0).all() and scale[:, length == 2].std() > scale[:, length == 10].std() > 0
