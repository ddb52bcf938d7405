"""How often an answer-blind file passes a protocol's beats-chance and listens gates.

SPEC ("What the verdict means"): chance is the strongest strategy that ignores the question or the
audio, so a file that does must not pass. Each simulation draws a benchmark (keys or labels, with a
uniform or a skewed distribution), writes an answer-blind file for it, builds the protocol through
its real code path (:meth:`~musiceval.protocols.base.Protocol.from_answers` on an in-memory
:class:`~musiceval.data.answers.AnswerSet`) and runs every chance gate and "the model listens"
(:mod:`musiceval.suite.checks`). A file *passes* when every one of those gates PASSes (each is a
required gate of a release); the nominal false-PASS rate of one gate is ``alpha / 2`` (2.5 %).

Answer-blind strategies (:data:`STRATEGIES`):

- ``constant``: the same answer for every item (the first option / the most frequent label);
- ``best constant``: the answer that is right most often on this key (what an adversary who
  knew the key's distribution would send);
- ``prior-matched``: answers drawn at random from the key's own distribution;
- ``shifted``: a model that listens (right 70 % of the time) whose answers were written one item off.

Used by ``benchmarks/bench_calibration.py --blind`` (2,000 simulations per row).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from musiceval.data.answers import AnswerSet
from musiceval.gates import Gate, GateConfig
from musiceval.protocols.base import PROTOCOLS, ProtocolSettings
from musiceval.records import Item, Outcome, Response
from musiceval.suite import checks

STRATEGIES = ("constant", "best constant", "prior-matched", "shifted")
LETTERS = "ABCD"


@dataclass(frozen=True)
class Benchmark:
    """A simulated benchmark: ``protocol``, ``n`` items over ``tracks`` clusters, and the
    distribution of its keys (choice: letters A-D; factual and MIR: class labels)."""

    protocol: str
    n: int
    weights: tuple[float, ...]
    tracks: int = 0

    @property
    def label(self) -> str:
        top = max(self.weights) / sum(self.weights)
        return f"{self.protocol}, {len(self.weights)} classes, top {top:.0%}, n={self.n}"


#: the benchmarks of the calibration table: MuChoMusic-like, NSynth-like and GTZAN-like
BENCHMARKS = (
    Benchmark("choice", 1187, (0.25, 0.25, 0.25, 0.25), tracks=644),
    Benchmark("choice", 1187, (0.55, 0.15, 0.15, 0.15), tracks=644),
    Benchmark("factual", 600, (0.3, 0.15, 0.1, 0.1, 0.08, 0.07, 0.05, 0.05, 0.04, 0.03, 0.03)),
    Benchmark("mir", 290, (0.1,) * 10),
    Benchmark("mir", 290, (0.4,) + (0.6 / 9,) * 9),
)
FACTUAL_LABELS = ("bass", "brass", "flute", "guitar", "keyboard", "mallet", "organ", "reed", "string", "synth lead", "vocal")
GENRES = ("blues", "classical", "country", "disco", "hiphop", "jazz", "metal", "pop", "reggae", "rock")


def _answers(bench: Benchmark, strategy: str, rng: np.random.Generator) -> tuple[list[int], list[int]]:
    """(keys, answers) as class indices for one simulated file."""
    p = np.asarray(bench.weights) / sum(bench.weights)
    keys = rng.choice(len(p), size=bench.n, p=p)
    if strategy == "constant":
        answers = np.zeros(bench.n, dtype=int)
    elif strategy == "best constant":
        answers = np.full(bench.n, Counter(keys.tolist()).most_common(1)[0][0])
    elif strategy == "prior-matched":
        answers = rng.choice(len(p), size=bench.n, p=p)
    elif strategy == "shifted":
        listening = np.where(rng.random(bench.n) < 0.7, keys, rng.integers(0, len(p), bench.n))
        answers = np.roll(listening, 1)
    else:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
    return keys.tolist(), answers.tolist()


def answer_set(bench: Benchmark, keys: list[int], answers: list[int]) -> AnswerSet:
    """The simulated file as the protocol reads it."""
    items, responses = [], []
    for i, (k, a) in enumerate(zip(keys, answers)):
        iid, group = f"q{i:05d}", f"t{i * bench.tracks // bench.n:05d}" if bench.tracks else f"q{i:05d}"
        if bench.protocol == "choice":
            items.append(Item(iid, f"question {i}?", choices=("w", "x", "y", "z"), answer=LETTERS[k], group=group))
            responses.append(Response(iid, "correct", "sim", "", f"The correct answer is: ({LETTERS[a]})"))
        elif bench.protocol == "factual":
            items.append(Item(iid, "What's the music instrument?", labels=(FACTUAL_LABELS[k],), group=group))
            responses.append(Response(iid, "correct", "sim", "What's the music instrument?", FACTUAL_LABELS[a]))
        else:
            items.append(Item(iid, "Identify the genre.", reference=GENRES[k], group=group,
                              meta={"index": i, "audioid": f"{iid}.wav"}))
            responses.append(Response(iid, "correct", "sim", "Identify the genre.", GENRES[a]))
    extra = {"task": "GTZAN"} if bench.protocol == "mir" else {}
    return AnswerSet(items, responses, [], model="sim", source="simulated", extra=extra)


def outcomes(bench: Benchmark, keys: list[int], answers: list[int], *, seed: int = 0, n_permutations: int = 200,
             gate: Gate | None = None) -> dict[str, Outcome]:
    """Outcome of every chance gate of the headline metric and of "the model listens"."""
    options = {"vocab": "nsynth", "n_permutations": n_permutations} if bench.protocol == "factual" else {}
    run = PROTOCOLS.get(bench.protocol).from_answers(answer_set(bench, keys, answers),  # type: ignore[attr-defined]
                                                     ProtocolSettings(seed=seed, options=options))
    gate = gate or Gate(GateConfig(seed=seed))
    metric = run.headline
    out = {c.name: checks.beats_chance(gate, run, metric, c).outcome for c in run.chances(metric)}
    listens = checks.listens(gate, run, metric)
    if listens is not None:
        out["listens"] = listens.outcome
    return out


def false_pass_rates(bench: Benchmark, strategy: str, *, n_sims: int, seed: int = 0) -> dict[str, float]:
    """Per gate and for the file as a whole (``"all gates"``): the share of simulations that PASS."""
    rng = np.random.default_rng(seed)
    passes: Counter[str] = Counter()
    names: set[str] = set()
    for k in range(n_sims):
        keys, answers = _answers(bench, strategy, rng)
        result = outcomes(bench, keys, answers, seed=seed + k)
        names.update(result)
        passes.update(name for name, o in result.items() if o is Outcome.PASS)
        passes["all gates"] += all(o is Outcome.PASS for o in result.values())
    return {name: passes[name] / n_sims for name in [*sorted(names), "all gates"]}
