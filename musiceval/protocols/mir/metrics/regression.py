"""Emotion regression: R^2 of standardised ratings against standardised annotations.

Conventions
-----------
CMI-Bench references are z-scores; models answer on a 1-9 scale. Predictions are therefore
standardised with the mean and population standard deviation of the parsed predictions; an
item without a rating is imputed with that mean (a z-score of 0). Both steps follow the toolkit;
the scorer lists imputed items as failures.

Predictions without spread (nothing parsed, or every parsed rating equal: a model that answers "5"
to every clip) have no z-score (0 / 0). That is a property of the model's answers, so it is scored,
never an error (:func:`r2_standardised_items`, :func:`has_spread`): such answers say nothing about
which clip is rated higher than another and explain none of the variance of the references. The
corrected default scores them as the mean predictor (R^2 = 0 exactly, the task's trivial baseline
on every item, so "beats the mean predictor" FAILs); the CMI-Bench compatible modes follow the
toolkit's ``cal_r2`` at commit 35235cb (every standardised prediction 0), see docs/cmi-bench.md.
References without variance (fewer than two items, or all equal) are a property of the benchmark
file: R^2 is undefined and the task is refused (:func:`r2_items` raises; the scorer names the file).

Metrics
-------
- :func:`standardise_predictions`, :func:`has_spread`
- :func:`r2_standardised_items`: the per-item contributions of standardised predictions, defined
  for predictions without spread
- :func:`r2_items`: per-item contributions ``1 - (p_i - y_i)^2 / var(y)`` whose mean is
  R^2 = 1 - SS_res / SS_tot (torchmetrics ``R2Score``, sklearn ``r2_score``); the mean predictor
  scores exactly 0.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

#: predictions without spread scored as the mean predictor, ``p_i = mean(y)`` (the corrected default)
MEAN_PREDICTOR = "mean-predictor"
#: predictions without spread standardised to 0 on every item (``cal_r2`` at toolkit commit 35235cb)
ZERO = "zero"
NO_SPREAD_RULES = (MEAN_PREDICTOR, ZERO)


def has_spread(predictions: Sequence[float | None]) -> bool:
    """Whether the parsed predictions (``None``: unparsed) can be z-scored: at least one was parsed
    and their population standard deviation is above 0."""
    parsed = np.array([p for p in predictions if p is not None], dtype=float)
    return bool(parsed.size) and float(np.std(parsed)) > 0.0


def standardise_predictions(predictions: Sequence[float | None]) -> np.ndarray:
    """z-scores of the parsed predictions; ``None`` becomes 0 (the mean).

    Raises
    ------
    ValueError
        When fewer than two distinct predictions were parsed (standard deviation 0);
        :func:`r2_standardised_items` defines R^2 for that case.
    """
    parsed = np.array([p for p in predictions if p is not None], dtype=float)
    if parsed.size == 0 or float(np.std(parsed)) == 0.0:
        raise ValueError(
            "standard deviation of the parsed ratings is 0 (none parsed, or all equal): "
            "R^2 of standardised predictions is undefined"
        )
    mean, std = float(np.mean(parsed)), float(np.std(parsed))
    return np.array([0.0 if p is None else (float(p) - mean) / std for p in predictions])


def r2_items(references: Sequence[float], predictions: np.ndarray) -> np.ndarray:
    """Per-item R^2 contributions; ``r2_items(y, p).mean() == sklearn.metrics.r2_score(y, p)``."""
    y = np.asarray(references, dtype=float)
    p = np.asarray(predictions, dtype=float)
    if y.shape != p.shape or y.ndim != 1:
        raise ValueError(f"references {y.shape} and predictions {p.shape} must be equal 1-d shapes")
    var = float(np.mean((y - y.mean()) ** 2))
    if var == 0.0:
        raise ValueError("references have zero variance: R^2 is undefined")
    return 1.0 - (p - y) ** 2 / var


def r2_standardised_items(references: Sequence[float], predictions: Sequence[float | None], *,
                          no_spread: str = MEAN_PREDICTOR) -> np.ndarray:
    """Per-item R^2 contributions of ratings standardised with their own mean and population std.

    The rule of CMI-Bench's regression tasks (docs/protocols/mir.md, "regression"; the toolkit's
    ``cal_r2``): z-score the parsed predictions with their mean and population standard deviation,
    an unparsed one (``None``) becomes the mean (z = 0), then R^2 = 1 - SS_res / SS_tot against the
    references (:func:`r2_items`).

    Predictions without spread (:func:`has_spread` is False: none parsed, or all equal) have no
    z-score (0 / 0). They carry no information about which item is rated higher than another, so
    they explain none of the variance of the references:

    - ``no_spread="mean-predictor"`` (:data:`MEAN_PREDICTOR`, the corrected default): every item is
      scored as the mean predictor ``p_i = mean(y)``; R^2 = 1 - SS_tot / SS_tot = 0 exactly and each
      item's contribution equals the trivial baseline's, so the model never beats that baseline.
      With references z-scored over exactly these items (mean 0) this is the toolkit's value too.
    - ``no_spread="zero"`` (:data:`ZERO`, the toolkit at commit 35235cb, ``cal_r2``: "if std == 0"
      every normalised prediction is 0): R^2 = -mean(y)^2 / var(y) <= 0, which is 0 when the
      references have mean 0 and below it otherwise.

    References -1, 0, 2 (mean 1/3, population variance 14/9) and a constant "5": the mean
    predictor scores 0, the toolkit's zeros -(1/3)^2 / (14/9) = -1/14.

    >>> float(r2_standardised_items([-1.0, 0.0, 2.0], [5, 5, None]).mean())
    0.0
    >>> round(float(r2_standardised_items([-1.0, 0.0, 2.0], [5, 5, 5], no_spread="zero").mean()), 4)
    -0.0714

    Raises
    ------
    ValueError
        ``no_spread`` not one of :data:`NO_SPREAD_RULES`; references that :func:`r2_items` refuses.
    """
    if no_spread not in NO_SPREAD_RULES:
        raise ValueError(f"no_spread={no_spread!r}: use one of {', '.join(NO_SPREAD_RULES)}")
    y = np.asarray(references, dtype=float)
    if has_spread(predictions):
        return r2_items(y, standardise_predictions(predictions))
    if len(predictions) != y.size:
        raise ValueError(f"{y.size} references but {len(predictions)} predictions: give one prediction per reference")
    constant = float(y.mean()) if no_spread == MEAN_PREDICTOR and y.size else 0.0
    return r2_items(y, np.full(y.shape, constant))
