"""How often an answer-blind file passes a protocol's beats-chance and listens gates.

docs/gate-your-model.md ("What the verdict means"): chance is the strongest strategy that ignores the question or the
audio, so a file that does must not pass. Each simulation draws a benchmark (keys or labels, with a
uniform or a skewed distribution), writes an answer-blind file for it, builds the protocol through
its real code path (:meth:`~musiceval.protocols.base.Protocol.from_answers` on an in-memory
:class:`~musiceval.data.answers.AnswerSet`) and runs the chance gate of the headline metric ("beats
the strongest answer-blind strategy": every chance level at once, :func:`musiceval.protocols.checks.beats_chance`)
and "the model listens" (:mod:`musiceval.protocols.checks`). A file *passes* when both PASS (each is a
required gate of a release); the nominal false-PASS rate of one gate is ``alpha / 2`` (2.5 %).

Answer-blind strategies (:data:`STRATEGIES`):

- ``constant``: the same answer for every item (the first option / the most frequent label);
- ``best constant``: the answer that is right most often on this key (what an adversary who
  knew the key's distribution would send);
- ``prior-matched``: answers drawn at random from the key's own distribution;
- ``shifted``: a model that listens (right 70 % of the time) whose answers were written one item off.

Tagging benchmarks (``task`` a CMI-Bench tagging task: each item holds a set of tags, each tag on a
share ``weights[t]`` of the items) have their own strategies (:data:`TAGGING_STRATEGIES`): the most
common reference tag set sent for every item (``most common response``), every tag listed by its
frequency in the references (``tag-frequency ranking``, the oracle prior), another item's tags
(``prior-matched``) and a model that listens (each true tag named with probability 0.7, a false tag
beside them half of the time) with its answers moved one item over (``shifted``). Their responses are
scored by a lexical ranking encoder (:func:`ranking_embedder`): a tag listed earlier scores higher.

Used by ``benchmarks/bench_calibration.py --blind`` (``--sims`` simulations per row).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from musiceval.vocab.cmibench import TAG_VOCABULARIES
from musiceval.data.answers import AnswerSet
from musiceval.gates import Gate, GateConfig
from musiceval.protocols.base import PROTOCOLS, ProtocolSettings
from musiceval.records import Item, Outcome, Response
from musiceval.protocols import checks

STRATEGIES = ("constant", "best constant", "prior-matched", "shifted")
LETTERS = "ABCD"
#: the name of the one chance gate in :func:`outcomes` (every strategy of the headline metric at once)
CHANCE_GATE = "beats the strongest answer-blind strategy"


@dataclass(frozen=True)
class BlindBenchmark:
    """A simulated benchmark: ``protocol``, ``n`` items over ``tracks`` clusters, and the
    distribution of its keys (choice: letters A-D; factual and MIR: class labels)."""

    protocol: str
    n: int
    weights: tuple[float, ...]
    tracks: int = 0
    #: the CMI-Bench task of a ``mir`` benchmark (default GTZAN); a tagging task (MTT, MTG_*) makes
    #: ``weights`` the share of items that hold each tag, in the order of the task's sorted tags
    task: str = ""

    @property
    def tagging(self) -> bool:
        return self.protocol == "mir" and self.task in TAG_VOCABULARIES

    @property
    def strategies(self) -> tuple[str, ...]:
        """The answer-blind strategies simulated on this benchmark."""
        return tuple(TAGGING_STRATEGIES) if self.tagging else STRATEGIES

    @property
    def label(self) -> str:
        if self.tagging:
            return (f"mir tagging ({self.task}), {len(self.weights)} tags, top on {max(self.weights):.0%} of items, "
                    f"n={self.n}")
        top = max(self.weights) / sum(self.weights)
        return f"{self.protocol}, {len(self.weights)} classes, top {top:.0%}, n={self.n}"


#: the benchmarks of the calibration table: MuChoMusic-like, NSynth-like and GTZAN-like
BENCHMARKS = (
    BlindBenchmark("choice", 1187, (0.25, 0.25, 0.25, 0.25), tracks=644),
    BlindBenchmark("choice", 1187, (0.55, 0.15, 0.15, 0.15), tracks=644),
    BlindBenchmark("factual", 600, (0.3, 0.15, 0.1, 0.1, 0.08, 0.07, 0.05, 0.05, 0.04, 0.03, 0.03)),
    BlindBenchmark("mir", 290, (0.1,) * 10),
    BlindBenchmark("mir", 290, (0.4,) + (0.6 / 9,) * 9),
    # MTG-Jamendo-instrument-like: 40 tags whose shares decay geometrically from 32 % of the items
    # (2.6 tags per item; the real file: piano on 32 %, 2.4 tags per item)
    BlindBenchmark("mir", 300, tuple(0.32 * 0.88 ** t for t in range(40)), task="MTG_instrument"),
)
FACTUAL_LABELS = ("bass", "brass", "flute", "guitar", "keyboard", "mallet", "organ", "reed", "string", "synth lead", "vocal")
GENRES = ("blues", "classical", "country", "disco", "hiphop", "jazz", "metal", "pop", "reggae", "rock")


def _tags(bench: BlindBenchmark) -> tuple[str, ...]:
    """The tagging task's tags in the order the scorer ranks them (sorted, lowercase)."""
    return tuple(sorted(t.lower().strip() for t in TAG_VOCABULARIES[bench.task]))


