"""``hf:<hub-id-or-dir>``: any transformers audio LM whose processor takes audio with a chat template.

One path for every family: ``AutoConfig`` -> ``AutoProcessor`` (through the family's
``load_processor``) -> the model class (``AutoModelForMultimodalLM`` when it maps
``config.model_type``, else the architecture's own class named in ``config.architectures``) -> chat
template with an audio part -> left-padded batches -> ``generate`` -> ``batch_decode``. The weights
load at the first ``generate`` (config and processor at construction, so a bad spec fails at once):
a run whose answers all come from the response cache never loads them. Per-family
differences live in :mod:`musiceval.models.families` (registered by ``model_type``), never in
branches here. Checked offline on tiny random checkpoints of Qwen2-Audio, Audio Flamingo 3, Music
Flamingo, GLM-ASR, Voxtral and the Qwen2.5-Omni and Qwen3-Omni thinkers (:mod:`musiceval.models.tiny`),
each saved and loaded back from disk (``tests/models/test_hf_families.py``).

Load arguments (``--musiceval-model-args`` / ``[model] args``, see :mod:`musiceval.models.args`):
``dtype`` (default bf16 on CUDA, fp32 on CPU; ``auto`` = the checkpoint's), ``device_map``
(``auto`` spreads one model over the visible GPUs; then ``device`` is ignored), ``revision``,
``attn_implementation`` and ``trust_remote_code`` go to ``from_pretrained``. ``trust_remote_code``
is off unless given: a checkpoint's own Python code runs only on explicit opt-in.

- Device: ``device=`` (the pytest fixture gives each xdist worker ``cuda:<i>``), else ``cuda``
  when available, else CPU.
- Audio: mono float32 at the processor's ``sampling_rate``; ``max_audio_seconds`` is the family's
  limit (the Whisper window, or the processor's ``max_audio_len`` where it windows audio itself).
  ``chunk_seconds=`` (a number, or ``"max"`` for that limit) answers per chunk instead of
  truncating.
- Decoding: :class:`~musiceval.models.base.GenerationSettings` (greedy unless sampling); ``seed``
  seeds torch before every batch. ``batch_size`` requests per ``generate`` call.
- ``num_threads=``: CPU threads torch may use during ``generate`` (restored afterwards).
- A batch that raises is retried one request at a time: one bad request is one failed ``Answer``.

Weights load from safetensors (a legacy ``.bin`` only with ``weights_only=True``, by transformers).
Offline: ``HF_HUB_OFFLINE=1`` and a local directory
(``huggingface-cli download Qwen/Qwen2-Audio-7B-Instruct --local-dir DIR``).
"""
from __future__ import annotations

import gc
import hashlib
from pathlib import Path
from typing import Any, Sequence

from musiceval.models.base import Answer, GenerationSettings, ModelSpecError, Request, adapter_repr, register_model
from musiceval.models.families import FamilyHooks, family_for

__all__ = ["HFModel", "from_pretrained_kwargs", "model_class_name"]

_DTYPES = {"bfloat16", "float16", "float32"}


def _revision(name: str, config: Any, requested: str | None) -> str:
    commit = getattr(config, "_commit_hash", None)
    if commit:
        return str(commit)
    path = Path(name)
    if path.is_dir():  # a local directory: the config plus each weight file's name and size
        h = hashlib.sha256((path / "config.json").read_bytes() if (path / "config.json").exists() else b"")
        for f in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
            h.update(f"{f.name}:{f.stat().st_size}".encode())
        return h.hexdigest()[:16]
    return requested or "unknown"


def from_pretrained_kwargs(*, dtype: Any, device_map: str | None, revision: str | None,
                           attn_implementation: str | None, trust_remote_code: bool) -> dict[str, Any]:
    """The keyword arguments the model's ``from_pretrained`` gets (only those set)."""
    kwargs: dict[str, Any] = {"dtype": dtype, "trust_remote_code": bool(trust_remote_code)}
    if device_map is not None:
        kwargs["device_map"] = device_map
    if revision is not None:
        kwargs["revision"] = revision
    if attn_implementation is not None:
        kwargs["attn_implementation"] = attn_implementation
    return kwargs


