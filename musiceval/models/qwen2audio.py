"""``hf:<hub-id-or-dir>``: Qwen2-Audio through transformers.

Loads ``Qwen2AudioForConditionalGeneration`` and its ``AutoProcessor`` (Whisper feature extractor,
tokenizer, chat template) with ``from_pretrained``, so a hub id
(``hf:Qwen/Qwen2-Audio-7B-Instruct``) and a local directory (``hf:/models/qwen2-audio``) take the
same path. Weights load from safetensors (transformers loads any legacy ``.bin`` with
``torch.load(weights_only=True)``); this module never unpickles a checkpoint itself.

- Device: ``device=`` option, else ``cuda`` when available, else CPU; bf16 on CUDA, fp32 on CPU.
- Prompt: the processor's chat template with one user turn ``[audio, text]`` (the audio part is
  left out for requests without audio), ``add_generation_prompt=True``.
- Audio: mono float32 at the feature extractor's rate (16 kHz); the Whisper front end takes 30 s,
  which is ``max_audio_seconds`` (pass ``chunk_seconds=30`` to answer per chunk instead of
  truncating).
- Decoding: greedy when ``temperature == 0``, else sampling at that temperature; ``seed`` seeds
  torch before every batch, so a batch's answers depend only on its requests and settings.
- ``num_threads=``: CPU threads torch may use during ``generate`` (restored afterwards); 1 is far
  faster for tiny models on a busy machine.
- A batch that raises is retried one request at a time, so one bad request becomes one failed
  ``Answer`` and never aborts the batch.

Offline: with the hub unreachable set ``HF_HUB_OFFLINE=1`` and pass a local directory
(``huggingface-cli download Qwen/Qwen2-Audio-7B-Instruct --local-dir DIR`` on a connected machine).
"""
from __future__ import annotations

import gc
import hashlib
from pathlib import Path
from typing import Any, Sequence

from musiceval.models.base import Answer, GenerationSettings, ModelSpecError, Request, register_model

__all__ = ["Qwen2AudioModel"]


def _revision(name: str, config: Any) -> str:
    commit = getattr(config, "_commit_hash", None)
    if commit:
        return str(commit)
    path = Path(name)
    if path.is_dir():  # a local directory: the config plus each weight file's name and size
        h = hashlib.sha256((path / "config.json").read_bytes() if (path / "config.json").exists() else b"")
        for f in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
            h.update(f"{f.name}:{f.stat().st_size}".encode())
        return h.hexdigest()[:16]
    return "unknown"


@register_model("hf")
class Qwen2AudioModel:
    """Qwen2-Audio (or a checkpoint with the same processor and chat template) via transformers."""

    chunk_seconds: float | None = None

    def __init__(
        self,
        rest: str,
        *,
        device: str | None = None,
        batch_size: int = 4,
        chunk_seconds: float | None = None,
        system_prompt: str | None = None,
        num_threads: int | None = None,
        **_: Any,
    ) -> None:
        if not rest:
            raise ModelSpecError("hf needs a model: hf:<hub id or local directory>, e.g. hf:Qwen/Qwen2-Audio-7B-Instruct")
        import torch
        from transformers import AutoProcessor, Qwen2AudioForConditionalGeneration

        self.torch = torch
        self.spec = f"hf:{rest}"
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = torch.bfloat16 if self.device.startswith("cuda") else torch.float32
        try:
            self.processor = AutoProcessor.from_pretrained(rest)
            self.model = Qwen2AudioForConditionalGeneration.from_pretrained(rest, dtype=dtype)
        except (OSError, ValueError) as exc:
            raise ModelSpecError(
                f"cannot load Qwen2-Audio from {rest!r} ({exc}); download it with "
                f"`huggingface-cli download {rest} --local-dir DIR` and pass --model hf:DIR "
                "(set HF_HUB_OFFLINE=1 offline)"
            ) from exc
        self.model.to(self.device).eval()
        tokenizer = self.processor.tokenizer
        audio_id = tokenizer.convert_tokens_to_ids(self.processor.audio_token)
        if audio_id != self.model.config.audio_token_id:
            # transformers 5 can silently load a tiny fallback vocabulary when files are missing.
            raise ModelSpecError(
                f"{rest!r}: the tokenizer maps {self.processor.audio_token} to {audio_id} but the model "
                f"expects {self.model.config.audio_token_id} (vocabulary of {len(tokenizer)} tokens); "
                "the tokenizer files are missing or wrong: re-download the checkpoint"
            )
        tokenizer.padding_side = "left"  # decoder-only batching
        fe = self.processor.feature_extractor
        self.sample_rate = int(fe.sampling_rate)
        self.max_audio_seconds = float(getattr(fe, "chunk_length", 30))
        if chunk_seconds is not None and not 0 < chunk_seconds <= self.max_audio_seconds:
            raise ModelSpecError(
                f"chunk_seconds={chunk_seconds} must be in (0, {self.max_audio_seconds:g}]: the feature "
                "extractor would silently cut longer chunks"
            )
        self.chunk_seconds = chunk_seconds
        self.batch_size = max(1, int(batch_size))
        self.system_prompt = system_prompt
        self.num_threads = num_threads
        self.revision = _revision(rest, self.model.config)

    def _prompt_text(self, request: Request) -> str:
        content: list[dict[str, Any]] = []
        if request.audio is not None:
            content.append({"type": "audio", "audio_url": "input"})
        content.append({"type": "text", "text": request.prompt})
        conversation = [{"role": "user", "content": content}]
        if self.system_prompt:
            conversation.insert(0, {"role": "system", "content": self.system_prompt})
        return self.processor.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)

    def _run_batch(self, batch: Sequence[Request], settings: GenerationSettings) -> list[str]:
        torch = self.torch
        texts = [self._prompt_text(r) for r in batch]
        audios = [r.audio for r in batch if r.audio is not None]
        kwargs: dict[str, Any] = {"text": texts, "return_tensors": "pt", "padding": True}
        if audios:
            kwargs.update(audio=audios, sampling_rate=self.sample_rate)
        inputs = self.processor(**kwargs).to(self.device)
        if "input_features" in inputs:
            inputs["input_features"] = inputs["input_features"].to(self.model.dtype)
        torch.manual_seed(settings.seed)
        gen: dict[str, Any] = {"max_new_tokens": int(settings.max_tokens)}
        if settings.temperature > 0:
            gen.update(do_sample=True, temperature=float(settings.temperature))
        else:
            gen.update(do_sample=False)
        with torch.inference_mode():
            out = self.model.generate(**inputs, **gen)
        new_tokens = out[:, inputs["input_ids"].shape[1] :]
        return [t.strip() for t in self.processor.batch_decode(new_tokens, skip_special_tokens=True)]

    def generate(self, requests: Sequence[Request], settings: GenerationSettings) -> list[Answer]:
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
        for start in range(0, len(requests), self.batch_size):
            batch = list(requests[start : start + self.batch_size])
            try:
                answers.extend(Answer(text=t) for t in self._run_batch(batch, settings))
                continue
            except Exception:  # noqa: BLE001 - isolate the failing request below
                pass
            for request in batch:
                try:
                    answers.append(Answer(text=self._run_batch([request], settings)[0]))
                except Exception as exc:  # noqa: BLE001 - one bad item never aborts the batch
                    answers.append(Answer(error=f"{type(exc).__name__}: {exc}"[:500]))
        return answers

    def close(self) -> None:
        """Drop the weights and return GPU memory to the driver."""
        self.model = None
        gc.collect()
        if self.device.startswith("cuda") and self.torch.cuda.is_available():
            self.torch.cuda.empty_cache()


