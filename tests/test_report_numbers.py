"""Numbers of the report: the digits an interval supports, never read across a bar (report.numbers)."""
from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from musiceval.report.numbers import SIGNIFICANT, Shown, estimate, number


@pytest.mark.parametrize("x, low, high, bar, shown", [
    (0.2504, 0.2001, 0.3007, None, Shown("0.250", "0.200", "0.301", "")),  # half-width 0.0503 -> 3 decimals
    (-0.15, -0.24, -0.05, 0.0, Shown("-0.150", "-0.240", "-0.050", "0")),
    (1234.5, 900.0, 1600.0, None, Shown("1230", "900", "1600", "")),  # half-width 350: to the tens
    (0.5, 0.49, 0.51, None, Shown("0.500", "0.490", "0.510", "")),  # trailing zeros the interval supports stay
    (0.2504, 0.2001, 0.3007, 0.25, Shown("0.2504", "0.2001", "0.3007", "0.25")),  # 0.250 would read as on the bar
    (0.0004, -0.05, 0.05, 0.0, Shown("0.0004", "-0.0500", "0.0500", "0")),
    (0.99996, 0.99996, 0.99996, 1.0, Shown("0.99996", "0.99996", "0.99996", "1")),  # a census short of 1 never reads 1
    (0.8, None, None, 1.0, Shown("0.8", "", "", "1")),
    (0.25001, 0.2, 0.3, 0.24996, Shown("0.25001", "0.20000", "0.30000", "0.24996")),  # the bar gets its digits too
])
def test_estimate_examples(x, low, high, bar, shown):
    assert estimate(x, low, high, bar) == shown


@pytest.mark.parametrize("x, text", [
    (3.547319841870631, "3.547"), (1.0, "1"), (0.25, "0.25"), (0.0, "0"), (-0.0, "0"), (12345.678, "12346"),
    (-0.000123456, "-0.0001235"), (2.3e-05, "2.3e-05"), (1e-30, "1e-30"), (0.9999999, "1"), (2e15, "2e+15"),
])
def test_number_examples(x, text):
    assert number(x) == text


def _decimals(s: str) -> int:
    return len(s.split(".")[1]) if "." in s and "e" not in s else 0


def _side(a: float, b: float) -> int:
    return (a > b) - (a < b)


values = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
half_widths = st.floats(min_value=1e-6, max_value=1e5, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(x=values, half=half_widths)
def test_never_more_digits_than_the_interval_supports(x, half):
    low, high = x - half, x + half
    width = (high - low) / 2
    assume(width > 0)
    places = 1 - Decimal(width).adjusted()  # the decimal place of the half-width's second significant digit
    for v, s in zip((x, low, high), estimate(x, low, high)[:3]):
        assert _decimals(s) == max(places, 0)
        assert abs(float(s) - v) <= 0.5 * 10.0 ** -places * (1 + 1e-9) + 1e-12 * abs(v)  # rounded, not invented


finite = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=500, deadline=None)
@given(ends=st.lists(values | finite, min_size=3, max_size=3), bar=values | finite | st.sampled_from([0.0, 1.0, 0.25, -0.02]))
def test_never_reads_across_the_bar(ends, bar):
    """The estimate and both ends of its interval read on the side of the shown bar their exact values are on."""
    low, x, high = sorted(ends)
    shown = estimate(x, low, high, bar)
    for v, s in zip((x, low, high), shown[:3]):
        assert _side(float(s), float(shown.bar)) == _side(v, bar), (v, s, bar, shown.bar)
    point = estimate(x, bar=bar)
    assert _side(float(point.estimate), float(point.bar)) == _side(x, bar)


@settings(max_examples=300, deadline=None)
@given(x=values, half=half_widths, bar=values | st.sampled_from([0.0, 1.0]))
def test_digits_are_added_only_where_the_bar_needs_them(x, half, bar):
    """More digits than the interval supports only when those digits would read on the wrong side of the bar."""
    values_ = (x, x - half, x + half)
    plain = estimate(*values_)
    if estimate(*values_, bar)[:3] != plain[:3]:
        assert any(_side(float(s), float(number(bar))) != _side(v, bar) for v, s in zip(values_, plain))


@given(x=st.floats(allow_nan=False, allow_infinity=False))
def test_number_rounds_to_its_significant_digits(x):
    s = number(x)
    assert float(s) == pytest.approx(x, rel=10.0 ** -(SIGNIFICANT - 1), abs=0.0)
