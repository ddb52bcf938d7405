"""Null simulations that measure how often each gate type PASSes when it should not.

Every simulated data set has its true mean difference exactly at the gate's bar (a true null at
the margin), so a PASS is a false PASS; a calibrated gate PASSes at most ``alpha / 2`` of the
time (the lower bound of a two-sided ``1 - alpha`` interval is a one-sided ``1 - alpha/2``
bound). Used by ``tests/test_calibration.py`` (a few hundred simulations per shape, under a
minute) and ``benchmarks/bench_calibration.py`` (2,000 per shape).

Shapes (:data:`SHAPES`): ``lognormal`` (right- or left-skewed), ``zero_inflated`` (BLEU/CIDEr
per item: most items 0, a long right tail), ``binary`` (0/1 outcomes), ``clustered`` (skewed
cluster effects, intra-cluster correlation ``icc``, clusters of 1-8 items), ``tiny`` (n < 20
BLEU-like scores in [0, 1]: half zeros, the rest Beta(1, 3)). ``sign=-1`` mirrors the skew: a
left-skewed difference (rare large drops) is the hard case for a lower bound.

Few clusters (``clusters=C``, :data:`FEW_CLUSTER_GRID`): exactly ``C`` clusters of unequal sizes
drawn from ``sizes`` (5-17 items, as the 10 tracks of CMI-Bench Guzheng_Tech), for the paired
gates only (:data:`PAIRED_KINDS`; the cluster sign-flip test decides them below
:data:`musiceval.stats.intervals.SIGN_FLIP_CLUSTERS` clusters). ``clustered`` draws skewed
continuous cluster effects (``scale`` is the sd of the differences); ``binary`` with clusters draws
each cluster's difference of accuracies ``P(new) - P(old)`` around the null with a skewed cluster
effect: ``effect="beta"`` (Beta(0.5, 2), skewness 1.3) or ``"two-point"`` (+5 points in 85 % of the
clusters, -28 points in the others: skewness -2). :data:`FEW_CLUSTER_LIMITS` are harsher shapes
measured by ``benchmarks/bench_calibration.py --few-clusters`` (docs/regression-gates.md, "Few clusters").
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from musiceval.records import ItemScores, Outcome

GATE_KINDS = ("paired_greater", "greater_than_chance", "binomial_greater", "mcnemar_greater", "non_inferior", "superior")
#: the gates on paired differences (:func:`musiceval.stats.intervals.paired_interval`)
PAIRED_KINDS = ("paired_greater", "mcnemar_greater", "non_inferior", "superior")
SHAPES = ("lognormal", "zero_inflated", "binary", "clustered", "tiny")


@dataclass(frozen=True)
class Shape:
    """One simulated data shape (see the module docstring)."""

    kind: str
    n: int = 200
    sigma: float = 1.0  # log-normal sigma: skewness grows quickly with it
    zero_rate: float = 0.6  # zero_inflated: share of items scoring exactly 0
    sign: int = 1  # +1 right-skewed differences, -1 left-skewed
    icc: float = 0.3  # clustered: share of variance that is shared within a cluster
    p: float = 0.7  # binary: accuracy of the baseline system
    discordant: float = 0.3  # binary paired: share of items where the two systems differ
    clusters: int = 0  # few-cluster shapes: exactly this many clusters (0: clustered uses n // 4)
    sizes: tuple[int, int] = (1, 8)  # smallest and largest cluster size
    scale: float = 0.2  # sd of the simulated continuous differences
    effect: str = "beta"  # binary with clusters: "beta" or "two-point" cluster effects


#: the shapes of the calibration grid (tests/test_calibration.py, benchmarks/bench_calibration.py)
GRID: dict[str, Shape] = {
    "lognormal right": Shape("lognormal", sigma=0.75),
    "lognormal left": Shape("lognormal", sigma=0.75, sign=-1),
    "zero-inflated right": Shape("zero_inflated"),
    "zero-inflated left": Shape("zero_inflated", sign=-1),
    "binary": Shape("binary"),
    "clustered left": Shape("clustered", sigma=0.75, sign=-1),
    "clustered right": Shape("clustered", sigma=0.75),
    "tiny bounded (n=12)": Shape("tiny", n=12),
    "binary tiny (n=15)": Shape("binary", n=15),
}
#: few-cluster shapes (paired gates only): unequal clusters of 5-17 items, skewed cluster effects
FEW_CLUSTER_GRID: dict[str, Shape] = {
    **{f"binary, {c} clusters": Shape("binary", clusters=c, sizes=(5, 17)) for c in (5, 8, 10, 15)},
    **{f"binary left, {c} clusters": Shape("binary", clusters=c, sizes=(5, 17), sign=-1) for c in (10, 15)},
    "binary two-point, 10 clusters": Shape("binary", clusters=10, sizes=(5, 17), effect="two-point", discordant=0.45),
    **{f"clustered left (sigma 0.25), {c} clusters": Shape("clustered", sigma=0.25, sign=-1, clusters=c, sizes=(5, 17))
       for c in (8, 10, 15)},
    "clustered right (sigma 0.75), 10 clusters": Shape("clustered", sigma=0.75, clusters=10, sizes=(5, 17)),
}
#: harsher few-cluster shapes, outside the guarantee (docs/regression-gates.md, "Few clusters")
FEW_CLUSTER_LIMITS: dict[str, Shape] = {
    "clustered left (sigma 0.5)": Shape("clustered", sigma=0.5, sign=-1, sizes=(5, 17)),
    "clustered left (sigma 0.75)": Shape("clustered", sigma=0.75, sign=-1, sizes=(5, 17)),
}
#: gates that only take 0/1 outcomes
BINARY_ONLY = ("binomial_greater", "mcnemar_greater")
#: margins of the simulated gates: non_inferior / superior need a margin above their MDE
MARGINS = {"non_inferior": 0.1, "superior": 0.1}


def grid_cases() -> list[tuple[str, str, Shape]]:
    """(gate kind, shape label, shape) of the calibration grid (:data:`GRID`)."""
    return [(kind, label, shape) for kind in GATE_KINDS for label, shape in GRID.items()
            if not (kind in BINARY_ONLY and shape.kind != "binary")]


def few_cluster_cases() -> list[tuple[str, str, Shape]]:
    """(gate kind, shape label, shape) of :data:`FEW_CLUSTER_GRID`: paired gates only."""
    return [(kind, label, shape) for kind in PAIRED_KINDS for label, shape in FEW_CLUSTER_GRID.items()
            if not (kind in BINARY_ONLY and shape.kind != "binary")]


def _skewed(rng: np.random.Generator, shape: Shape, size: int) -> np.ndarray:
    """Standardised (mean 0, sd 1) skewed draws of the shape's family."""
    if shape.kind == "zero_inflated":
        mu = -1.0
        nonzero = rng.random(size) >= shape.zero_rate
        y = np.where(nonzero, rng.lognormal(mu, shape.sigma, size), 0.0)
        m1 = (1 - shape.zero_rate) * math.exp(mu + shape.sigma**2 / 2)
        m2 = (1 - shape.zero_rate) * math.exp(2 * mu + 2 * shape.sigma**2)
    else:
        y = rng.lognormal(0.0, shape.sigma, size)
        m1 = math.exp(shape.sigma**2 / 2)
        m2 = math.exp(2 * shape.sigma**2)
    return shape.sign * (y - m1) / math.sqrt(m2 - m1**2)