def build_tiny_checkpoint(directory: str | Path, *, seed: int = 0) -> Path:
    """Write a tiny, randomly initialised Qwen2-Audio checkpoint (about 50 k parameters).

    It exercises the real code path (processor, chat template, audio tokens, generate) offline on
    CPU; its answers are noise, so it checks plumbing, never a score. Loads with
    ``--model hf:<directory>``. Also: ``python -m musiceval.models.qwen2audio DIR``.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import (
        PreTrainedTokenizerFast,
        Qwen2AudioConfig,
        Qwen2AudioEncoderConfig,
        Qwen2AudioForConditionalGeneration,
        Qwen2AudioProcessor,
        Qwen2Config,
        WhisperFeatureExtractor,
    )

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|audio_bos|>", "<|AUDIO|>", "<|audio_eos|>"]
    # no instrument, key, note or number words: its random answers cannot hit a fixture's truth
    words = ("system user assistant You are a helpful Audio the music is in this piece sound of it "
             "what which describe , . ?").split()
    vocab = {t: i for i, t in enumerate(special + ["[UNK]"] + words)}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="[UNK]", pad_token="<|endoftext|>", eos_token="<|im_end|>",
        additional_special_tokens=special[1:],
    )
    processor = Qwen2AudioProcessor(
        # a 5 s window (the real model's is 30 s) keeps CPU feature extraction fast
        feature_extractor=WhisperFeatureExtractor(feature_size=128, sampling_rate=16_000, chunk_length=5),
        tokenizer=tokenizer,
        chat_template=Qwen2AudioProcessor.default_chat_template.fget(None),  # Qwen2-Audio-Instruct's
    )
    config = Qwen2AudioConfig(
        audio_config=Qwen2AudioEncoderConfig(
            d_model=16, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=32, num_mel_bins=128,
            max_source_positions=250,  # 500 mel frames = the 5 s window
        ).to_dict(),
        text_config=Qwen2Config(
            vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
            num_key_value_heads=1, intermediate_size=64, max_position_embeddings=4096,
        ).to_dict(),
        audio_token_index=vocab["<|AUDIO|>"],
    )
    torch.manual_seed(seed)
    model = Qwen2AudioForConditionalGeneration(config)
    model.generation_config.pad_token_id = vocab["<|endoftext|>"]
    model.generation_config.eos_token_id = vocab["<|im_end|>"]
    directory = Path(directory)
    model.save_pretrained(directory)
    processor.save_pretrained(directory)
    return directory


if __name__ == "__main__":
    import sys

    print(build_tiny_checkpoint(sys.argv[1] if len(sys.argv) > 1 else "tiny-qwen2-audio"))
