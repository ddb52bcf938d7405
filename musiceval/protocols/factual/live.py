"""The live factual path: dataset items -> Music LM (generate, cached) -> extracted labels -> scores.

One function, :func:`live_factual`, shared by the live FMA / MusicNet gates in
``musiceval/protocols/factual/gates.py`` and their end-to-end test (``tests/protocols/test_factual_live.py``):

1. items without audio (the loaders' ``meta["missing_audio"]`` names the expected file) are
   per-item failures, counted, never dropped silently; ``max_items`` keeps the first N items;
2. the prompt variant is applied (``paper``: the dataset's question, the paper's phrasing;
   ``among``: "Among {all labels}, ..." over the vocabulary, :func:`musiceval.vocab.factual_prompts.among_prompt`);
3. :func:`musiceval.generate.generate_responses` answers each item under Correct and Random audio
   (another recording, a seeded derangement) through the response cache; generation failures
   (unreadable audio, model errors) are per-item failures;
4. the answers become the :class:`~musiceval.data.answers.AnswerSet` a recorded factual file gives
   (:meth:`musiceval.generate.GenerationResult.answer_set`, the items without audio's failures
   added) and are scored by :meth:`FactualProtocol.from_answers
   <musiceval.protocols.factual.protocol.FactualProtocol.from_answers>` with the rule extractor,
   the path every recorded factual file takes (docs/extending.md, "A protocol"): answers per audio
   chunk (models with ``chunk_seconds``) aggregated with ``chunks`` (``any``/``majority``,
   :func:`musiceval.metrics.sets.aggregate_chunks`), an item missing a chunk answer left out of that
   condition (its generation failure is already counted), Correct and Random scored with the
   permutation chance level.

:func:`live_closed` runs the closed-question variants the same way (Correct audio only): binary
choice ("Between A and B", true label first in exactly half) and true/false tables, scored by
:mod:`musiceval.protocols.factual.variants`; a chunked answer is a per-item failure there (one
yes/no or choice per item is what those scores assume).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from musiceval.vocab.factual_prompts import variant_items
from musiceval.extraction import Vocabulary
from musiceval.generate import GenerationResult, generate_responses
from musiceval.models.base import GenerationSettings
from musiceval.models.cache import ResponseCache
from musiceval.records import Item, ItemFailure
from musiceval.redact import redact
from musiceval.protocols.base import ProtocolSettings
from musiceval.protocols.factual.engine import FactualResult, rule_extractor
from musiceval.protocols.factual.protocol import FactualProtocol
from musiceval.protocols.factual.variants import VariantResult, score_binary, score_true_false

LIVE_VARIANTS = ("paper", "among")
#: the conditions the live model is asked under on FMA and MusicNet
ASKED_CONDITIONS = ("correct", "random")


@dataclass
class LiveFactual:
    """The protocol scoring the answers, the generation run (responses, cache hits, failures) and the items asked."""

    protocol: FactualProtocol
    generation: GenerationResult
    items: list[Item]
    missing_audio: list[ItemFailure]

    @property
    def result(self) -> FactualResult:
        """The protocol's scores per condition, permutation chance and per-label table."""
        return self.protocol.result


def _with_audio(items: Sequence[Item], data_dir: Path, max_items: int) -> tuple[list[Item], list[ItemFailure]]:
    """The first ``max_items`` items (0 = all) with audio paths relative to ``data_dir``, and a
    failure per item without audio."""
    items = list(items[:max_items] if max_items else items)
    missing = [ItemFailure(it.id, f"audio file not found: {it.meta.get('missing_audio', 'no audio path')}; "
                                  "download the dataset's audio into --data-dir") for it in items if not it.audio]
    return [_relative(it, data_dir) for it in items if it.audio], missing


def _relative(item: Item, data_dir: Path) -> Item:
    path = Path(item.audio)
    return replace(item, audio=os.path.relpath(path, data_dir)) if path.is_absolute() else item