def model_class_name(config: Any, family: FamilyHooks) -> str:
    """The family's class, else ``AutoModelForMultimodalLM``'s class for the type, else the class
    ``config.architectures[0]`` names (a name: the class itself is imported with the weights)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES

    name = family.model_class or MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES.get(config.model_type)
    if name is None and getattr(config, "architectures", None):
        name = config.architectures[0]
    if not name:
        raise _no_class(config)
    return name


def _no_class(config: Any) -> ModelSpecError:
    return ModelSpecError(
        f"no transformers class for model type {config.model_type!r} (architectures: "
        f"{getattr(config, 'architectures', None)}); serve it with vLLM and use openai-compatible:, "
        "pass trust_remote_code=true if the checkpoint ships its own code, or register an adapter "
        "(docs/evaluate-your-model.md)"
    )


def _load_error(rest: str, exc: Exception) -> ModelSpecError:
    hint = (" (the checkpoint ships its own code: pass trust_remote_code=true only if you trust it)"
            if "trust_remote_code" in str(exc) else "")
    return ModelSpecError(
        f"cannot load {rest!r} ({exc}){hint}; download it with "
        f"`huggingface-cli download {rest} --local-dir DIR` and pass --model hf:DIR "
        "(set HF_HUB_OFFLINE=1 offline)"
    )


@register_model("hf")
class HFModel:
    """A transformers audio LM loaded with ``from_pretrained`` and prompted through its chat template."""

    chunk_seconds: float | None = None

    def __init__(
        self,
        rest: str,
        *,
        device: str | None = None,
        dtype: str | None = None,
        device_map: str | None = None,
        revision: str | None = None,
        attn_implementation: str | None = None,
        trust_remote_code: bool = False,
        batch_size: int = 4,
        chunk_seconds: float | str | None = None,
        system_prompt: str | None = None,
        num_threads: int | None = None,
        **_: Any,
    ) -> None:
        if not rest:
            raise ModelSpecError("hf needs a model: hf:<hub id or local directory>, e.g. hf:Qwen/Qwen2-Audio-7B-Instruct")
        import torch
        from transformers import AutoConfig

        self.torch = torch
        self.spec = f"hf:{rest}"
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if dtype is not None and dtype != "auto" and dtype not in _DTYPES:
            raise ModelSpecError(f"dtype={dtype!r}: choose auto, {', '.join(sorted(_DTYPES))}")
        if dtype is None:
            dtype = "bfloat16" if (device_map or self.device).startswith(("cuda", "auto", "balanced", "sequential")) \
                and torch.cuda.is_available() else "float32"
        torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
        hub = {"trust_remote_code": bool(trust_remote_code), **({"revision": revision} if revision else {})}
        try:
            config = AutoConfig.from_pretrained(rest, **hub)
            self.family = family_for(config.model_type)
            self.processor = self.family.load_processor(rest, **hub)
        except (OSError, ValueError, KeyError) as exc:
            if isinstance(exc, ModelSpecError):
                raise
            raise _load_error(rest, exc) from exc
        self._rest, self._config, self._device_map = rest, config, device_map
        self._class_name = model_class_name(config, self.family)
        self.load_kwargs = from_pretrained_kwargs(dtype=torch_dtype, device_map=device_map, revision=revision,
                                                  attn_implementation=attn_implementation,
                                                  trust_remote_code=trust_remote_code)
        self._model: Any = None
        got, expected = self.family.audio_token_ids(self.processor, config)
        if got != expected:
            # transformers 5 can silently load a tiny fallback vocabulary when files are missing.
            raise ModelSpecError(
                f"{rest!r}: the tokenizer maps the audio token {self.processor.audio_token} to {got} but the "
                f"model expects {expected} (vocabulary of {len(self.processor.tokenizer)} tokens); the tokenizer "
                "files are missing or wrong: re-download the checkpoint"
            )
        tokenizer = getattr(self.processor, "tokenizer", None)
        if tokenizer is not None and hasattr(tokenizer, "padding_side"):
            tokenizer.padding_side = "left"  # decoder-only batching
        fe = getattr(self.processor, "feature_extractor", None)
        self.sample_rate = int(getattr(fe, "sampling_rate", 16_000))
        self.max_audio_seconds = self.family.max_audio_seconds(self.processor)
        if chunk_seconds == "max":
            chunk_seconds = self.max_audio_seconds
        if chunk_seconds is not None and self.max_audio_seconds and not 0 < float(chunk_seconds) <= self.max_audio_seconds:
            raise ModelSpecError(
                f"chunk_seconds={chunk_seconds} must be in (0, {self.max_audio_seconds:g}]: the processor "
                "would silently cut longer chunks (chunk_seconds=max uses the model's limit)"
            )
        self.chunk_seconds = None if chunk_seconds is None else float(chunk_seconds)
        self.batch_size = max(1, int(batch_size))
        self.system_prompt = system_prompt
        self.num_threads = num_threads
        self.revision = _revision(rest, config, revision)
        self.model_type = config.model_type

    @property
    def model(self) -> Any:
        """The weights, loaded at first use: a run whose answers all come from the response cache
        never loads them (the cache key needs only the config's revision)."""
        if self._model is None:
            self._model = self._load_weights()
        return self._model

    def _load_weights(self) -> Any:
        import transformers

        cls = getattr(transformers, self._class_name, None)
        if cls is None:
            raise _no_class(self._config)
        try:
            model = cls.from_pretrained(self._rest, **self.load_kwargs)
        except (OSError, ValueError, KeyError) as exc:
            raise _load_error(self._rest, exc) from exc
        if self._device_map is None:
            model.to(self.device)
        else:
            self.device = str(model.device)
        model.eval()
        self.family.prepare_model(model)
        return model

    # -- prompts -----------------------------------------------------------------------------
    def _conversation(self, request: Request) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = []
        if request.audio is not None:
            content.append(self.family.audio_part())
        content.append({"type": "text", "text": request.prompt})
        conversation = [{"role": "user", "content": content}]
        if self.system_prompt:
            conversation.insert(0, {"role": "system", "content": self.system_prompt})
        return conversation

    def generate_kwargs(self, settings: GenerationSettings) -> dict[str, Any]:
        """What ``model.generate`` gets besides the inputs."""
        gen: dict[str, Any] = {"max_new_tokens": int(settings.max_tokens), "do_sample": settings.sampling}
        if settings.sampling:
            gen["temperature"] = float(settings.temperature)
        return self.family.generate_kwargs(gen)

    def _run_batch(self, batch: Sequence[Request], settings: GenerationSettings) -> list[str]:
        torch = self.torch
        audios = [r.audio for r in batch if r.audio is not None]
        inputs = self.family.encode(self.processor, [self._conversation(r) for r in batch], audios, self.sample_rate)
        inputs = inputs.to(self.model.device)
        for name, value in list(inputs.items()):  # audio features in the model's dtype
            if hasattr(value, "is_floating_point") and value.is_floating_point():
                inputs[name] = value.to(self.model.dtype)
        torch.manual_seed(settings.seed)
        with torch.inference_mode():
            out = self.model.generate(**inputs, **self.generate_kwargs(settings))
        if isinstance(out, tuple):  # (text ids, audio) from models that can also speak
            out = out[0]
        new_tokens = out[:, inputs["input_ids"].shape[1] :]
        return [t.strip() for t in self.processor.batch_decode(new_tokens, skip_special_tokens=True)]

    def generate(self, requests: Sequence[Request], settings: GenerationSettings) -> list[Answer]:
        self.model  # noqa: B018 - a checkpoint that cannot load fails the call here, not each request
        if self.num_threads is None:
            return self._generate(requests, settings)
        previous = self.torch.get_num_threads()
        self.torch.set_num_threads(self.num_threads)
        try:
            return self._generate(requests, settings)
        finally:
            self.torch.set_num_threads(previous)

    def _generate(self, requests: Sequence[Request], settings: GenerationSettings) -> list[Answer]:
        answers: list[Answer] = []
        meta = {"model_type": self.model_type, "batch_size": self.batch_size}
        for start in range(0, len(requests), self.batch_size):
            batch = list(requests[start : start + self.batch_size])
            try:
                answers.extend(Answer(text=t, meta=meta) for t in self._run_batch(batch, settings))
                continue
            except Exception:  # noqa: BLE001 - isolate the failing request below
                pass
            for request in batch:
                try:
                    answers.append(Answer(text=self._run_batch([request], settings)[0], meta=meta))
                except Exception as exc:  # noqa: BLE001 - one bad item never aborts the batch
                    answers.append(Answer(error=f"{type(exc).__name__}: {exc}"[:500]))
        return answers

    __repr__ = adapter_repr  # never the spec's credentials

    def close(self) -> None:
        """Drop the weights and return GPU memory to the driver."""
        self._model = None
        gc.collect()
        if self.device.startswith("cuda") and self.torch.cuda.is_available():
            self.torch.cuda.empty_cache()
