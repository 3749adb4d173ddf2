"""How every page prints a number and a CI: no "-0.0", no CI of no width shown as evidence, a verdict with its change."""

from __future__ import annotations

import math

import pytest

from captrack.report.numbers import (
    NO_SPREAD,
    ZERO_WIDTH,
    ci_text,
    is_significant,
    plain,
    signed,
    verdict_text,
)

CASES = [  # (value, printed, why)
    (-0.04, "0.0", "rounds to zero: no sign"),
    (-0.0, "0.0", "a negative zero"),
    (0.04, "0.0", "rounds to zero: no plus either"),
    (0.05, "+0.1", "rounds away from zero: signed"),
    (-4.04, "-4.0", "a fall"),
    (math.nan, "n/a", "missing"),
]


@pytest.mark.parametrize(("value", "printed", "why"), CASES)
def test_a_signed_number_that_rounds_to_zero_prints_without_a_sign(value: float, printed: str, why: str) -> None:
    assert signed(value) == printed, why
    assert plain(-0.001) == "0.0"


CIS = [  # (low, high, printed, why)
    (-7.14, -1.21, "[-7.1, -1.2]", "ends apart at one decimal"),
    (-0.04, 0.03, "[-0.04, +0.03]", "ends alike at one decimal: one more"),
    (-0.9, -0.04, "[-0.90, -0.04]", "a nonzero end that would print 0.0: decimals until it shows its sign"),
    (0.0, 0.6, "[0.0, +0.6]", "an end at exactly 0 prints 0.0"),
    (0.0, 0.0, f"({ZERO_WIDTH})", "width 0: no certainty"),
    (0.00001, 0.00002, f"({NO_SPREAD})", "ends alike at three decimals"),
    (math.nan, 1.0, "n/a", "no CI"),
]


@pytest.mark.parametrize(("low", "high", "printed", "why"), CIS)
def test_a_ci_never_prints_two_equal_ends(low: float, high: float, printed: str, why: str) -> None:
    assert ci_text(low, high) == printed, why


def test_a_verdict_is_printed_with_the_change_and_ci_it_was_decided_on() -> None:
    assert verdict_text(-4.04, -7.14, -1.21, "points", "regressed", 5.0) == "-4.0 points [-7.1, -1.2] → regressed at ±5"
    assert verdict_text(12.0, 3.0, 21.0, "% of base", "improved", 10.0) == "+12.0% of base [+3.0, +21.0] → improved at ±10"
    assert verdict_text(1.0, -1.0, 3.0, "points", "", 5.0) == ""  # no verdict, nothing to print


@pytest.mark.parametrize(("verdict", "significant"), [("regressed", True), ("improved", True), ("changed", True),
                                                      ("equivalent", False), ("inconclusive", False), ("", False),
                                                      (math.nan, False)])
def test_significant_means_a_verdict_whose_ci_excludes_zero(verdict: object, significant: bool) -> None:
    assert is_significant(verdict) is significant


CHANGES = [  # (change, low, high, printed, why)
    (0.04, 0.01, 0.08, "+0.04 points [+0.01, +0.08]", "a CI above 0: the change shows its sign, never 0.0"),
    (-0.004, -0.009, -0.001, "-0.004 points [-0.009, -0.001]", "three decimals where two still print 0.00"),
    (0.04, -0.3, 0.5, "0.0 points [-0.3, +0.5]", "a CI that includes 0: 0.0 is what the data allow"),
    (-4.04, -7.14, -1.21, "-4.0 points [-7.1, -1.2]", "one decimal where it shows the sign"),
]


@pytest.mark.parametrize(("change", "low", "high", "printed", "why"), CHANGES)
def test_a_change_whose_ci_excludes_zero_never_prints_as_zero(change: float, low: float, high: float, printed: str,
                                                              why: str) -> None:
    from captrack.report.numbers import change_text

    assert change_text(change, low, high) == printed, why