def _differences(rng: np.random.Generator, shape: Shape, mean: float) -> tuple[np.ndarray, list[str] | None]:
    if shape.kind == "clustered":
        sizes = rng.integers(shape.sizes[0], shape.sizes[1] + 1, size=shape.clusters or max(2, shape.n // 4))
        groups = np.repeat(np.arange(sizes.size), sizes)
        u = _skewed(rng, shape, sizes.size)[groups]
        e = _skewed(rng, shape, groups.size)
        d = math.sqrt(shape.icc) * u + math.sqrt(1 - shape.icc) * e
        return mean + shape.scale * d, [f"t{g}" for g in groups]
    return mean + shape.scale * _skewed(rng, shape, shape.n), None


def _binary_pair(rng: np.random.Generator, shape: Shape, diff: float) -> tuple[np.ndarray, np.ndarray]:
    """0/1 outcomes of (new, old) with ``P(new) - P(old) = diff`` exactly in the population."""
    p10 = (shape.discordant + diff) / 2
    p01 = (shape.discordant - diff) / 2
    p11 = shape.p - p01
    probs = np.array([p11, p10, p01, 1 - p11 - p10 - p01])
    if np.any(probs < 0):
        raise ValueError(f"binary shape {shape} cannot hold a difference of {diff}")
    cell = rng.choice(4, size=shape.n, p=probs)
    new = np.isin(cell, (0, 1)).astype(float)
    old = np.isin(cell, (0, 2)).astype(float)
    return new, old


def _binary_clustered_pair(
    rng: np.random.Generator, shape: Shape, diff: float
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """0/1 outcomes of (new, old) in ``shape.clusters`` clusters whose own difference of
    accuracies is ``diff`` plus a skewed cluster effect of mean 0 (``sign`` mirrors it):
    ``0.25 (B - 0.2)``, ``B ~ Beta(0.5, 2)``, or ``+0.05`` in 85 % of the clusters and ``-0.05 * 85 / 15``
    in the others (``effect="two-point"``). The population difference is ``diff`` exactly; most
    clusters sit a little on one side of it and a few far on the other."""
    sizes = rng.integers(shape.sizes[0], shape.sizes[1] + 1, size=shape.clusters)
    if shape.effect == "two-point":
        noise = np.where(rng.random(sizes.size) < 0.85, 0.05, -0.05 * 0.85 / 0.15)
    elif shape.effect == "beta":
        noise = 0.25 * (rng.beta(0.5, 2.0, size=sizes.size) - 0.2)
    else:
        raise ValueError(f"Shape.effect must be 'beta' or 'two-point', got {shape.effect!r}")
    cluster = np.repeat(np.arange(sizes.size), sizes)
    d = (diff + shape.sign * noise)[cluster]
    p10, p01 = (shape.discordant + d) / 2, (shape.discordant - d) / 2  # per item, from its cluster
    p11 = shape.p - p01
    if np.any(p10 < 0) or np.any(p01 < 0) or np.any(p11 < 0) or np.any(p11 + p10 + p01 > 1):
        raise ValueError(f"binary shape {shape} cannot hold a difference of {diff} with its cluster effects")
    u = rng.random(cluster.size)  # cells in order: both right, only new right, only old right, neither
    new = (u < p11 + p10).astype(float)
    old = ((u < p11) | ((u >= p11 + p10) & (u < p11 + p10 + p01))).astype(float)
    return new, old, [f"t{g}" for g in cluster]


def _bleu_like(rng: np.random.Generator, size: int, zero_rate: float) -> np.ndarray:
    """Per-item scores in [0, 1]: 0 with probability ``zero_rate``, else Beta(1, 3) (mean 1/4)."""
    return np.where(rng.random(size) < zero_rate, 0.0, rng.beta(1.0, 3.0, size))


def _bounded_pair(rng: np.random.Generator, shape: Shape, diff: float) -> tuple[np.ndarray, np.ndarray]:
    """BLEU-like (new, old) scores in [0, 1] with ``E[new] - E[old] = diff`` exactly (``tiny``)."""
    old = _bleu_like(rng, shape.n, 0.5)  # mean 0.125
    return _bleu_like(rng, shape.n, 0.5 - 4 * diff), old


def _ids(n: int) -> list[str]:
    return [f"i{k}" for k in range(n)]


def simulate_once(gate: object, kind: str, shape: Shape, rng: np.random.Generator, *, margin: float = 0.02) -> Outcome:
    """One null data set for gate ``kind`` (a method name of :class:`musiceval.gates.Gate`),
    decided by ``gate``; returns the outcome (PASS = a false PASS)."""
    binary = shape.kind == "binary" or kind in ("binomial_greater", "mcnemar_greater")
    if binary:
        shape = replace(shape, kind="binary")
    name = "sim"
    if kind in ("binomial_greater", "greater_than_chance") and binary:
        x = (rng.random(shape.n) < shape.p).astype(float)
        s = ItemScores("acc", ids=_ids(shape.n), values=x)
        if kind == "binomial_greater":
            return gate.binomial_greater(s, shape.p, name=name).outcome  # type: ignore[attr-defined]
        return gate.greater_than_chance(s, shape.p, name=name).outcome  # type: ignore[attr-defined]
    if kind == "greater_than_chance" and shape.kind == "tiny":
        s = ItemScores("bleu", ids=_ids(shape.n), values=_bleu_like(rng, shape.n, 0.5))
        return gate.greater_than_chance(s, 0.125, name=name).outcome  # type: ignore[attr-defined]
    if kind == "greater_than_chance":
        d, groups = _differences(rng, shape, 0.5)
        s = ItemScores("m", ids=_ids(d.size), values=d, groups=groups)
        return gate.greater_than_chance(s, 0.5, name=name).outcome  # type: ignore[attr-defined]
    # paired gates: the true difference sits on the bar
    truth = {"paired_greater": margin, "mcnemar_greater": 0.0, "non_inferior": -margin, "superior": margin}[kind]
    if binary and shape.clusters:
        new, old, groups = _binary_clustered_pair(rng, shape, truth)
    elif binary:
        new, old = _binary_pair(rng, shape, truth)
        groups = None
    elif shape.kind == "tiny":
        new, old = _bounded_pair(rng, shape, truth)
        groups = None
    else:
        d, groups = _differences(rng, shape, truth)
        old = np.full(d.size, 0.5)
        new = old + d
    ids = _ids(new.size)
    a = ItemScores("m", ids=ids, values=new, groups=groups, condition="new")
    b = ItemScores("m", ids=ids, values=old, groups=groups, condition="old")
    if kind == "paired_greater":
        return gate.paired_greater(a, b, name=name, margin=margin).outcome  # type: ignore[attr-defined]
    if kind == "mcnemar_greater":
        return gate.mcnemar_greater(a, b, name=name).outcome  # type: ignore[attr-defined]
    method: Callable[..., object] = getattr(gate, kind)
    return method(a, b, name=name, margin=margin).outcome  # type: ignore[attr-defined, no-any-return]


def false_pass_rate(gate: object, kind: str, shape: Shape, *, n_sims: int, seed: int = 0, margin: float = 0.02) -> float:
    """Share of ``n_sims`` null data sets on which gate ``kind`` PASSes."""
    rng = np.random.default_rng(seed)
    passes = sum(simulate_once(gate, kind, shape, rng, margin=margin) is Outcome.PASS for _ in range(n_sims))
    return passes / n_sims


def tolerance(nominal: float, n_sims: int, k: float = 2.0) -> float:
    """Upper acceptance limit for a simulated rate: ``nominal + k * sqrt(nominal (1 - nominal) / n_sims)``."""
    return nominal + k * math.sqrt(nominal * (1 - nominal) / n_sims)
