"""The Music LM protocol, explicit generation settings, and the adapter registry.

A Music LM answers a batch of (audio, prompt) requests with text. Every adapter implements
:class:`MusicLM`:

- ``spec`` (the string it was loaded from) and ``revision`` (a checkpoint hash, served model
  name...): both enter the response-cache key, so a new checkpoint never reuses old answers;
- ``sample_rate``: the rate, in Hz, of the mono float32 waveforms it is given;
- ``max_audio_seconds``: the longest audio one request may carry (``None``: no limit);
- ``chunk_seconds``: when set (60 s in the published setups), audio longer than this is cut into
  chunks and the model answers once per chunk; the factual protocol aggregates chunk answers with
  its "any chunk" / "majority" rules. When ``None``, audio is truncated to ``max_audio_seconds``
  and the response records that it was;
- ``generate(requests, settings) -> list[Answer]``: one :class:`Answer` per request, in order.
  A request that fails gives an ``Answer`` with ``error`` set; it never raises for one item;
- ``close()``: release GPU memory, sockets, threads;
- optionally ``needs_audio = False`` for adapters that never listen (``recorded:``): generation
  then skips decoding audio and keys the cache by item id.

:class:`GenerationSettings` (temperature, max_tokens, seed, do_sample) is passed explicitly on every call and
recorded in every response's ``meta`` and in its cache key.

Adding your own adapter
-----------------------
Register a factory under a spec prefix; ``--model myprefix:anything`` then loads it::

    from musiceval.models import Answer, register_model

    @register_model("mymodel")
    class MyModel:
        sample_rate = 16_000
        max_audio_seconds = 30.0
        chunk_seconds = None

        def __init__(self, rest: str, **options):      # rest = the text after "mymodel:"
            self.spec, self.revision = f"mymodel:{rest}", "v1"

        def generate(self, requests, settings):
            return [Answer(text=my_backend(r.audio, r.prompt, settings.temperature))
                    for r in requests]

        def close(self):
            pass

The module defining it must be imported before ``load_model`` runs: import it in your
``conftest.py``, or expose it under the ``musiceval.models`` entry-point group of your package
(``[project.entry-points."musiceval.models"] mymodel = "mypkg.adapter"``), which :data:`MODELS`
imports the first time an adapter is looked up.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from musiceval.registry import Registry

__all__ = [
    "GenerationSettings",
    "Request",
    "Answer",
    "MusicLM",
    "ModelSpecError",
    "register_model",
    "load_model",
    "registered_prefixes",
    "split_spec",
]

#: Built-in adapters, imported lazily so ``recorded`` never imports torch.
BUILTIN_ADAPTERS = {
    "recorded": "musiceval.models.recorded",
    "hf": "musiceval.models.hf",
    "openai-compatible": "musiceval.models.openai_compatible",
    "text-only": "musiceval.models.text_only",
    "text-only-silence": "musiceval.models.text_only",
}


class ModelSpecError(ValueError):
    """A ``--model`` spec that names no adapter or that the adapter cannot load."""


def adapter_repr(model: Any) -> str:
    """``Adapter(spec='...')`` with the spec's credentials masked: the ``__repr__`` of every
    adapter (pytest prints fixture values, a model among them, when a test fails)."""
    from musiceval.redact import redact

    return f"{type(model).__name__}(spec={redact(str(getattr(model, 'spec', '?')))!r})"


class ModelAnsweredNothing(ValueError):
    """A model that gave no answer to any request (a server that answers nothing, a checkpoint
    that fails every generation): one line naming the model (credentials redacted), how many
    requests failed, the commonest reason and the fix (:func:`musiceval.generate.require_answers`)."""


@dataclass(frozen=True)
class GenerationSettings:
    """Decoding settings, explicit and recorded with every response.

    ``temperature == 0`` means greedy decoding. ``seed`` seeds sampling where the backend allows
    it (transformers: ``torch.manual_seed``; OpenAI-compatible servers: the ``seed`` field).
    ``max_tokens`` is transformers' ``max_new_tokens``. ``do_sample``: ``None`` (the default)
    samples exactly when ``temperature > 0``; ``False`` forces greedy decoding whatever the
    temperature; ``True`` needs ``temperature > 0``. It enters :meth:`as_dict` (response meta
    and cache key) only when set, so caches written before it existed stay valid.
    """

    temperature: float = 0.0
    max_tokens: int = 256
    seed: int = 0
    do_sample: bool | None = None

    def __post_init__(self) -> None:
        if not (self.temperature >= 0.0):
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if int(self.max_tokens) <= 0:
            raise ValueError(f"max_tokens must be positive, got {self.max_tokens}")
        if self.do_sample is not None and not isinstance(self.do_sample, bool):
            raise ValueError(f"do_sample must be true, false or unset, got {self.do_sample!r}")
        if self.do_sample and self.temperature == 0:
            raise ValueError("do_sample=true needs temperature > 0 (temperature 0 is greedy decoding); "
                             "set temperature=1.0 or drop do_sample")

    @property
    def sampling(self) -> bool:
        """Whether decoding samples (``do_sample`` when set, else ``temperature > 0``)."""
        return self.temperature > 0 if self.do_sample is None else self.do_sample

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["do_sample"] is None:
            del d["do_sample"]
        return d


@dataclass(frozen=True, eq=False)
class Request:
    """One question about one (chunk of) audio.

    ``audio`` is mono float32 at the model's ``sample_rate``, or ``None`` for a request without
    audio (the text-only baseline).
    """

    item_id: str
    prompt: str
    audio: np.ndarray | None
    condition: str = "correct"
    chunk: int = 0


@dataclass(frozen=True)
class Answer:
    """A model's answer to one request: ``text``, or ``error`` naming why there is none."""

    text: str | None = None
    error: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None