def _tag_keys(bench: BlindBenchmark, rng: np.random.Generator) -> list[tuple[int, ...]]:
    """Each item's tag set: tag ``t`` with probability ``weights[t]``, at least one tag per item."""
    p = np.asarray(bench.weights, dtype=float)
    keys = []
    for row in rng.random((bench.n, p.size)) < p:
        tags = tuple(int(t) for t in np.flatnonzero(row))
        keys.append(tags or (int(rng.choice(p.size, p=p / p.sum())),))
    return keys


def _listening_tags(keys: list[tuple[int, ...]], n_tags: int, rng: np.random.Generator) -> list[tuple[int, ...]]:
    """A model that listens: each true tag named with probability 0.7, a false tag beside them half of the time."""
    out = []
    for key in keys:
        named = [t for t in key if rng.random() < 0.7]
        if rng.random() < 0.5 or not named:
            named.append(int(rng.integers(n_tags)))
        out.append(tuple(dict.fromkeys(rng.permutation(named).tolist())))
    return out


def _tag_frequency_order(keys: list[tuple[int, ...]], n_tags: int) -> tuple[int, ...]:
    freq = Counter(t for key in keys for t in key)
    return tuple(sorted(range(n_tags), key=lambda t: (-freq[t], t)))


#: tagging's answer-blind strategies: (keys, number of tags, rng) -> each item's answer, a ranked tag list
TAGGING_STRATEGIES = {
    "most common response": lambda keys, k, rng: [Counter(keys).most_common(1)[0][0]] * len(keys),
    "tag-frequency ranking": lambda keys, k, rng: [_tag_frequency_order(keys, k)] * len(keys),
    "prior-matched": lambda keys, k, rng: [keys[j] for j in rng.integers(0, len(keys), len(keys))],
    "shifted": lambda keys, k, rng: (lambda heard: heard[-1:] + heard[:-1])(_listening_tags(keys, k, rng)),
}


def _tagging_answers(bench: BlindBenchmark, strategy: str, rng: np.random.Generator) -> tuple[list, list]:
    """(tag sets, ranked tag lists) for one simulated tagging file."""
    if strategy not in TAGGING_STRATEGIES:
        raise ValueError(f"unknown tagging strategy {strategy!r}; choose from {', '.join(TAGGING_STRATEGIES)}")
    keys = _tag_keys(bench, rng)
    return keys, TAGGING_STRATEGIES[strategy](keys, len(bench.weights), rng)


