"""A/A stability of a verdict: the same answers, scored and gated again under other seeds (Random
partners, permutations, bootstrap resamples), should give the same outcomes (docs/regression-gates.md,
"Stability under reseeds").

:func:`stability` takes the ``results.json`` of R sessions that differ only in ``--musiceval-seed``
and returns, per gate, how often its outcome differs from its most common one, and the same for the
session's word. A gate whose interval lies far from its bar (the bar more than one interval width
from the estimate, in the session of the first seed) should never flip: one that flips in more than
:data:`DEFECT_RATE` of the reseeds is listed as a defect of the test behind it (too few resamples,
a Monte Carlo p-value, a seed-dependent control), not of the model.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

#: a gate far from its bar that flips in more than this share of reseeds is a defect
DEFECT_RATE = 0.01
#: outcomes that decide something (a FINDING, N/A or SKIPPED gate cannot flip a verdict)
DECIDING = ("PASS", "FAIL", "INCONCLUSIVE")


@dataclass(frozen=True)
class GateStability:
    name: str
    #: outcome -> reseeds that gave it
    outcomes: Mapping[str, int]
    #: share of reseeds whose outcome is not the most common one
    flip_rate: float
    #: the bar lies more than one interval width from the estimate in the first seed's session
    far: bool

    @property
    def modal(self) -> str:
        return max(self.outcomes, key=lambda o: (self.outcomes[o], o))

    @property
    def defect(self) -> bool:
        return self.far and self.flip_rate > DEFECT_RATE

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "outcomes": dict(self.outcomes), "modal": self.modal, "flip_rate": self.flip_rate,
                "far_from_bar": self.far, "defect": self.defect}


@dataclass(frozen=True)
class Stability:
    seeds: tuple[int, ...]
    #: verdict word -> reseeds that gave it
    words: Mapping[str, int]
    gates: tuple[GateStability, ...]

    @property
    def word_flips(self) -> int:
        return len(self.seeds) - max(self.words.values(), default=0)

    @property
    def flipping(self) -> list[GateStability]:
        return [g for g in self.gates if g.flip_rate > 0]

    @property
    def defects(self) -> list[GateStability]:
        return [g for g in self.gates if g.defect]

    @property
    def stable(self) -> bool:
        """The word never flips and no gate far from its bar flips."""
        return self.word_flips == 0 and not self.defects

    def line(self) -> str:
        word = max(self.words, key=lambda w: (self.words[w], w)) if self.words else "no word"
        text = (f"musiceval stability: {word} in {self.words.get(word, 0)} of {len(self.seeds)} reseeds; "
                f"{len(self.flipping)} of {len(self.gates)} deciding gates flip")
        if self.defects:
            text += f", {len(self.defects)} of them far from their bar (a defect of the test, not the model)"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"seeds": list(self.seeds), "words": dict(self.words), "word_flips": self.word_flips,
                "stable": self.stable, "defect_rate": DEFECT_RATE, "gates": [g.as_dict() for g in self.gates]}


def _far(gate: Mapping[str, Any]) -> bool:
    """Whether the bar lies more than one interval width from the estimate."""
    try:
        estimate, bar = float(gate["estimate"]), float(gate["bar"] if gate.get("bar") is not None else gate["threshold"])
        low, high = (float(v) for v in gate["ci"])
    except (KeyError, TypeError, ValueError):
        return False
    width = high - low
    return all(math.isfinite(v) for v in (estimate, bar, width)) and abs(estimate - bar) > width


def stability(runs: Sequence[tuple[int, Mapping[str, Any]]]) -> Stability:
    """The stability of ``runs``: ``(seed, results.json)`` of sessions that differ only in their seed,
    the first one's gates deciding which are far from their bar. A gate is known by its name; one
    that decides in some sessions only counts the others as a flip to its outcome there."""
    seeds = tuple(seed for seed, _ in runs)
    words = Counter(str(run.get("verdict")) for _, run in runs)
    outcomes: dict[str, Counter] = {}
    far: dict[str, bool] = {}
    for k, (_, run) in enumerate(runs):
        for gate in run.get("gates") or []:
            name, outcome = str(gate.get("name")), str(gate.get("outcome"))
            if outcome not in DECIDING and name not in outcomes:
                continue
            outcomes.setdefault(name, Counter())[outcome] += 1
            if k == 0:
                far[name] = _far(gate)
    gates = []
    for name, counts in sorted(outcomes.items()):
        missing = len(runs) - sum(counts.values())
        if missing:
            counts["absent"] += missing
        modal = max(counts.values())
        gates.append(GateStability(name, dict(counts), (len(runs) - modal) / len(runs), far.get(name, False)))
    return Stability(seeds, dict(words), tuple(gates))