def _answers(generation: GenerationResult) -> dict[tuple[str, str], str | tuple[str, ...]]:
    """(item id, condition) -> the answer, or its chunk answers in order when all chunks are there."""
    chunks: dict[tuple[str, str], dict[int, str]] = {}
    expected: dict[tuple[str, str], int] = {}
    for r in generation.responses:
        key = (r.item_id, r.condition)
        chunks.setdefault(key, {})[int(r.meta["chunk"])] = r.text
        expected[key] = int(r.meta["n_chunks"])
    out: dict[tuple[str, str], str | tuple[str, ...]] = {}
    for key, got in chunks.items():
        if sorted(got) == list(range(expected[key])):
            out[key] = got[0] if expected[key] == 1 else tuple(got[k] for k in range(expected[key]))
    return out


def live_factual(model, items: Sequence[Item], vocab: Vocabulary, *, data_dir: str | Path, cache: ResponseCache | None = None,
                 seed: int = 0, prompt_variant: str = "paper", chunks: str = "any", max_items: int = 0,
                 n_permutations: int = 1000, settings: GenerationSettings | None = None) -> LiveFactual:
    """Ask ``model`` every item (Correct and Random audio) and score the answers (see the module docstring).

    ``vocab.kind`` (``instrument``, ``genre``, ``composer``) picks the "Among" phrasing.
    """
    if prompt_variant not in LIVE_VARIANTS:
        raise ValueError(f"prompt_variant must be one of {LIVE_VARIANTS}, got {prompt_variant!r} "
                         "(binary and true/false variants: variant_items + musiceval generate + score factual --answers)")
    data_dir = Path(data_dir)
    asked, missing = _with_audio(items, data_dir, max_items)
    if prompt_variant == "among":
        asked = variant_items(asked, "among", vocab.kind, vocab.labels)
    generation = generate_responses(model, asked, conditions=ASKED_CONDITIONS, data_dir=data_dir, cache=cache,
                                    settings=settings or GenerationSettings(seed=seed))
    answers = generation.answer_set(asked, model=redact(model.spec), source=f"live {vocab.name}")
    answers = replace(answers, failures=[*missing, *answers.failures])
    options = {"vocab": vocab, "chunks": chunks, "n_permutations": n_permutations}
    protocol = FactualProtocol.from_answers(answers, ProtocolSettings(seed=seed, options=options))
    return LiveFactual(protocol, generation, asked, missing)


@dataclass
class LiveClosed:
    """A closed-question variant's scores, the generation run and the items asked."""

    result: VariantResult
    generation: GenerationResult
    items: list[Item]


def live_closed(model, items: Sequence[Item], vocab: Vocabulary, variant: str, *, data_dir: str | Path,
                cache: ResponseCache | None = None, seed: int = 0, max_items: int = 0, n_permutations: int = 1000,
                settings: GenerationSettings | None = None) -> LiveClosed:
    """Ask the ``binary`` or ``true-false`` variant of every item (Correct audio) and score the answers."""
    if variant not in ("binary", "true-false"):
        raise ValueError(f"variant must be 'binary' or 'true-false', got {variant!r}")
    data_dir = Path(data_dir)
    usable, missing = _with_audio(items, data_dir, max_items)
    # true labels in the vocabulary's canonical form, so a distractor is never a spelling of a true label
    usable = [replace(it, labels=tuple(dict.fromkeys(vocab.canonical(x) or x for x in it.labels))) for it in usable]
    asked = variant_items(usable, variant, vocab.kind, vocab.labels, seed=seed)
    generation = generate_responses(model, asked, conditions=("correct",), data_dir=data_dir, cache=cache,
                                    settings=settings or GenerationSettings(seed=seed))
    answers = _answers(generation)
    records, chunked = [], []
    for it in asked:
        answer = answers.get((it.id, "correct"))
        if isinstance(answer, tuple):
            chunked.append(ItemFailure(it.id, f"answered in {len(answer)} audio chunks; the {variant} variant scores one "
                                              "answer per item (use a model without chunk_seconds)"))
        elif answer is not None:
            records.append((it.id, {**dict(it.meta), "item_id": it.id, "text": answer, "labels": list(it.labels),
                                    "group": it.group or it.meta.get("item", it.id)}))
    failures = [*missing, *generation.failures, *chunked]
    result = (score_binary(records, vocab, rule_extractor(vocab), failures=failures, seed=seed) if variant == "binary"
              else score_true_false(records, vocab, seed=seed, n_permutations=n_permutations, failures=failures))
    return LiveClosed(result, generation, asked)