def ranking_embedder(tags: tuple[str, ...]):
    """A texts -> rows encoder for simulated tagging files: a tag's own name is its unit vector; a
    response (tags separated by commas) weighs its ``j``-th listed tag ``1 / (1 + j)``, so the
    cosine ranks the tags in the order the response lists them (unlisted tags tie at 0)."""
    index = {t: k for k, t in enumerate(tags)}

    def embed(texts):
        out = np.zeros((len(texts), len(tags)))
        for row, text in enumerate(texts):
            for j, part in enumerate(p.strip() for p in text.lower().split(",")):
                if part in index and out[row, index[part]] == 0:
                    out[row, index[part]] = 1.0 / (1 + j)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)

    return embed


def _answers(bench: BlindBenchmark, strategy: str, rng: np.random.Generator) -> tuple[list, list]:
    """(keys, answers) for one simulated file: class indices, or tag sets and ranked tag lists."""
    if bench.tagging:
        return _tagging_answers(bench, strategy, rng)
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


def answer_set(bench: BlindBenchmark, keys: list, answers: list) -> AnswerSet:
    """The simulated file as the protocol reads it."""
    items, responses = [], []
    tags = _tags(bench) if bench.tagging else ()
    for i, (k, a) in enumerate(zip(keys, answers)):
        iid, group = f"q{i:05d}", f"t{i * bench.tracks // bench.n:05d}" if bench.tracks else f"q{i:05d}"
        if bench.tagging:
            prompt = "Please provide the tag(s) of given audio."
            items.append(Item(iid, prompt, reference=", ".join(tags[t] for t in k), group=group,
                              meta={"index": i, "audioid": f"{iid}.wav"}))
            responses.append(Response(iid, "correct", "sim", prompt, ", ".join(tags[t] for t in a)))
        elif bench.protocol == "choice":
            items.append(Item(iid, f"question {i}?", choices=("w", "x", "y", "z"), answer=LETTERS[k], group=group))
            responses.append(Response(iid, "correct", "sim", "", f"The correct answer is: ({LETTERS[a]})"))
        elif bench.protocol == "factual":
            items.append(Item(iid, "What's the music instrument?", labels=(FACTUAL_LABELS[k],), group=group))
            responses.append(Response(iid, "correct", "sim", "What's the music instrument?", FACTUAL_LABELS[a]))
        else:
            items.append(Item(iid, "Identify the genre.", reference=GENRES[k], group=group,
                              meta={"index": i, "audioid": f"{iid}.wav"}))
            responses.append(Response(iid, "correct", "sim", "Identify the genre.", GENRES[a]))
    extra = {"task": bench.task or "GTZAN"} if bench.protocol == "mir" else {}
    return AnswerSet(items, responses, [], model="sim", source="simulated", extra=extra)


def outcomes(bench: BlindBenchmark, keys: list[int], answers: list[int], *, seed: int = 0, n_permutations: int = 200,
             gate: Gate | None = None) -> dict[str, Outcome]:
    """Outcome of the chance gate of the headline metric (:data:`CHANCE_GATE`) and of "the model listens"."""
    options = {"vocab": "nsynth", "n_permutations": n_permutations} if bench.protocol == "factual" else {}
    if bench.tagging:
        options = {"embed": ranking_embedder(_tags(bench))}
    run = PROTOCOLS.get(bench.protocol).from_answers(answer_set(bench, keys, answers),  # type: ignore[attr-defined]
                                                     ProtocolSettings(seed=seed, options=options))
    gate = gate or Gate(GateConfig(seed=seed))
    metric = run.headline
    out = {}
    chance = checks.beats_chance(gate, run, metric)
    if chance is not None:
        out[CHANCE_GATE] = chance.outcome
    listens = checks.listens(gate, run, metric)
    if listens is not None:
        out["listens"] = listens.outcome
    return out


def false_pass_rates(bench: BlindBenchmark, strategy: str, *, n_sims: int, seed: int = 0) -> dict[str, float]:
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
