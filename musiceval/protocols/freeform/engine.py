"""Free-form QA scoring (protocol 1): candidate answers under each condition vs the reference. The
engine of :class:`musiceval.protocols.freeform.FreeformProtocol` and of ``musiceval score freeform``
(:mod:`musiceval.protocols.freeform.score`).

``musiceval score freeform --format {musiceval,dasheng} FILE --metrics bleu,bleu4,meteor,rouge_l,
cider,bertscore,clap_text,sentence_cosine --conditions correct,random --seed S --json`` prints
``{"protocol": "freeform", "n": .., "n_failed": .., "metrics": {"correct": {"bleu": ..}, ..}}``:
the mean of each metric over the items scored under each condition.

- ``--format dasheng``: ``../shared/data/musicqa`` layout (question prefixes stripped from the
  references, see :mod:`musiceval.data.musicqa`); ``--format musiceval``: musiceval's free-form
  JSONL (responses for several conditions may be in the file).
- Random: responses recorded for the condition ``random`` in the file when present (a live
  rerun with deranged audio; K pairings from ``musiceval generate --random-draws K`` carry
  ``meta.draw`` and are averaged per item); otherwise the derangement of recorded responses among items
  with the same prompt (:func:`musiceval.conditions.random_recorded_responses`), averaged over
  ``--random-draws`` draws. Items whose prompt no other item shares have no Random score.
- Skyline / Adversarial: ``--rewrites FILE`` (JSONL of :func:`musiceval.conditions.load_rewrites`).
- Noise: only from responses recorded under ``noise`` (it needs the model to run on noise).
- A chunking model answers once per audio chunk (``meta.chunk``); the first chunk's answer is
  scored, as the live path (:mod:`musiceval.protocols.freeform.gates_live`) and the choice
  protocol score it.
- CIDEr-D document frequencies come from the references of every loaded item, the same for
  every condition, so per-item values are paired across conditions.
- Several references per item (``reference`` as a list; captions): the lexical metrics use all
  of them by their own definitions; BERTScore, CLAPText and sentence cosine take the max over
  the references (bert-score's multi-reference rule; :mod:`musiceval.metrics.embedding`).
- ``clap_audio`` (CLAPAudio, reference-free): cos(CLAP_text(answer), CLAP_audio(clip)), where the
  clip is always the item's *own* ``audio`` (resolved under ``--data-dir``, default the file's
  folder; paths may not leave it). Random scores another clip's answer against this clip, Noise
  the answer given on noise against this clip, so Correct > Random means the answers describe
  their audio. An item without audio, or whose file is missing, empty, undecodable or outside
  the data directory, is a per-item failure naming the file.
- Embedding metrics embed each distinct text (and clip) once per run and model, across conditions
  and metrics: sentence cosine, CLAPText and FENSE's two models cache one row per text, BERTScore
  the token embeddings of each text (:class:`~musiceval.encoders.bertscore_cache.TokenCachedBERTScorer`).
  They are kept on disk under ``--cache-dir DIR``/embeddings (default
  :func:`musiceval.cache_dir.default_cache_dir`), so a rerun embeds nothing.

:class:`FreeformEvaluation` is the library form, used by ``musiceval/protocols/freeform/gates.py``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from musiceval.conditions import random_recorded_responses
from musiceval.audio import AudioError, load_audio, resolve_audio_path
from musiceval.data.answers import AnswerSet
from musiceval.data.musicqa import item_references
from musiceval.metrics.embedding_models import Models
from musiceval.metrics.lexical import LEXICAL_METRICS, as_text, validate
from musiceval.records import Item, ItemFailure, ItemScores

#: the builtin metrics (every metric registered with musiceval.metrics.registry.register_metric is scored too)
METRICS = LEXICAL_METRICS + ("bertscore", "clap_text", "clap_audio", "sentence_cosine")
EMBEDDING_METRICS = ("bertscore", "clap_text", "clap_audio", "sentence_cosine")
FREEFORM_CONDITIONS = ("correct", "random", "noise", "skyline", "adversarial")


#: the context's embedding kinds served by FENSE's own models (musiceval.metrics.fense_metric)
FENSE_KINDS = ("fense", "fense-error")


class FreeformEvaluation:
    """Items, candidate texts per condition (K draws for Random) and per-item metric scores."""

    def __init__(self, data: AnswerSet, *, seed: int = 0, random_draws: int = 1, rewrites: dict | None = None,
                 models: Models | None = None, data_dir: str | Path | None = None):
        self.items: dict[str, Item] = {it.id: it for it in data.items}
        #: root of the items' ``audio`` paths (clap_audio)
        self.data_dir = Path(data_dir) if data_dir is not None else None
        #: item id -> CLAP audio embedding of its own clip, or the reason it has none
        self._clips: dict[str, np.ndarray | str] | None = None
        self.failures: list[ItemFailure] = list(data.failures)
        self.models = models or Models()
        self.seed = seed
        #: condition -> list of draws, each ``{item_id: candidate text}``
        self.texts: dict[str, list[dict[str, str]]] = {}
        by_condition: dict[str, dict[str, str]] = {}
        draws: dict[str, dict[int, dict[str, str]]] = {}  # live Random: K pairings (meta "draw")
        prompts: dict[str, str] = {}
        for r in data.responses:
            if int((r.meta or {}).get("chunk", 0)) != 0:  # a chunking model: its first chunk's answer is scored
                continue
            by_condition.setdefault(r.condition, {})[r.item_id] = r.text
            draws.setdefault(r.condition, {}).setdefault(int((r.meta or {}).get("draw", 0)), {})[r.item_id] = r.text
            if r.condition == "correct":
                prompts[r.item_id] = r.prompt
        for condition, per_draw in draws.items():
            self.texts[condition] = [per_draw[k] for k in sorted(per_draw)]
        self.unpaired: tuple[str, ...] = ()
        #: conditions derived from the answers rather than recorded (Random: another clip's answer)
        self.derived: tuple[str, ...] = ()
        if "random" not in self.texts and "correct" in by_condition:
            self.derived = ("random",)
            ids = list(prompts)
            rr = random_recorded_responses(ids, [prompts[i] for i in ids], [by_condition["correct"][i] for i in ids],
                                           seed, draws=random_draws, clips=[self.items[i].group or self.items[i].audio or i for i in ids])
            self.texts["random"] = list(rr.draws)
            self.unpaired = rr.unpaired
        if rewrites:
            for cond in ("skyline", "adversarial"):
                self.texts[cond] = [{i: getattr(rw, cond) for i, rw in rewrites.items() if i in self.items}]
            self.rewrite_sources = sorted({rw.source for rw in rewrites.values()})
        self.df_references = [list(item_references(it)) for it in self.items.values()]
        self._scores: dict[tuple[str, str], ItemScores] = {}

    def conditions(self) -> list[str]:
        return [c for c in FREEFORM_CONDITIONS if c in self.texts] + [c for c in self.texts if c not in FREEFORM_CONDITIONS]

    def _valid_pairs(self, condition: str, draw: dict[str, str], metric: str):
        from musiceval.metrics.registry import get_metric

        reference_free = get_metric(metric).reference_free
        ids, cands, refs, failures = [], [], [], []
        clips = self.clip_embeddings() if reference_free else {}
        for item_id, text in draw.items():
            item = self.items.get(item_id)
            if item is None:
                failures.append(ItemFailure(item_id, f"{condition}: no item {item_id!r} with a reference"))
                continue
            try:
                if reference_free:  # e.g. clap_audio: the item's own clip instead
                    cand, rs = as_text(text, "candidate"), clips.get(item_id)
                    if isinstance(rs, str):
                        raise ValueError(rs)
                else:
                    cand, rs = validate(text, list(item_references(item)))
            except ValueError as exc:
                failures.append(ItemFailure(item_id, f"{condition}/{metric}: {exc}"))
                continue
            ids.append(item_id)
            cands.append(cand)
            refs.append(rs)
        return ids, cands, refs, failures

    def clip_embeddings(self) -> dict[str, np.ndarray | str]:
        """CLAP audio embedding of each item's own clip (each distinct clip embedded once, cached
        by content hash), or the reason it has none: no ``audio`` field, or an :class:`AudioError`
        naming the file (missing, empty, undecodable, outside the data directory)."""
        if self._clips is not None:
            return self._clips
        if self.data_dir is None:
            raise ValueError("clap_audio needs the audio: pass data_dir (--data-dir) holding the items' 'audio' files")
        from musiceval.encoders.base import embed_audio

        encoder = self.models.audio_encoder()
        rate = int(encoder.feature_extractor.sampling_rate)
        clips: dict[str, np.ndarray | str] = {}
        batch: dict[str, np.ndarray] = {}

        def flush() -> None:
            if batch:
                rows = embed_audio(encoder, list(batch.values()), rate, cache=self.models.cache())
                clips.update(zip(batch, rows))
                batch.clear()

        for item_id, item in self.items.items():
            if not item.audio:
                clips[item_id] = "item has no 'audio' field; clap_audio scores the answer against the item's own clip"
                continue
            try:
                batch[item_id] = load_audio(resolve_audio_path(item.audio, self.data_dir), rate)
            except AudioError as exc:
                clips[item_id] = str(exc)
                continue
            if len(batch) >= getattr(encoder, "batch_size", 16):  # a batch of decoded clips at a time
                flush()
        flush()
        self._clips = clips
        return clips

    def context(self, item_ids: Sequence[str] = ()):
        """The :class:`~musiceval.metrics.registry.MetricContext` of this run: plain callables over
        the lazily loaded models and this run's embedding cache."""
        from musiceval.metrics import embedding
        from musiceval.metrics.registry import MetricContext

        def embed(kind: str):
            from musiceval.encoders.base import embed_distinct

            if kind in FENSE_KINDS:  # FENSE's own models: texts -> rows / error probabilities (a column)
                model = self.models.fense(kind)
                return lambda texts: embed_distinct(model, list(texts), cache=self.models.cache())
            return lambda texts: embed_distinct(self.models.encoder(kind), list(texts), cache=self.models.cache())

        def similarity(kind: str):
            return lambda cands, refs: embedding.text_similarity(self.models.encoder(kind), cands, refs, cache=self.models.cache())

        def bertscore(cands, refs):
            return embedding.bertscore(self.models.bertscorer(), cands, refs)["f1"]

        def audio_similarity(cands, ids):
            clips = self.clip_embeddings()
            rows = np.stack([clips[i] for i in ids])
            return embedding.audio_similarity(self.models.audio_encoder(), cands, rows, cache=self.models.cache())

        return MetricContext(embed=embed, similarity=similarity, bertscore=bertscore, audio_similarity=audio_similarity,
                             df_references=self.df_references, item_ids=tuple(item_ids),
                             lexical_cache=self.models.lexical_cache())

    def _score_draw(self, metric: str, cands: list[str], refs: list, ids: Sequence[str] = ()) -> np.ndarray:
        from musiceval.metrics.registry import get_metric

        values = np.asarray(get_metric(metric).fn(cands, refs, self.context(ids)), dtype=float)
        if values.shape != (len(cands),):
            raise ValueError(f"metric {metric!r} returned shape {values.shape} for {len(cands)} candidates; return one value per candidate")
        return values

    def score_texts(self, metric: str, condition: str, draw: dict[str, str]) -> ItemScores:
        """Per-item scores of ``metric`` for candidate texts recorded under no condition (a control
        derived from the answers: the question control's moved answers), each scored against its
        item's references like any condition's; cached under ``condition``, which must not be one
        of :meth:`conditions`."""
        if condition in self.texts:
            raise ValueError(f"{condition!r} is a condition of the answers; score it with scores()")
        key = (metric, condition)
        if key not in self._scores:
            ids, cands, refs, bad = self._valid_pairs(condition, draw, metric)
            values = self._score_draw(metric, cands, refs, ids) if ids else np.zeros(0)
            self._scores[key] = ItemScores(metric=metric, ids=tuple(ids), values=values,
                                           groups=tuple(self.items[i].group or i for i in ids), condition=condition,
                                           failures=tuple(bad))
        return self._scores[key]

    def scores(self, metric: str, condition: str) -> ItemScores:
        """Per-item scores of ``metric`` under ``condition`` (Random: mean over its draws)."""
        from musiceval.metrics.registry import metric_names

        if metric not in metric_names("freeform"):
            raise ValueError(f"unknown metric {metric!r}; choose from {', '.join(metric_names('freeform'))}")
        if condition not in self.texts:
            raise ValueError(f"no candidate texts for condition {condition!r} (have {self.conditions()})")
        key = (metric, condition)
        if key not in self._scores:
            totals: dict[str, list[float]] = {}
            failures: dict[str, ItemFailure] = {}
            for draw in self.texts[condition]:
                ids, cands, refs, bad = self._valid_pairs(condition, draw, metric)
                for f in bad:
                    failures.setdefault(f.item_id, f)
                values = self._score_draw(metric, cands, refs, ids) if ids else np.zeros(0)
                for i, v in zip(ids, values):
                    totals.setdefault(i, []).append(float(v))
            ids = [i for i in totals if i not in failures]
            self._scores[key] = ItemScores(
                metric=metric, ids=tuple(ids), values=np.array([np.mean(totals[i]) for i in ids]),
                groups=tuple(self.items[i].group or i for i in ids), condition=condition,
                failures=tuple(failures.values()),
            )
        return self._scores[key]
