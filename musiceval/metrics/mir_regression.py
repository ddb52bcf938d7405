"""Emotion regression: R^2 of standardised ratings against standardised annotations.

Conventions
-----------
CMI-Bench references are z-scores; models answer on a 1-9 scale. Predictions are therefore
standardised with the mean and population standard deviation of the parsed predictions; an
item without a rating is imputed with that mean (a z-score of 0). Both steps follow the toolkit;
the scorer lists imputed items as failures.

Metrics
-------
- :func:`standardise_predictions`
- :func:`r2_items`: per-item contributions ``1 - (p_i - y_i)^2 / var(y)`` whose mean is
  R^2 = 1 - SS_res / SS_tot (torchmetrics ``R2Score``, sklearn ``r2_score``); the mean predictor
  scores exactly 0.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np


def standardise_predictions(predictions: Sequence[float | None]) -> np.ndarray:
    """z-scores of the parsed predictions; ``None`` becomes 0 (the mean).

    Raises
    ------
    ValueError
        When fewer than two distinct predictions were parsed (standard deviation 0).
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
