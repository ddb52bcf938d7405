"""Numeric ranges of options: one rule for the suite config and the command line.

A number an option takes is finite (TOML and Python's ``float()`` both read ``nan`` and ``inf``,
and JSON output cannot hold them) and lies in the option's range: a count of permutations,
resamples or items is an integer >= 1, a level such as ``alpha`` or ``power`` lies in (0, 1), a
margin is >= 0. :class:`Range` states one range; :func:`arg` makes it an argparse ``type`` whose
error names the flag, the range and the value given.

>>> AT_LEAST_ONE.describe()
'an integer >= 1'
>>> 0 in AT_LEAST_ONE, 3 in AT_LEAST_ONE, float("nan") in NON_NEGATIVE
(False, True, False)
"""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Range:
    """Finite numbers from ``low`` to ``high`` (None: unbounded), each end open or closed;
    ``integer``: integers only."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False

    def __contains__(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.integer and not isinstance(value, int) or not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return not (self.high is not None and (value >= self.high if self.high_open else value > self.high))

    def describe(self) -> str:
        what = "an integer" if self.integer else "a finite number"
        low, high = self._show(self.low), self._show(self.high)
        if self.low is not None and self.high is not None:
            return f"{what} in {'(' if self.low_open else '['}{low}, {high}{')' if self.high_open else ']'}"
        if self.low is not None:
            return f"{what} {'>' if self.low_open else '>='} {low}"
        if self.high is not None:
            return f"{what} {'<' if self.high_open else '<='} {high}"
        return what

    def _show(self, bound: float | None) -> str:
        if bound is None:
            return ""
        return str(int(bound)) if self.integer else f"{bound:g}"


AT_LEAST_ONE = Range(1, integer=True)
#: permutations of a permutation null (``--n-permutations``, ``[factual] n_permutations``): at most a
#: million. Each permutation scores every item again, so the count is the run time; and beyond that a
#: p-value near 0.05 has a Monte Carlo standard error of 0.0002 (at the default 2,000: 0.005), far
#: below what moves a gate, so more draws only make a run that never ends
PERMUTATIONS = Range(1, 1_000_000, integer=True)
#: bootstrap resamples of an interval (``[defaults] n_resamples``): at most a million, for the same
#: reason: each resample is a pass over the items, and at a million the Monte Carlo error of an
#: interval's bound is far below its own width
RESAMPLES = Range(1, 1_000_000, integer=True)
NON_NEGATIVE_INT = Range(0, integer=True)
NON_NEGATIVE = Range(0)
POSITIVE = Range(0, low_open=True)
#: a significance level or a power: strictly between 0 and 1
LEVEL = Range(0, 1, low_open=True, high_open=True)
#: a share of items or answers
SHARE = Range(0, 1)
#: a correlation of two systems' per-item scores (1 and -1 leave no variance to plan with)
CORRELATION = Range(-1, 1, low_open=True, high_open=True)
FINITE = Range()


def arg(allowed: Range) -> Callable[[str], Any]:
    """An argparse ``type`` reading a number in ``allowed``; argparse prefixes its error with the flag
    (``argument --drop: expected a finite number > 0, got 'nan'``) and exits with status 2."""

    def parse(text: str) -> Any:
        try:
            value: Any = int(text) if allowed.integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {allowed.describe()}, got {text!r}") from None
        if value not in allowed:
            raise argparse.ArgumentTypeError(f"expected {allowed.describe()}, got {text!r}")
        return value

    parse.__name__ = allowed.describe()
    return parse
