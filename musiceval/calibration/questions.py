"""How often "the model answers the question" PASSes when the answers do not answer the question.

docs/gate-your-model.md ("What the verdict means"): answering the question is tested wherever a benchmark asks several
questions about one clip, by the answers in place against the same answers moved to other
questions about the same audio (:func:`musiceval.protocols.checks.answers_the_question`). Each
simulation draws a benchmark with several questions per clip (multiple choice with keys A-D, or
free-form questions about nine attributes of the clip, scored by ROUGE-L), writes a file of answers
by one strategy, builds the protocol through its real code path
(:meth:`~musiceval.protocols.base.Protocol.from_answers` on an in-memory
:class:`~musiceval.data.answers.AnswerSet`) and runs the gate. The nominal false-PASS rate of one
gate on a true null is ``alpha / 2`` (2.5 %); the limit is nominal + 2 Monte-Carlo SE.

Strategies (:data:`STRATEGIES`):

- ``clip-only`` (the true null): a model that listens but ignores the question: multiple choice,
  each clip has a letter the model gives to its questions 70 % of the time (else a uniform letter);
  free-form, each answer states one attribute of the clip drawn at random (its true value 70 % of
  the time), whatever is asked. Answers in place and moved within the clip are exchangeable;
- ``shifted within clip``: a model that listens and answers (right 70 % of the time) whose answers
  were written one question along within each clip;
- ``shifted by one line``: the same answers written one line of the file along (they land on other
  questions of the same clip, except at a clip's first line): the shifted MusicQA file of the
  README's report;
- ``listens and answers``: the same answers in place: the gate's power, which must be high.

Used by ``benchmarks/bench_calibration.py --questions`` (2,000 simulations per row).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from musiceval.data.answers import AnswerSet
from musiceval.gates import Gate, GateConfig
from musiceval.protocols.base import ProtocolSettings
from musiceval.records import Item, Outcome, Response
from musiceval.protocols import checks

STRATEGIES = ("clip-only", "shifted within clip", "shifted by one line", "listens and answers")
#: the strategies whose files do not answer the question: the gate must PASS at most nominal + 2 SE
NULLS = ("clip-only", "shifted within clip", "shifted by one line")
LETTERS = "ABCD"
#: how often the simulated model states the truth (the key, the attribute's value, the clip's letter)
RIGHT = 0.7
#: the free-form benchmark's attributes of a clip, one question each, and their values
ATTRIBUTES = {
    "genre": ("rock", "jazz", "folk", "techno", "classical", "reggae"),
    "mood": ("calm", "dark", "happy", "tense", "sad", "dreamy"),
    "tempo": ("slow", "moderate", "fast", "very fast", "rubato", "steady"),
    "lead instrument": ("piano", "guitar", "violin", "synthesizer", "flute", "trumpet"),
    "key": ("C major", "A minor", "G major", "E minor", "D major", "F minor"),
    "era": ("sixties", "seventies", "eighties", "nineties", "baroque", "romantic"),
    "vocals": ("male", "female", "choir", "none", "rap", "falsetto"),
    "energy": ("low", "medium", "high", "building", "fading", "uneven"),
    "texture": ("sparse", "dense", "layered", "lo-fi", "polished", "noisy"),
}


@dataclass(frozen=True)
class QuestionBenchmark:
    """``n`` questions over ``clips`` clips (contiguous, as near equal as can be): ``protocol``
    "choice" (four options, keys drawn from ``weights`` over A-D) or "freeform" (the k-th question of
    a clip asks its k-th attribute of :data:`ATTRIBUTES`; scored by ROUGE-L)."""

    n: int
    clips: int
    weights: tuple[float, ...] = (0.25, 0.25, 0.25, 0.25)
    protocol: str = "choice"

    @property
    def label(self) -> str:
        shape = f"{self.n} questions on {self.clips} clips ({self.n / self.clips:.1f} per clip)"
        if self.protocol == "freeform":
            return f"free-form (ROUGE-L), {shape}"
        return f"choice, {shape}, keys top {max(self.weights) / sum(self.weights):.0%}"

    def clip_of(self) -> np.ndarray:
        return np.arange(self.n) * self.clips // self.n

    def position(self) -> np.ndarray:
        """Each question's place among its clip's questions (0, 1, ...)."""
        clip = self.clip_of()
        return np.arange(self.n) - np.searchsorted(clip, clip)


#: MuChoMusic's shape (1,187 questions on 644 tracks) and MusicQA's (9 per track), uniform and skewed
#: keys; MusicQA's shape free-form
BENCHMARKS = (
    QuestionBenchmark(1187, 644),
    QuestionBenchmark(1187, 644, (0.55, 0.15, 0.15, 0.15)),
    QuestionBenchmark(405, 45),
    QuestionBenchmark(405, 45, (0.55, 0.15, 0.15, 0.15)),
    QuestionBenchmark(405, 45, protocol="freeform"),
)


def _within_clip_shift(values: np.ndarray, clip: np.ndarray) -> np.ndarray:
    """Each item gets the previous item's value of its own clip (the clip's first gets its last)."""
    out = values.copy()
    for c in np.unique(clip):
        at = np.flatnonzero(clip == c)
        out[at] = np.roll(values[at], 1)
    return out


def _choice_file(bench: QuestionBenchmark, rng: np.random.Generator) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(keys, in-place answers of a model that answers, answers of one that ignores the question)."""
    p = np.asarray(bench.weights) / sum(bench.weights)
    keys = rng.choice(len(p), size=bench.n, p=p)
    noise = rng.integers(0, len(p), bench.n)
    favourite = rng.choice(len(p), size=bench.clips, p=p)[bench.clip_of()]
    listening = np.where(rng.random(bench.n) < RIGHT, keys, noise)
    clip_only = np.where(rng.random(bench.n) < RIGHT, favourite, noise)

    def text(options: np.ndarray) -> np.ndarray:
        return np.array([f"The correct answer is: ({LETTERS[a]})" for a in options], dtype=object)

    return [LETTERS[k] for k in keys], text(listening), text(clip_only)