@runtime_checkable
class MusicLM(Protocol):
    spec: str
    revision: str
    sample_rate: int
    max_audio_seconds: float | None
    chunk_seconds: float | None

    def generate(self, requests: Sequence[Request], settings: GenerationSettings) -> list[Answer]: ...

    def close(self) -> None: ...


#: adapter factories by ``--model`` prefix; the builtin ones are imported when their prefix is used
MODELS: Registry[Callable[..., MusicLM]] = Registry("model adapter", entry_point_group="musiceval.models",
                                                    lazy_modules=BUILTIN_ADAPTERS)


def register_model(prefix: str) -> Callable[[Callable[..., MusicLM]], Callable[..., MusicLM]]:
    """Register an adapter factory (a class or function taking ``(rest, **options)``) for ``prefix``."""
    if not prefix or ":" in prefix:
        raise ValueError(f"model prefix must be non-empty and contain no ':', got {prefix!r}")

    def decorator(factory: Callable[..., MusicLM]) -> Callable[..., MusicLM]:
        MODELS.register(prefix, factory, replace=True)
        return factory

    return decorator


def registered_prefixes() -> list[str]:
    return sorted(MODELS.names())


def split_spec(spec: str) -> tuple[str, str]:
    """``"hf:/models/qwen"`` -> ``("hf", "/models/qwen")``; ``"recorded"`` -> ``("recorded", "")``."""
    spec = spec.strip()
    prefix, _, rest = spec.partition(":")
    return prefix, rest


def load_model(spec: str, **options: Any) -> MusicLM:
    """Build the adapter a ``--model`` spec names.

    Parameters
    ----------
    spec : str
        ``<prefix>:<rest>``, e.g. ``hf:Qwen/Qwen2-Audio-7B-Instruct``,
        ``openai-compatible:http://localhost:8000/v1#qwen2-audio``, ``text-only:hf:/models/q``,
        ``recorded:responses.jsonl``.
    **options
        Passed to the adapter factory (``concurrency=``, ``device=``, ``timeout=``...), including
        the load arguments of :func:`musiceval.models.args.split_model_args` (``dtype``,
        ``device_map``, ``revision``, ``attn_implementation``, ``trust_remote_code``; ``hf:``
        forwards them to ``from_pretrained``). Adapters ignore options they do not know.

    Raises
    ------
    ModelSpecError
        If no adapter is registered under the prefix.
    """
    prefix, rest = split_spec(spec)
    if prefix not in MODELS:
        raise ModelSpecError(
            f"unknown model spec {spec!r}: no adapter registered for prefix {prefix!r}; "
            f"known prefixes: {', '.join(registered_prefixes())} (register your own with "
            "@musiceval.models.register_model)"
        )
    return MODELS.get(prefix)(rest, **options)
