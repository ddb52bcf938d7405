"""What a metric's per-item values are, as the metric declares it: 0/1 outcomes or numbers, and
the range they are known to lie in (docs/regression-gates.md, "Binary or continuous: the metric
declares it").

The interval a gate reports depends on it (:mod:`musiceval.stats.intervals`): 0/1 outcomes get
the exact binomial / Clopper-Pearson interval and McNemar / Tango for paired items, a known range
bounds the interval and allows the finite-sample empirical Bernstein bound at tiny n, and a number
with no known bound gets neither. The values alone cannot tell: a boundary deviation in seconds
whose few items happen to be 0 s and 1 s is not a proportion, and a WER of 0.3 on every item does
not make WER a number in [0, 1] (insertions take it above 1). So each metric declares its
:class:`Scale` (:attr:`musiceval.protocols.base.MetricInfo.scale`), and the gates pass it down;
the values are only checked against it (:meth:`Scale.check`). A caller of the pure interval
functions that passes no scale gets the shape read from the values (:func:`from_values`), and the
gate result says so (:func:`describe`).

>>> BINARY.check([1.0, 0.0, 1.0], metric="accuracy")
>>> SECONDS.check([0.0, 1.0], metric="deviation_ref_to_est")
>>> bounded(-1, 1).difference().bounds
(-2.0, 2.0)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np


def _slack(bound: float) -> float:
    """Rounding a range check forgives: a CIDEr-D of 10 computed as 10.000000000000002 is in [0, 10]."""
    return 1e-9 * max(1.0, abs(bound)) if math.isfinite(bound) else 0.0


def _fmt(x: float) -> str:
    return f"{x:g}" if math.isfinite(x) else ("-inf" if x < 0 else "inf")


@dataclass(frozen=True)
class Scale:
    """A metric's per-item values: 0/1 outcomes (``binary``) or numbers in ``[low, high]`` (either
    end may be infinite: not known)."""

    binary: bool = False
    low: float = -math.inf
    high: float = math.inf

    def __post_init__(self) -> None:
        object.__setattr__(self, "low", float(self.low))
        object.__setattr__(self, "high", float(self.high))
        if not self.low < self.high:
            raise ValueError(f"Scale: low must be below high, got [{self.low}, {self.high}]")
        if self.binary and (self.low, self.high) != (0.0, 1.0):
            raise ValueError(f"Scale: 0/1 outcomes lie in [0, 1], got binary=True with [{self.low}, {self.high}]")

    @property
    def bounds(self) -> tuple[float, float] | None:
        """The known range when both ends are known (what a bounded interval needs), else None."""
        return (self.low, self.high) if math.isfinite(self.low) and math.isfinite(self.high) else None

    @property
    def label(self) -> str:
        """``binary (0/1 outcomes)``, ``continuous in [0, 1]``, ``continuous in [0, inf)``, ``continuous``."""
        if self.binary:
            return "binary (0/1 outcomes)"
        if not math.isfinite(self.low) and not math.isfinite(self.high):
            return "continuous"
        return f"continuous in [{_fmt(self.low)}, {_fmt(self.high)}{']' if math.isfinite(self.high) else ')'}"

    # the scale of what a gate computes from the values

    def difference(self) -> "Scale":
        """Of ``a - b``, both on this scale (a paired difference of 0/1 outcomes is in [-1, 1], not 0/1)."""
        return Scale(low=self.low - self.high, high=self.high - self.low)

    def shifted(self, by: float) -> "Scale":
        """Of ``values + by`` (the values minus a chance level): 0/1 outcomes no more unless ``by`` is 0."""
        return self if by == 0 else Scale(low=self.low + by, high=self.high + by)

    def negated(self) -> "Scale":
        """Of ``-values`` (a lower-is-better metric turned so that higher is better)."""
        return Scale(low=-self.high, high=-self.low)

    def averaged(self) -> "Scale":
        """Of a mean of several values (an item's mean over sampled repeats: 0/1 no more)."""
        return Scale(low=self.low, high=self.high)

    def join(self, other: "Scale") -> "Scale":
        """The scale of two sides compared item by item (a model's 0/1 outcomes against a
        strategy's expected accuracy per item): 0/1 outcomes only when both are, the range that
        holds both."""
        if self.binary and other.binary:
            return self
        return Scale(low=min(self.low, other.low), high=max(self.high, other.high))

    def check(self, *values: Sequence[float] | np.ndarray, metric: str = "the values") -> None:
        """Raise ``ValueError`` naming ``metric`` when a value contradicts the declaration.

        A metric declared binary whose values are not all 0 or 1 (or declared in a range its values
        leave) is an error, never a quiet switch to another test: either the metric or its
        declaration is wrong, and a test chosen by the values would make the interval depend on
        which items happened to be scored."""
        for v in values:
            arr = np.asarray(v, dtype=float)
            if not arr.size:
                continue
            if self.binary:
                bad = arr[(arr != 0) & (arr != 1)]
                if bad.size:
                    raise ValueError(
                        f"{metric}: declared binary (0/1 outcomes) but {bad.size} of its {arr.size} per-item values "
                        f"are not 0 or 1 (e.g. {bad[0]:g}); declare the metric continuous with its range in its "
                        "MetricInfo(scale=...), a derived condition that scores an item otherwise (an expected "
                        "accuracy over moved answers) in its protocol's scale(metric, condition) "
                        "(musiceval.stats.scales), or score each item 0 or 1")
            elif float(arr.min()) < self.low - _slack(self.low) or float(arr.max()) > self.high + _slack(self.high):
                raise ValueError(
                    f"{metric}: declared {self.label} but its per-item values run from {float(arr.min()):.10g} to "
                    f"{float(arr.max()):.10g}; declare the range the metric can take in its MetricInfo(scale=...) "
                    "(musiceval.stats.scales)")


#: 0/1 outcomes: right or wrong, parsed or not, the majority's answer or not
BINARY = Scale(binary=True, low=0.0, high=1.0)
#: numbers in [0, 1] that are not 0/1 outcomes (F1, ROC-AUC, BLEU, a share of frames, a key's weighted score)
UNIT = Scale(low=0.0, high=1.0)
#: a non-negative number with no upper bound: seconds, WER and CER (insertions take them above 1)
NON_NEGATIVE = Scale(low=0.0)
#: seconds (boundary, beat or onset deviations): non-negative, unbounded
SECONDS = NON_NEGATIVE
#: no known range (R^2 contributions, adjusted Rand index, log-likelihoods)
UNBOUNDED = Scale()


def bounded(low: float, high: float) -> Scale:
    """Numbers known to lie in ``[low, high]`` (a cosine in [-1, 1], a 1-10 rating, chrF in [0, 100])."""
    return Scale(low=low, high=high)


def from_values(*values: np.ndarray) -> Scale:
    """The scale read from the values alone, for callers that declare none: :data:`BINARY` when
    every value is 0 or 1, :data:`UNIT` when all lie in [0, 1], :data:`UNBOUNDED` otherwise. It can
    be wrong (seconds that happen to be 0 or 1); every gate of the suite passes the metric's
    declaration instead."""
    arrays = [np.asarray(v, dtype=float) for v in values]
    if arrays and all(a.size and bool(np.all((a == 0) | (a == 1))) for a in arrays):
        return BINARY
    if arrays and all(a.size and float(a.min()) >= 0 and float(a.max()) <= 1 for a in arrays):
        return UNIT
    return UNBOUNDED


def parse(label: object) -> Scale | None:
    """The :class:`Scale` whose :attr:`Scale.label` is ``label`` (as a results file records it with
    the per-item scores), or None for anything else (an older file, a scale read from the values).

    >>> parse("continuous in [0, inf)") == SECONDS, parse(BINARY.label) == BINARY, parse(None)
    (True, True, None)
    """
    if not isinstance(label, str):
        return None
    if label == BINARY.label:
        return BINARY
    if label == UNBOUNDED.label:
        return UNBOUNDED
    prefix = "continuous in ["
    if not label.startswith(prefix) or label[-1] not in "])":
        return None
    ends = label[len(prefix):-1].split(", ")
    try:
        low, high = (float(e) for e in ends)
    except ValueError:
        return None
    return Scale(low=low, high=high) if low < high else None


def describe(scale: Scale | None, *values: np.ndarray) -> str:
    """What :attr:`musiceval.records.GateResult.scale` records: the declared scale's label, or, when
    none was declared, the scale read from the values and that it was read so."""
    if scale is not None:
        return scale.label
    return f"{from_values(*values).label}, read from the values (the metric declares no scale)"