def _freeform_file(bench: QuestionBenchmark, rng: np.random.Generator) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(references, in-place answers of a model that answers, answers of one that ignores the question)."""
    names = list(ATTRIBUTES)
    values = rng.integers(0, 6, size=(bench.clips, len(names)))
    clip, asked = bench.clip_of(), bench.position() % len(names)
    told = rng.integers(0, len(names), bench.n)  # the attribute a model that ignores the question states

    def say(attribute: np.ndarray) -> np.ndarray:
        truth = values[clip, attribute]
        value = np.where(rng.random(bench.n) < RIGHT, truth, rng.integers(0, 6, bench.n))
        return np.array([f"the {names[a]} is {ATTRIBUTES[names[a]][v]}" for a, v in zip(attribute, value)], dtype=object)

    references = [f"the {names[a]} is {ATTRIBUTES[names[a]][values[c, a]]}" for c, a in zip(clip, asked)]
    return references, say(asked), say(told)


def answers(bench: QuestionBenchmark, strategy: str, rng: np.random.Generator) -> tuple[list[str], list[str]]:
    """(keys or references, answer texts) of one simulated file."""
    keys, listening, clip_only = (_freeform_file if bench.protocol == "freeform" else _choice_file)(bench, rng)
    moved = {"clip-only": lambda: clip_only,
             "shifted within clip": lambda: _within_clip_shift(listening, bench.clip_of()),
             "shifted by one line": lambda: np.roll(listening, 1),
             "listens and answers": lambda: listening}
    if strategy not in moved:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
    return keys, [str(t) for t in moved[strategy]()]


def answer_set(bench: QuestionBenchmark, keys: list[str], texts: list[str]) -> AnswerSet:
    """The simulated file as the protocol reads it: distinct questions per clip, the clip as the group."""
    items, responses = [], []
    names = list(ATTRIBUTES)
    for i, (key, text, c, k) in enumerate(zip(keys, texts, bench.clip_of(), bench.position())):
        iid, group = f"q{i:05d}", f"t{c:05d}"
        if bench.protocol == "freeform":
            question = f"What is the {names[k % len(names)]} of the audio?" + (f" ({k // len(names)})" if k >= len(names) else "")
            items.append(Item(iid, question, reference=key, group=group))
            responses.append(Response(iid, "correct", "sim", question, text))
        else:
            items.append(Item(iid, f"question {i}?", choices=("w", "x", "y", "z"), answer=key, group=group))
            responses.append(Response(iid, "correct", "sim", "", text))
    return AnswerSet(items, responses, [], model="sim", source="simulated")


def outcome(bench: QuestionBenchmark, keys: list[str], texts: list[str], *, seed: int = 0,
            gate: Gate | None = None) -> Outcome | None:
    """The outcome of "the model answers the question" on one file (None: not applicable)."""
    from musiceval.protocols.base import PROTOCOLS

    options = {"metrics": ["rouge_l"]} if bench.protocol == "freeform" else {}
    run = PROTOCOLS.get(bench.protocol).from_answers(answer_set(bench, keys, texts),  # type: ignore[attr-defined]
                                                     ProtocolSettings(seed=seed, options=options))
    result = checks.answers_the_question(gate or Gate(GateConfig(seed=seed)), run)
    return None if result is None else result.outcome


def outcome_rates(bench: QuestionBenchmark, strategy: str, *, n_sims: int, seed: int = 0) -> dict[str, float]:
    """The share of simulations per outcome (``PASS``, ``FAIL``, ``INCONCLUSIVE``, ``N/A``)."""
    rng = np.random.default_rng(seed)
    counts: Counter[str] = Counter()
    for k in range(n_sims):
        keys, texts = answers(bench, strategy, rng)
        result = outcome(bench, keys, texts, seed=seed + k)
        counts["N/A" if result is None else result.value] += 1
    return {name: counts[name] / n_sims for name in ("PASS", "FAIL", "INCONCLUSIVE", "N/A")}
