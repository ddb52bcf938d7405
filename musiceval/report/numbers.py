"""How many digits a number of the report shows: as many as its interval supports, and no more.

The rule (two significant digits of the uncertainty, the estimate rounded to the same decimal
place: the common practice of the GUM and the Particle Data Group, here always two digits):

- an estimate with an interval ``[low, high]`` of positive width is rounded, with both ends of its
  interval, to the decimal place of the second significant digit of the half-width
  ``(high - low) / 2``: ``0.2504`` in ``[0.2001, 0.3007]`` (half-width 0.0503) reads
  ``0.250 [0.200, 0.301]``, and ``1234.5`` in ``[900, 1600]`` (half-width 350) reads
  ``1230 [900, 1600]``. Trailing zeros are kept: they are digits the interval supports;
- a number without an interval (a bar, a threshold, a detectable effect, a p-value, a table cell),
  or an estimate whose interval has no width (a census counts exactly), shows
  :data:`SIGNIFICANT` significant digits, or every digit of its integer part, trailing zeros
  dropped: ``3.547319841870631`` reads ``3.547``, ``1.0`` reads ``1``;
- never across a bar: when the rounded estimate or an end of its interval would read on another
  side of the shown bar than the exact value is (``0.99996`` against a bar of ``1`` would read
  ``1``), the estimate, its interval and the bar get one more decimal at a time until each reads
  on its own side (at worst every value is shown as Python's ``repr``, which is exact);
- a number without an interval that would need more than four zeros after the decimal point
  (``0.0000230``), and any number of 1e15 or more or rounded beyond 12 decimals, is written in
  scientific notation (``2.3e-05``); an interval's three numbers otherwise share one fixed
  notation. A zero never carries a sign.
"""
from __future__ import annotations

import math
from decimal import Decimal
from typing import NamedTuple

#: significant digits of a number shown without an interval
SIGNIFICANT = 4
#: decimal places beyond which fixed notation gives way to scientific notation
_MAX_DECIMALS = 12


class Shown(NamedTuple):
    """An estimate, the ends of its interval and its bar as the report prints them ("" when absent)."""

    estimate: str
    low: str
    high: str
    bar: str


def _exponent(v: float) -> int:
    """The power of ten of the leading digit of ``v`` (not 0), exact (no ``log10`` rounding)."""
    return Decimal(v).adjusted()


def _tidy(s: str, strip: bool) -> str:
    if strip and "." in s:
        s = s.rstrip("0").rstrip(".")
    return s.lstrip("-") if float(s) == 0 else s


def _at(v: float, q: int, strip: bool) -> str:
    """``v`` rounded to a multiple of ``10 ** q``; trailing zeros dropped when ``strip``."""
    if v == 0 or (abs(v) < 1e15 and q >= -_MAX_DECIMALS):
        s = f"{v:.{min(-q, _MAX_DECIMALS)}f}" if q < 0 else f"{round(v, -q):.0f}"
        if not (strip and 0 < abs(float(s)) < 1e-4):
            return _tidy(s, strip)
    digits = min(16, max(0, _exponent(v) - q))
    mantissa, power = f"{v:.{digits}e}".split("e")
    if int(power) > _exponent(v):  # rounded up into the next power of ten (9.99e-07 -> 1.0e-06): one more digit
        mantissa, power = f"{v:.{min(16, digits + 1)}e}".split("e")
    return f"{_tidy(mantissa, strip)}e{power}"


def _point_q(v: float) -> int:
    """The rounding place of :data:`SIGNIFICANT` significant digits (never inside the integer part)."""
    return 0 if v == 0 else min(0, _exponent(v) - SIGNIFICANT + 1)


def number(x: float) -> str:
    """A number without an interval: :data:`SIGNIFICANT` significant digits (see the module docstring)."""
    return _at(x, _point_q(x), strip=True)


def _side(a: float, b: float) -> int:
    return (a > b) - (a < b)


def estimate(x: float, low: float | None = None, high: float | None = None, bar: float | None = None) -> Shown:
    """``x`` with the digits its interval ``[low, high]`` supports, and ``bar`` beside it, none of them
    reading on the other side of the bar than its exact value (see the module docstring)."""
    has_interval = low is not None and high is not None
    half = (high - low) / 2 if has_interval else 0.0
    interval = math.isfinite(half) and half > 0
    q = _exponent(half) - 1 if interval else _point_q(x)
    values = (x, low, high)
    for _ in range(40):
        shown = Shown(*(_at(v, q, strip=not interval) if v is not None else "" for v in values),
                      bar=_at(bar, min(q, _point_q(bar)), strip=True) if bar is not None else "")
        if bar is None or all(_side(v, bar) == _side(float(s), float(shown.bar))
                              for v, s in zip(values, shown[:3]) if v is not None):
            return shown
        q -= 1
    return Shown(*(repr(v) if v is not None else "" for v in values), bar=repr(bar))
