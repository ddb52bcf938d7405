"""The five free-form conditions: Correct, Random, Noise, Skyline, Adversarial.

Every condition is scored against the same reference (docs/protocols/freeform.md).

- **Correct**: the model's answer with the intended audio (the recorded ``model_output``).
- **Random**: each question is paired with a different recording of the same dataset: a seeded
  derangement, never the clip itself (:func:`derangement`, :func:`random_audio_assignment`).
  For *recorded* responses to one shared prompt (the four generic captioning questions, or any
  task whose prompt is identical for every clip) the Random condition is exactly "the response
  the model gave for another clip with the same prompt": the model saw the same text and a
  different recording, which is the Random condition's definition, so no rerun is needed
  (:func:`random_recorded_responses`). Items whose prompt no other item shares have no Random
  response and are reported, never silently given one.
  ``draws=K`` gives K independent derangements; scores are averaged over the draws per item
  (:func:`mean_over_draws`).
- **Noise**: white Gaussian noise of the clip's length instead of the audio (MuChoMusic's audio
  attention test): :func:`noise_like`.
- **Skyline / Adversarial**: the reference rewritten to keep every musical fact (paraphrase) or to
  change the facts with minimal edits; from the suite's LLM rewriter
  (:mod:`musiceval.llm.rewrite`) or a hand-written fixture set (:func:`load_rewrites`).

Beside them, the **question control** of every protocol (not a condition of the answers): each
answer moved to another question about the same clip, a seeded derangement within the clip
(:func:`question_derangement`); "the model answers the question" compares the answers in place with it.

Seeding: every random choice takes ``seed``; per-group streams derive from ``(seed, crc32(group))``
so one group's draw does not depend on the order or presence of the others, and within a group
items are put in the order of their ids (clips in sorted order) before anything is drawn, so the
order of the lines of the input file never changes a pairing.

Clip-avoiding derangements are constructed, not sampled by rejection
(:func:`clip_avoiding_derangement`): one exists iff the group has at least 2 items and no clip
holds more than half of them, and then one is always found in O(n log n).
"""
from __future__ import annotations

import json
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Hashable, Mapping, Sequence

import numpy as np

from musiceval.records import Item


def seeded_rng(seed: int, key: str = "") -> np.random.Generator:
    """A generator seeded from the run seed and a key (an item id, a draw): never from file order."""
    return np.random.default_rng(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, zlib.crc32(key.encode("utf-8"))]))


