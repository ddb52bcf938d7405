"""Free-form QA scoring (protocol 1): candidate answers under each condition vs the reference. The
engine of :class:`musiceval.protocols.freeform.FreeformProtocol` and of ``musiceval score freeform``
(:mod:`musiceval.commands.freeform`).

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

:class:`FreeformEvaluation` is the library form, used by ``musiceval/evals/freeform.py``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from musiceval.conditions import random_recorded_responses
from musiceval.data.audio import AudioError, load_audio, resolve_audio_path
from musiceval.data.answers import AnswerSet
from musiceval.data.musicqa import item_references
from musiceval.metrics.lexical import LEXICAL_METRICS, as_text, validate
from musiceval.records import Item, ItemFailure, ItemScores

#: the builtin metrics (every metric registered with musiceval.metrics.registry.register_metric is scored too)
METRICS = LEXICAL_METRICS + ("bertscore", "clap_text", "clap_audio", "sentence_cosine")
EMBEDDING_METRICS = ("bertscore", "clap_text", "clap_audio", "sentence_cosine")
FREEFORM_CONDITIONS = ("correct", "random", "noise", "skyline", "adversarial")


class _MemoryCache:
    """``EmbeddingCache``'s get/put interface over a dict (runs without a cache directory)."""

    def __init__(self) -> None:
        self._store: dict[tuple[str, str], np.ndarray] = {}
        self._shapes: dict[str, tuple[int, ...]] = {}  # only this run's encoders write here

    def get(self, encoder_id: str, text: str) -> np.ndarray | None:
        return self._store.get((encoder_id, text))

    def put(self, encoder_id: str, text: str, vector: np.ndarray) -> None:
        self._store[(encoder_id, text)] = vector

    def row_shape(self, encoder_id: str) -> tuple[int, ...] | None:
        return self._shapes.get(encoder_id)

    def set_row_shape(self, encoder_id: str, shape: tuple[int, ...]) -> None:
        self._shapes[encoder_id] = tuple(shape)


class RowsEncoder:
    """A ``texts -> values`` model with an ``id`` (FENSE's loaders) as a text encoder: ``encode``
    returns one float32 row per text (a column for a scalar per text), so the model's outputs go
    through :func:`~musiceval.encoders.base.embed_distinct` and the embedding cache like any
    encoder's. ``n_encoded`` counts the texts sent to the model."""

    def __init__(self, fn: Any):
        self.fn, self.id, self.n_encoded = fn, str(fn.id), 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        self.n_encoded += len(texts)
        return np.asarray(self.fn(texts), dtype=np.float32).reshape(len(texts), -1)