def derangement(n: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random permutation of ``range(n)`` with no fixed point (rejection sampling).

    Raises ``ValueError`` for ``n < 2`` (one item has no other item to pair with).
    """
    if n < 2:
        raise ValueError(f"a derangement needs at least 2 items (got {n})")
    idx = np.arange(n)
    while True:  # accepted with probability ~1/e per try
        perm = rng.permutation(n)
        if not np.any(perm == idx):
            return perm


class NoDerangementError(ValueError):
    """No permutation pairs every item with an item of another clip."""


def clip_avoiding_derangement(clips: Sequence[Hashable], rng: np.random.Generator, *, rounds: int | None = None) -> np.ndarray:
    """A seeded permutation ``perm`` with ``clips[perm[i]] != clips[i]`` for every ``i``.

    Exists iff ``n >= 2`` and no clip holds more than ``n / 2`` items (Hall's condition: the
    items of the largest clip need as many partners outside it); otherwise
    :class:`NoDerangementError` says which clip holds how many.

    Construction (always succeeds when one exists): list the items clip by clip (clips and the
    items within a clip in random order) and give position ``i`` the item at position
    ``(i + m) mod n``, ``m`` the largest clip's size. A clip's items are contiguous and at most
    ``m <= n / 2`` long, so the shifted partner always lies in another clip. The result is then
    randomised by ``rounds`` sweeps of constraint-preserving moves: pair the positions at random
    and exchange the partners of two positions, then group them in random triples and rotate
    their partners, each move independently with probability 1/2 and only where every position keeps
    a partner from another clip (exchanges alone, or all valid moves at once, do not connect all
    valid permutations). The proposals are symmetric, so the chain's stationary law is uniform over the valid
    permutations it reaches ("uniform-ish": exact uniformity is not claimed). When every item is
    its own clip (``m == 1``) the exactly uniform :func:`derangement` is used instead.

    Parameters
    ----------
    clips : sequence of hashable
        The clip (recording, track) of each position.
    rng : numpy.random.Generator
    rounds : int, optional
        Swap sweeps (default ``2 * ceil(log2 n) + 8``).
    """
    n = len(clips)
    if n < 2:
        raise NoDerangementError(f"a derangement needs at least 2 items (got {n})")
    codes: dict[Hashable, int] = {}
    labels = np.fromiter((codes.setdefault(c, len(codes)) for c in clips), dtype=np.int64, count=n)
    counts = np.bincount(labels)
    m = int(counts.max())
    if 2 * m > n:
        big = next(c for c, k in codes.items() if counts[k] == m)
        raise NoDerangementError(f"clip {big!r} holds {m} of {n} items (more than half): no item can be paired with another clip's item for all of them")
    if m == 1:
        return derangement(n, rng)
    block_rank = rng.permutation(len(counts))
    order = np.lexsort((rng.random(n), block_rank[labels]))  # clip by clip, random within
    perm = np.empty(n, dtype=np.int64)
    perm[order] = order[(np.arange(n) + m) % n]
    if rounds is None:
        rounds = 2 * int(np.ceil(np.log2(n))) + 8
    half, third = n // 2, n // 3
    for _ in range(rounds):
        p = rng.permutation(n)  # exchanges: i <- partner of j, j <- partner of i
        a, b = p[:half], p[half : 2 * half]
        ok = (labels[perm[b]] != labels[a]) & (labels[perm[a]] != labels[b]) & (rng.random(half) < 0.5)
        a, b = a[ok], b[ok]
        perm[a], perm[b] = perm[b], perm[a]
        p = rng.permutation(n)  # rotations: i <- partner of j <- partner of k <- partner of i
        a, b, c = p[:third], p[third : 2 * third], p[2 * third : 3 * third]
        ok = (labels[perm[b]] != labels[a]) & (labels[perm[c]] != labels[b]) & (labels[perm[a]] != labels[c]) & (rng.random(third) < 0.5)
        a, b, c = a[ok], b[ok], c[ok]
        perm[a], perm[b], perm[c] = perm[b], perm[c], perm[a]
    return perm


def random_audio_assignment(items: Sequence[Item], seed: int, *, draws: int = 1) -> list[dict[str, str]]:
    """For each draw, map item id -> the audio of a *different* clip of the same dataset.

    The derangement runs over distinct clips (``item.audio``), so an item never receives its own
    recording even when several questions share it.
    """
    clips = sorted({it.audio for it in items if it.audio is not None})
    missing = [it.id for it in items if it.audio is None]
    if missing:
        raise ValueError(f"{len(missing)} items have no audio (first: {missing[0]!r}); Random audio needs the clips")
    out = []
    for d in range(draws):
        perm = derangement(len(clips), seeded_rng(seed, f"audio/{d}"))
        swap = {clips[i]: clips[perm[i]] for i in range(len(clips))}
        out.append({it.id: swap[it.audio] for it in items})
    return out


@dataclass(frozen=True)
class RandomResponses:
    """Random-condition texts from recorded responses: ``draws[k][item_id] -> text``."""

    draws: tuple[dict[str, str], ...]
    #: items with no other item sharing their prompt, hence no Random response
    unpaired: tuple[str, ...]


def random_recorded_responses(
    item_ids: Sequence[str],
    prompts: Sequence[Hashable],
    responses: Sequence[str],
    seed: int,
    *,
    draws: int = 1,
    clips: Sequence[Hashable] | None = None,
) -> RandomResponses:
    """Derange recorded responses among items that share the same prompt.

    Parameters
    ----------
    item_ids, prompts, responses : sequences of equal length
        The prompt is what the model saw as text; equal prompts form one group.
    seed : int
    draws : int
        Number of independent derangements.
    clips : sequence, optional
        The recording (or track) of each item. When given, a partner from the same recording
        is never chosen (:func:`clip_avoiding_derangement`); a prompt group where one recording
        holds more than half of the items has no such derangement and its items are reported as
        unpaired (exactly those groups: every other group is always paired).

    Items are taken in the order of their ids within a prompt group, so the result does not
    depend on the order of the input; item ids must be unique.
    """
    if not (len(item_ids) == len(prompts) == len(responses)):
        raise ValueError("item_ids, prompts and responses must have the same length")
    if clips is not None and len(clips) != len(item_ids):
        raise ValueError("clips must have one entry per item")
    if len(set(item_ids)) != len(item_ids):
        dup = next(i for i, c in Counter(item_ids).items() if c > 1)
        raise ValueError(f"item id {dup!r} occurs more than once; Random pairings are keyed by item id, make ids unique")
    groups: dict[Hashable, list[int]] = defaultdict(list)
    for k, p in enumerate(prompts):
        groups[p].append(k)
    for ks in groups.values():  # the order of the file never matters: items in id order
        ks.sort(key=lambda k: (str(item_ids[k]), type(item_ids[k]).__name__))

    def feasible(ks: list[int]) -> bool:
        # a clip-avoiding derangement exists iff no clip holds more than half of the group
        if len(ks) < 2:
            return False
        if clips is None:
            return True
        return max(Counter(clips[k] for k in ks).values()) * 2 <= len(ks)

    unpaired = sorted((item_ids[k] for ks in groups.values() if not feasible(ks) for k in ks), key=str)
    out: list[dict[str, str]] = []
    for d in range(draws):
        mapping: dict[str, str] = {}
        for prompt, ks in groups.items():
            if not feasible(ks):
                continue
            rng = seeded_rng(seed, f"prompt/{d}/{prompt}")
            labels = list(range(len(ks))) if clips is None else [clips[k] for k in ks]
            perm = clip_avoiding_derangement(labels, rng)
            for i, k in enumerate(ks):
                mapping[item_ids[k]] = responses[ks[perm[i]]]
        out.append(mapping)
    return RandomResponses(draws=tuple(out), unpaired=tuple(unpaired))


#: the fewest items with another question about their clip, on the fewest clips, for which the
#: question control is computed (below that :meth:`~musiceval.protocols.base.Protocol.question_permutation`
#: is None and the gate is not applicable): 10 items can decide a paired comparison, 2 clips make a cluster
MIN_QUESTION_ITEMS, MIN_QUESTION_CLIPS = 10, 2


@dataclass(frozen=True)
class QuestionPartners:
    """The question control's pairing (:func:`question_derangement`): item id -> the id of the item
    whose answer it receives, always another question about the same clip."""

    partner: dict[str, str]
    #: items with no other question about their clip (or whose clip asks one question more than
    #: half of the time), left out of the comparison and counted
    unpaired: tuple[str, ...] = ()
    #: clips with at least one paired item
    clips: int = 0

    @property
    def enough(self) -> bool:
        """At least :data:`MIN_QUESTION_ITEMS` paired items on :data:`MIN_QUESTION_CLIPS` clips."""
        return len(self.partner) >= MIN_QUESTION_ITEMS and self.clips >= MIN_QUESTION_CLIPS

    def describe(self) -> str:
        """``"380 items on 45 clips paired; 20 with no other question about their clip left out"``."""
        left = f"; {len(self.unpaired)} with no other question about their clip left out" if self.unpaired else ""
        return f"{len(self.partner)} items on {self.clips} clips paired{left}"


def question_derangement(item_ids: Sequence[str], clips: Sequence[Hashable], questions: Sequence[str],
                         seed: int) -> QuestionPartners:
    """Pair each item with ANOTHER question about the SAME clip (docs/gate-your-model.md, "What the verdict means":
    answering the question is tested by the same answers moved to other questions about the same
    audio).

    Within each clip, items are put in the order of their ids and given a seeded derangement that
    never keeps an item's question (:func:`clip_avoiding_derangement` with the question text as
    the label): an item never receives its own answer, nor an answer to the same question asked
    again (another run or pass of it). The stream is seeded by ``seed``, the clip and the clip's
    item ids, so neither the order of the file nor the other clips change a pairing. A clip with a
    single question, or one where a question holds more than half of its items, pairs none of
    them: those items are ``unpaired``, counted, never given a partner.

    >>> p = question_derangement(["a1", "a2", "b1"], ["A", "A", "B"], ["genre?", "tempo?", "key?"], seed=0)
    >>> p.partner, p.unpaired, p.clips
    ({'a1': 'a2', 'a2': 'a1'}, ('b1',), 1)
    """
    if not (len(item_ids) == len(clips) == len(questions)):
        raise ValueError(f"question_derangement: {len(item_ids)} item ids, {len(clips)} clips and {len(questions)} "
                         "questions; pass one clip and one question per item")
    if len(set(item_ids)) != len(item_ids):
        dup = next(i for i, c in Counter(item_ids).items() if c > 1)
        raise ValueError(f"question_derangement: item id {dup!r} occurs more than once; pairings are keyed by item "
                         "id, make ids unique (a run or pass suffix)")
    by_clip: dict[Hashable, list[int]] = defaultdict(list)
    for k, clip in enumerate(clips):
        by_clip[clip].append(k)
    partner: dict[str, str] = {}
    unpaired: list[str] = []
    paired_clips = 0
    for clip, ks in by_clip.items():
        ks.sort(key=lambda k: str(item_ids[k]))
        labels = [" ".join(str(questions[k]).split()).casefold() for k in ks]
        if len(ks) < 2 or max(Counter(labels).values()) * 2 > len(ks):
            unpaired.extend(str(item_ids[k]) for k in ks)
            continue
        ids = [str(item_ids[k]) for k in ks]
        # two questions have one derangement, the exchange: no stream to draw
        perm = [1, 0] if len(ids) == 2 else clip_avoiding_derangement(
            labels, seeded_rng(seed, "question/" + "\x1f".join([str(clip), *ids])))
        partner.update({ids[i]: ids[perm[i]] for i in range(len(ids))})
        paired_clips += 1
    return QuestionPartners(dict(sorted(partner.items())), tuple(sorted(unpaired)), paired_clips)


def mean_over_draws(score_draw: Callable[[dict[str, str]], Mapping[str, float]], draws: Sequence[dict[str, str]]) -> dict[str, float]:
    """Average per-item scores over K Random draws (each draw scored by ``score_draw``)."""
    totals: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for draw in draws:
        for item_id, value in score_draw(draw).items():
            totals[item_id] += float(value)
            counts[item_id] += 1
    return {i: totals[i] / counts[i] for i in totals}


def noise_like(waveform: np.ndarray, seed: int) -> np.ndarray:
    """Noise condition audio: white Gaussian noise with the clip's length and RMS level.

    Delegates to :func:`musiceval.audio.white_noise_like` (one definition in the suite).
    """
    from musiceval.audio import white_noise_like

    return white_noise_like(waveform, seed)


@dataclass(frozen=True)
class Rewrite:
    """A Skyline paraphrase and an Adversarial rewrite of one reference."""

    item_id: str
    question: str
    reference: str
    skyline: str
    adversarial: str
    #: "hand-written" or "llm:<model>:<prompt version>"; never blurred
    source: str


def load_rewrites(path: str | Path) -> dict[str, Rewrite]:
    """Load a Skyline/Adversarial set: JSON lines ``{id, question, reference, skyline,
    adversarial, source}``. Raises ``ValueError`` naming the line and field of a bad record."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"rewrite set {str(path)!r} not found; write it with musiceval.llm.rewrite or use fixtures/freeform/rewrites_handwritten.jsonl")
    out: dict[str, Rewrite] = {}
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
            if not isinstance(rec, dict):
                raise ValueError(f"{path}:{lineno}: expected a JSON object")
            for key in ("id", "reference", "skyline", "adversarial", "source"):
                if not isinstance(rec.get(key), str) or not rec[key].strip():
                    raise ValueError(f"{path}:{lineno}: field {key!r} must be a non-empty string")
            if rec["id"] in out:
                raise ValueError(f"{path}:{lineno}: duplicate id {rec['id']!r}")
            out[rec["id"]] = Rewrite(
                item_id=rec["id"],
                question=str(rec.get("question", "")),
                reference=rec["reference"],
                skyline=rec["skyline"],
                adversarial=rec["adversarial"],
                source=rec["source"],
            )
    return out