@dataclass
class Models:
    """Lazily loaded models of the embedding metrics (loaded only when a metric asks)."""

    sentence_encoder: str = "minilm"
    clap: str | None = None
    bertscore_model: str = "minilm"
    bertscore_layers: int = 6
    bertscore_baseline: str | None = None
    cache_dir: str | None = None
    #: an ``EmbeddingCache`` object (e.g. the pytest plugin's, shared by workers); wins over cache_dir
    embedding_cache: Any = None
    _loaded: dict[str, Any] = field(default_factory=dict)
    #: the models that could not be loaded, and why
    _failed: dict[str, Exception] = field(default_factory=dict)

    def _once(self, kind: str, load: Callable[[], Any]) -> Any:
        """``load()``'s model for ``kind``, loaded at the first ask. A model that cannot be loaded
        (its weights or package absent: ``FileNotFoundError``, ``ImportError``) raises the same
        error at every later ask without a second try: a run asks for each model once per metric
        and condition, and each try of an absent hub model asks the hub again (and, offline
        without ``HF_HUB_OFFLINE=1``, waits out its retries)."""
        if kind in self._failed:
            raise self._failed[kind]
        if kind not in self._loaded:
            try:
                self._loaded[kind] = load()
            except (FileNotFoundError, ImportError) as exc:
                self._failed[kind] = exc
                raise
        return self._loaded[kind]

    def cache(self):
        """The on-disk cache when configured, else an in-memory one for this run: either way a
        text shared by several conditions (every reference) is embedded once per run."""
        from musiceval.encoders.embedding_cache import EmbeddingCache

        if self.embedding_cache is None:
            self.embedding_cache = EmbeddingCache(self.cache_dir) if self.cache_dir else _MemoryCache()
        return self.embedding_cache

    def encoder(self, kind: str):
        """The sentence (``"sentence"``) or CLAP (``"clap"``) text encoder. One whose cache id is
        known before loading (the built-in specs: :func:`~musiceval.encoders.lazy.known_encoder_id`)
        loads its model at the first text missing from the cache
        (:class:`~musiceval.encoders.lazy.LazyEncoder`), so a run whose vectors are all cached
        loads none; the others load now, so a missing model is named here."""

        def load():
            from musiceval.encoders.base import load_text_encoder
            from musiceval.encoders.lazy import LazyEncoder, known_encoder_id

            spec = self.sentence_encoder if kind == "sentence" else f"clap:{self.clap or ''}"
            known = known_encoder_id(spec)
            return LazyEncoder(spec, id=known) if known else load_text_encoder(spec)

        return self._once(kind, load)

    @property
    def pools_sentence_vectors(self) -> bool:
        """Whether BERTScore runs on the last layer of sentence cosine's own model (the bundled
        all-MiniLM-L6-v2, layer 6): then the token embeddings BERTScore computes also give sentence
        cosine's vectors (:class:`~musiceval.encoders.bertscore_cache.TokenCachedBERTScorer`'s
        ``pooled_id``), one forward pass per text for both metrics."""
        return self.sentence_encoder == "minilm" and self.bertscore_model == "minilm" and self.bertscore_layers == 6

    def fense(self, kind: str):
        """FENSE's Sentence-BERT (``"fense"``) or error detector (``"fense-error"``), loaded once from
        ``$MUSICEVAL_FENSE_SBERT`` / ``$MUSICEVAL_FENSE_ECHECKER`` or their published names, as an
        encoder (``id``, ``encode``: one row per text; the detector's row is its p(error)) for
        :func:`~musiceval.encoders.base.embed_distinct` and this run's cache."""

        def load():
            from musiceval.metrics import fense_models

            if kind == "fense":
                return RowsEncoder(fense_models.load_sbert(os.environ.get("MUSICEVAL_FENSE_SBERT", fense_models.SBERT_MODEL)))
            return RowsEncoder(fense_models.load_echecker(os.environ.get("MUSICEVAL_FENSE_ECHECKER", fense_models.ECHECKER)))

        return self._once(kind, load)

    def audio_encoder(self):
        """The CLAP encoder of clap_text, which must also carry its audio feature extractor."""
        encoder = self.encoder("clap")
        if getattr(encoder, "feature_extractor", None) is None:
            from musiceval.encoders.clap import CLAP_DOWNLOAD

            raise FileNotFoundError(f"{encoder.id}: no audio feature extractor (preprocessor_config.json) next to the "
                                    f"CLAP weights; clap_audio needs the full model: {CLAP_DOWNLOAD}")
        return encoder

    def bertscorer(self):
        if "bertscore" not in self._loaded:
            from musiceval.encoders.bertscore_cache import lazy_bertscorer, model_fix

            model = self.bertscore_model
            if model == "minilm":
                from musiceval.encoders.sentence import bundled_minilm_path

                model = bundled_minilm_path()
            kwargs: dict[str, Any] = {"model_type": model, "num_layers": self.bertscore_layers}
            if self.bertscore_baseline:
                kwargs.update(lang="en", rescale_with_baseline=True, baseline_path=self.bertscore_baseline)
            try:  # the model loads when a text is missing from the cache: a warm run loads none
                scorer = lazy_bertscorer(**kwargs)
            except OSError as exc:
                raise FileNotFoundError(f"BERTScore model {model!r} not found ({exc.__class__.__name__}); {model_fix(model)}, "
                                        "or use --bertscore-model minilm") from exc
            from musiceval.encoders.bertscore_cache import TokenCachedBERTScorer

            # token embeddings cached per distinct text: each text through the model once, across
            # conditions, metrics and runs (a warm rerun embeds nothing); on the bundled MiniLM's
            # last layer they also give sentence_cosine's vectors, so MiniLM sees each text once
            self._loaded["bertscore"] = TokenCachedBERTScorer(scorer, self.cache(),
                                                              pooled_id=MINILM_ID if self.pools_sentence_vectors else None)
        return self._loaded["bertscore"]

    def describe(self) -> dict[str, Any]:
        clap = self.clap or os.environ.get("MUSICEVAL_CLAP") or "laion/larger_clap_music"
        return {"sentence_cosine": self.sentence_encoder, "clap_text": clap, "clap_audio": clap,
                "bertscore": f"{self.bertscore_model} (layer {self.bertscore_layers}{', rescaled' if self.bertscore_baseline else ''})"}


#: the sentence encoder id of the bundled all-MiniLM-L6-v2 (musiceval.encoders.sentence._load_minilm)
MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
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
                             df_references=self.df_references, item_ids=tuple(item_ids))

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
