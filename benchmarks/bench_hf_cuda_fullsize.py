"""hf: at a real model's size: a full-size random checkpoint from the published config, on one GPU.

    python benchmarks/bench_hf_cuda_fullsize.py --full-size qwen2_audio [--dtypes bfloat16 float16]
        [--clips 10 30] [--batch-size 1 8 32] [--try-batch 64 128 256] [--max-tokens 32]
        [--stages build,bench,largest,shards] [--dir DIR] [--json OUT] [--budget-s S]
        [--shrink] [--device cuda|cpu] [--smoke]

(also ``python benchmarks/bench_hf_cuda.py --full-size qwen2_audio ...``, which hands over here.)

Without hub access: the checkpoint is built from the family's published ``config.json`` (for
``qwen2_audio``, Qwen2-Audio-7B's, written out below: 8.4 billion parameters, so the compute and
memory are those of the real model) with random weights, made on the GPU in bfloat16 and saved to
``--dir`` (``save_pretrained``), then loaded back through ``load_model("hf:<dir>", dtype=...)``,
the product path a real checkpoint takes. The tokenizer is synthetic (word level, no download):
it covers the whole 156,032-token vocabulary, with the special tokens at the real tokenizer's ids
(``<|AUDIO|>`` = 151646), so every id the random model generates decodes. The checkpoint's
generation config has no end-of-sequence id, so every answer is exactly ``--max-tokens`` new
tokens on both paths (the rows report the mean actually produced).

Stages (``--stages``, each recorded in the JSON even when it fails or is skipped; run in the order
build, bench of the first dtype with largest, shards, bench of the other dtypes):

- ``build``: the random checkpoint (seconds to build and to save, parameters, bytes on disk);
- ``bench``: per dtype one load (timed), then per clip length (``--clips`` seconds of 16 kHz
  noise, a different clip per request) and batch size: requests/s and peak GPU memory
  (``torch.cuda.max_memory_allocated`` and ``max_memory_reserved`` after a reset) of
  ``adapter.generate`` (the adapter's batch size is an attribute: changed between rows without a
  reload), then the same requests through a plain ``processor(...)`` + ``model.generate`` loop
  written here on the same loaded weights (what a user writes from a model card), as a ratio;
  ``--requests-at-1`` requests at batch size 1, two batches at larger sizes; one warm-up request
  per load, untimed;
- ``largest``: for the first dtype, one batch at each ``--try-batch`` size in turn through the
  adapter until the GPU runs out of memory (the largest that fits, per clip length);
- ``shards`` (shards and kill/resume): ``musiceval generate`` on the checkpoint through the real CLI
  (``--limit`` items of the bundled manifest x conditions correct and noise, batch size 1, as
  ``tests/models/test_generate_on_gpu.py``): two ``--shard`` processes at once on the one GPU,
  joined by ``musiceval merge``, against an unsharded run; and a run killed mid-way (SIGKILL once
  ``--kill-after`` answers are cached, a torn line appended), then resumed: nothing answered
  twice, nothing lost, the torn line ignored, the resumed answers equal the unsharded run's.

A failing row is recorded with its error and the rest go on; the JSON (``--json``) is rewritten
after every row. ``--budget-s`` skips what would start after that many seconds. Needs a CUDA GPU
(exits 2 saying so) unless ``--shrink`` (the same architecture with 2 layers and small widths,
for a dry run on CPU: ``--device cpu``). ``--smoke``: shrunk, on CPU, float32, 10 s clips, batch
sizes 1 and 2, 4 tokens, the ``build`` and ``bench`` stages. vLLM (the ``openai-compatible:`` adapter
against a local vLLM server) is not measured here: see docs/performance.md.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from musiceval.models import GenerationSettings, Request, load_model  # noqa: E402

MANIFEST = ROOT / "musiceval" / "evals" / "audio" / "manifest.jsonl"
SAMPLE_RATE = 16_000
PROMPT = "what is the music ?"

# Qwen2-Audio-7B's published config.json (https://huggingface.co/Qwen/Qwen2-Audio-7B/blob/main/config.json;
# Qwen2-Audio-7B-Instruct's has the same sizes). The hub file leaves hidden_size, num_hidden_layers,
# num_attention_heads and num_key_value_heads of its Qwen2 text config to transformers' Qwen2 defaults
# of the time (4096, 32, 32, 32: the Qwen-7B decoder of the Qwen2-Audio technical report,
# arXiv:2407.10759); they are written out here so that no later default can change them. The audio
# encoder is Whisper-large-v3's (128 mel bins, 32 layers of width 1280, a 30 s window).
QWEN2_AUDIO_7B = {
    "audio_config": {"model_type": "qwen2_audio_encoder", "num_mel_bins": 128, "encoder_layers": 32,
                     "encoder_attention_heads": 20, "encoder_ffn_dim": 5120, "d_model": 1280,
                     "activation_function": "gelu", "scale_embedding": False, "max_source_positions": 1500},
    "text_config": {"model_type": "qwen2", "vocab_size": 156032, "hidden_size": 4096, "num_hidden_layers": 32,
                    "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 11008,
                    "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 10000,
                    "sliding_window": 32768, "bos_token_id": 151643, "eos_token_id": 151645},
    "audio_token_index": 151646,
}
# the real tokenizer's special ids (Qwen2-Audio's tokenizer_config.json)
QWEN2_AUDIO_SPECIAL = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645,
                       "<|AUDIO|>": 151646, "<|audio_bos|>": 151647, "<|audio_eos|>": 151648}
# --shrink: the same architecture and vocabulary, 2 layers and small widths (a CPU dry run)
SHRINK = {"audio_config": {"encoder_layers": 2, "encoder_attention_heads": 2, "encoder_ffn_dim": 64, "d_model": 32},
          "text_config": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                          "num_key_value_heads": 4, "intermediate_size": 128}}


def _word_tokenizer(vocab_size: int, special: dict[str, int]) -> Any:
    """A word-level tokenizer over ``vocab_size`` ids: the prompt's words, filler words ``w<id>``
    everywhere else, and ``special`` at the given ids; every id decodes to a word or a special."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = "system user assistant You are a helpful the music is what ? . , [UNK]".split()
    vocab: dict[str, int] = {}
    taken = set(special.values())
    ids = (i for i in range(vocab_size) if i not in taken)
    for word in words:
        vocab[word] = next(ids)
    for i in ids:
        vocab[f"w{i}"] = i
    vocab.update(special)
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    names = list(special)
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="<|endoftext|>",
                                   eos_token="<|im_end|>", additional_special_tokens=names[1:])


def qwen2_audio_parts(shrink: bool = False) -> tuple[dict, Any, Any]:
    """Qwen2-Audio-7B's config (``--shrink``: 2 layers, small widths) and a processor for it:
    Whisper features in the real 30 s window, the synthetic tokenizer, Qwen2-Audio-Instruct's chat
    template. Returns ``(the config's values, the config, the processor)``."""
    from transformers import Qwen2AudioConfig, Qwen2AudioProcessor, WhisperFeatureExtractor

    spec = json.loads(json.dumps(QWEN2_AUDIO_7B))
    if shrink:
        for part, values in SHRINK.items():
            spec[part].update(values)
    tokenizer = _word_tokenizer(spec["text_config"]["vocab_size"], QWEN2_AUDIO_SPECIAL)
    processor = Qwen2AudioProcessor(
        feature_extractor=WhisperFeatureExtractor(feature_size=128, sampling_rate=SAMPLE_RATE, chunk_length=30),
        tokenizer=tokenizer, chat_template=Qwen2AudioProcessor.default_chat_template.fget(None))
    return spec, Qwen2AudioConfig(**spec), processor


def build_qwen2_audio(directory: Path, *, shrink: bool, device: str, seed: int = 0) -> dict:
    """Qwen2-Audio-7B's architecture with random weights (bf16, made on ``device``), saved to ``directory``."""
    import torch
    from transformers import Qwen2AudioForConditionalGeneration

    t0 = time.perf_counter()
    spec, config, processor = qwen2_audio_parts(shrink)
    torch.manual_seed(seed)
    with torch.device(device):
        model = Qwen2AudioForConditionalGeneration._from_config(config, dtype=torch.bfloat16)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    built = time.perf_counter() - t0
    n_params = sum(p.numel() for p in model.parameters())
    # no end-of-sequence id: every answer runs to max_new_tokens, on the adapter and the plain loop alike
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = QWEN2_AUDIO_SPECIAL["<|endoftext|>"]
    t1 = time.perf_counter()
    model.save_pretrained(directory)
    processor.save_pretrained(directory)
    saved = time.perf_counter() - t1
    del model
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    size = sum(f.stat().st_size for f in directory.glob("*.safetensors"))
    return {"family": "qwen2_audio", "config": spec, "shrunk": shrink, "parameters": n_params,
            "build_s": round(built, 2), "save_s": round(saved, 2), "safetensors_bytes": size, "dir": str(directory)}


FULL_SIZE: dict[str, Callable[..., dict]] = {"qwen2_audio": build_qwen2_audio}


class _Abort(BaseException):
    """Raised from inside ``model.generate`` so that the adapter's per-request retry (which would
    turn one out-of-memory batch into hundreds of single requests) does not run during a benchmark."""


class _Recorder:
    """Wraps the loaded model's ``generate``: new tokens per answer, batch sizes, errors as _Abort."""

    def __init__(self, model: Any, torch: Any) -> None:
        self.original, self.torch, self.model = model.generate, torch, model
        self.new_tokens: list[int] = []
        self.batches: list[int] = []
        model.generate = self  # an instance attribute: the adapter and the plain loop both call it

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            out = self.original(*args, **kwargs)
        except self.torch.cuda.OutOfMemoryError as exc:
            raise _Abort(f"OutOfMemoryError: {str(exc)[:300]}") from None
        except Exception as exc:  # noqa: BLE001 - recorded by the row
            raise _Abort(f"{type(exc).__name__}: {str(exc)[:300]}") from None
        ids = out[0] if isinstance(out, tuple) else out
        n_in = kwargs["input_ids"].shape[1]
        new = ids[:, n_in:]
        eos = self.model.generation_config.eos_token_id
        for row in new.tolist():
            n = len(row)
            if eos is not None:
                stops = [eos] if isinstance(eos, int) else list(eos)
                n = next((k + 1 for k, t in enumerate(row) if t in stops), n)
            self.new_tokens.append(n)
        self.batches.append(int(ids.shape[0]))
        return out

    def reset(self) -> None:
        self.new_tokens, self.batches = [], []


def plain_loop(model: Any, processor: Any, requests: list[Request], batch_size: int, max_new_tokens: int) -> list[str]:
    """The loop a user writes from a model card: chat template, processor, generate, decode."""
    import torch

    processor.tokenizer.padding_side = "left"
    texts: list[str] = []
    for start in range(0, len(requests), batch_size):
        batch = requests[start : start + batch_size]
        conversations = [[{"role": "user", "content": [{"type": "audio"}, {"type": "text", "text": r.prompt}]}]
                         for r in batch]
        prompts = [processor.apply_chat_template(c, add_generation_prompt=True, tokenize=False) for c in conversations]
        inputs = processor(text=prompts, audio=[r.audio for r in batch], sampling_rate=SAMPLE_RATE,
                           return_tensors="pt", padding=True).to(model.device)
        inputs["input_features"] = inputs["input_features"].to(model.dtype)
        with torch.inference_mode():
            out = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False)
        texts += [t.strip() for t in processor.batch_decode(out[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)]
    return texts


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        import torch

        self.args, self.torch = args, torch
        self.cuda = args.device.startswith("cuda")
        self.started = time.monotonic()
        self.result: dict[str, Any] = {"machine": machine(torch, self.cuda), "argv": sys.argv[1:], "stages": {},
                                       "loads": [], "rows": [], "largest": []}
        self.pools: dict[int, list[Request]] = {}
        self.reserve_s = 0.0

    # -- bookkeeping ---------------------------------------------------------------------------
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def left(self) -> float:
        return float("inf") if self.args.budget_s is None else self.args.budget_s - self.elapsed()

    def wait_s(self) -> float:
        """How long to wait for a child process: to the end of the budget and a minute more."""
        return min(600.0, max(60.0, self.left() + 60.0))

    def save(self) -> None:
        self.result["elapsed_s"] = round(self.elapsed(), 1)
        if self.args.json:
            tmp = self.args.json.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.result, indent=1), encoding="utf-8")
            tmp.replace(self.args.json)

    def log(self, text: str) -> None:
        print(f"[{self.elapsed():6.1f}s] {text}", flush=True)

    def requests(self, clip_s: int, n: int) -> list[Request]:
        pool = self.pools.setdefault(clip_s, [])
        rng = np.random.default_rng(clip_s * 1000 + len(pool))
        while len(pool) < n:
            audio = (rng.standard_normal(clip_s * SAMPLE_RATE) * 0.1).astype(np.float32)
            pool.append(Request(f"c{clip_s}-{len(pool)}", PROMPT, audio))
        return pool[:n]

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def reset_peak(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()
            self.torch.cuda.reset_peak_memory_stats()

    def peaks(self) -> dict[str, float | None]:
        if not self.cuda:
            return {"peak_allocated_mib": None, "peak_reserved_mib": None}
        return {"peak_allocated_mib": round(self.torch.cuda.max_memory_allocated() / 2**20),
                "peak_reserved_mib": round(self.torch.cuda.max_memory_reserved() / 2**20)}

    def free(self) -> None:
        gc.collect()
        if self.cuda:
            self.torch.cuda.empty_cache()

    # -- timed calls -----------------------------------------------------------------------------
    def timed(self, fn: Callable[[], list[str]], recorder: _Recorder, n: int) -> dict:
        recorder.reset()
        self.reset_peak()
        t0 = time.perf_counter()
        texts = fn()
        self.sync()
        seconds = time.perf_counter() - t0
        tokens = recorder.new_tokens
        return {"requests_per_s": round(n / seconds, 3), "seconds": round(seconds, 3), **self.peaks(),
                "mean_new_tokens": round(float(np.mean(tokens)), 2) if tokens else None,
                "batches": sorted(set(recorder.batches)), "texts": texts}

    def product(self, adapter: Any, recorder: _Recorder, requests: list[Request], settings: GenerationSettings) -> dict:
        def call() -> list[str]:
            answers = adapter.generate(requests, settings)
            bad = [a.error for a in answers if not a.ok]
            if bad:
                raise RuntimeError(f"{len(bad)} failed answers: {bad[0]}")
            return [a.text for a in answers]

        return self.timed(call, recorder, len(requests))

    # -- stages ----------------------------------------------------------------------------------
    def stage(self, name: str, fn: Callable[[], Any], needs_s: float = 0.0) -> Any:
        if name.split()[0] not in self.args.stages:
            return None
        if self.left() < needs_s:
            self.result["stages"][name] = {"status": "skipped", "reason": f"budget: {self.left():.0f} s left, needs ~{needs_s:.0f}"}
            self.log(f"stage {name}: skipped (budget)")
            self.save()
            return None
        self.log(f"stage {name}: start")
        t0 = time.perf_counter()
        try:
            out = fn()
            self.result["stages"][name] = {"status": "ok", "seconds": round(time.perf_counter() - t0, 1)}
        except BaseException as exc:  # noqa: BLE001 - the next stage still runs
            if isinstance(exc, KeyboardInterrupt):
                raise
            self.result["stages"][name] = {"status": "error", "seconds": round(time.perf_counter() - t0, 1),
                                           "error": f"{type(exc).__name__}: {exc}"[:2000],
                                           "traceback": traceback.format_exc()[-3000:]}
            self.log(f"stage {name}: ERROR {type(exc).__name__}: {str(exc)[:500]}")
            out = None
        self.free()
        self.save()
        return out

    def build(self) -> None:
        directory = self.args.dir
        directory.mkdir(parents=True, exist_ok=True)
        info = FULL_SIZE[self.args.full_size](directory, shrink=self.args.shrink, device=self.args.device)
        self.result["build"] = info
        self.log(f"built {info['parameters'] / 1e9:.3f} B parameters in {info['build_s']} s, saved "
                 f"{info['safetensors_bytes'] / 2**30:.2f} GiB in {info['save_s']} s to {directory}")

    def bench_dtype(self, dtype: str, largest: bool) -> None:
        args = self.args
        settings = GenerationSettings(temperature=0.0, max_tokens=args.max_tokens, seed=0)
        t0 = time.perf_counter()
        adapter = load_model(f"hf:{args.dir}", dtype=dtype, batch_size=1, device=args.device)
        model = adapter.model  # loads the weights
        self.sync()
        load_s = time.perf_counter() - t0
        load = {"dtype": dtype, "load_s": round(load_s, 2), "model_dtype": str(model.dtype).removeprefix("torch."),
                "device": str(model.device),
                "weights_mib": round(self.torch.cuda.memory_allocated() / 2**20) if self.cuda else None,
                "eos_token_id": model.generation_config.eos_token_id}
        self.result["loads"].append(load)
        self.log(f"loaded {dtype} in {load_s:.1f} s ({load['weights_mib']} MiB on the GPU)")
        recorder = _Recorder(model, self.torch)
        try:
            adapter.generate(self.requests(args.clips[0], 1), settings)  # warm-up, untimed
            for clip in args.clips:
                for bs in args.batch_size:
                    n = args.requests_at_1 if bs == 1 else 2 * bs
                    self.row(adapter, recorder, model, dtype, clip, bs, n, settings)
                if largest:
                    self.largest(adapter, recorder, dtype, clip, settings)
        finally:
            adapter.close()
            del model, recorder, adapter
            self.free()

    def row(self, adapter: Any, recorder: _Recorder, model: Any, dtype: str, clip: int, bs: int, n: int,
            settings: GenerationSettings) -> None:
        row: dict[str, Any] = {"dtype": dtype, "clip_s": clip, "batch_size": bs, "n_requests": n}
        if self.left() < 5:
            row["error"] = "skipped: budget"
            self.result["rows"].append(row)
            self.save()
            return
        try:
            requests = self.requests(clip, n)
            adapter.batch_size = bs
            got = self.product(adapter, recorder, requests, settings)
            texts = got.pop("texts")
            row.update({f"adapter_{k}": v for k, v in got.items()})
            self.log(f"{dtype} {clip:>2} s b={bs:<3} adapter {got['requests_per_s']:8.2f} req/s, peak "
                     f"{got['peak_allocated_mib']} MiB, {got['mean_new_tokens']} new tokens")
            plain = self.timed(lambda: plain_loop(model, adapter.processor, requests, bs, self.args.max_tokens),
                               recorder, n)
            plain_texts = plain.pop("texts")
            row.update({f"plain_{k}": v for k, v in plain.items()})
            row["ratio_adapter_to_plain"] = round(got["requests_per_s"] / plain["requests_per_s"], 3)
            row["answers_equal_to_plain"] = sum(a == b for a, b in zip(texts, plain_texts))
            row["first_answer"] = texts[0][:80]
            self.log(f"{dtype} {clip:>2} s b={bs:<3} plain   {plain['requests_per_s']:8.2f} req/s, peak "
                     f"{plain['peak_allocated_mib']} MiB; ratio {row['ratio_adapter_to_plain']}, "
                     f"equal answers {row['answers_equal_to_plain']}/{n}")
        except BaseException as exc:  # noqa: BLE001 - one row never loses the others
            if isinstance(exc, KeyboardInterrupt):
                raise
            row["error"] = f"{type(exc).__name__}: {exc}"[:1000]
            self.log(f"{dtype} {clip} s b={bs}: ERROR {row['error'][:300]}")
        self.free()
        self.result["rows"].append(row)
        print(table_line(self.result["build"], row, self.result["machine"]["device"]), flush=True)
        self.save()

    def largest(self, adapter: Any, recorder: _Recorder, dtype: str, clip: int, settings: GenerationSettings) -> None:
        for bs in self.args.try_batch:
            entry: dict[str, Any] = {"dtype": dtype, "clip_s": clip, "batch_size": bs}
            if self.left() - self.reserve_s < 20:  # the time the shards stage needs is kept for it
                entry["error"] = "skipped: budget"
                self.result["largest"].append(entry)
                self.save()
                break
            try:
                adapter.batch_size = bs
                got = self.product(adapter, recorder, self.requests(clip, bs), settings)
                got.pop("texts")
                entry.update({"fits": True, **got})
                self.log(f"largest {dtype} {clip} s b={bs}: fits, {got['requests_per_s']:.2f} req/s, peak "
                         f"{got['peak_allocated_mib']} MiB allocated / {got['peak_reserved_mib']} reserved")
            except BaseException as exc:  # noqa: BLE001
                if isinstance(exc, KeyboardInterrupt):
                    raise
                entry.update({"fits": False, "error": f"{type(exc).__name__}: {exc}"[:600], **self.peaks()})
                self.log(f"largest {dtype} {clip} s b={bs}: does not fit ({entry['error'][:160]})")
            self.free()
            self.result["largest"].append(entry)
            self.save()
            if not entry["fits"]:
                break
        pool = self.pools.get(clip, [])
        del pool[max(self.args.batch_size + [self.args.requests_at_1]) * 2:]  # host memory back

    def bench(self, dtype: str) -> Callable[[], None]:
        return lambda: self.bench_dtype(dtype, largest=(dtype == self.args.dtypes[0] and "largest" in self.args.stages))

    # -- the CLI at this size --------------------------------------------------------------------
    def cli(self, cache: Path, *extra: str, max_tokens: int | None = None) -> list[str]:
        a = self.args
        return [sys.executable, "-m", "musiceval", "generate", "--model", f"hf:{a.dir}", "--dataset", str(MANIFEST),
                "--conditions", "correct,noise", "--limit", str(a.limit), "--cache-dir", str(cache), "--device",
                a.device, "--no-progress", "--batch-size", "1", "--max-tokens", str(max_tokens or a.cli_max_tokens),
                "--model-args", f"dtype={a.dtypes[0]}", *extra]

    def shards_and_resume(self) -> None:
        """Phase 1, at once on the one GPU: shard 0/2, shard 1/2, and the run to be killed.
        Phase 2, at once: the unsharded run and the killed run resumed."""
        work = Path(tempfile.mkdtemp(prefix="fullsize-cli-"))
        env = {**os.environ, "HF_HUB_OFFLINE": "1",
               "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        out: dict[str, Any] = {"limit": self.args.limit, "conditions": "correct,noise", "dtype": self.args.dtypes[0],
                               "max_tokens": self.args.cli_max_tokens, "batch_size": 1}
        self.result["cli"] = out
        total = 2 * self.args.limit
        killed_cmd = self.cli(work / "killed")
        responses = work / "killed" / "responses" / "responses.jsonl"
        t0 = time.perf_counter()
        shards = [subprocess.Popen(self.cli(work / f"s{i}", "--shard", f"{i}/2"), env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True) for i in range(2)]
        with open(work / "killed.log", "wb") as err:
            victim = subprocess.Popen(killed_cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
            deadline = time.monotonic() + 300
            while victim.poll() is None and time.monotonic() < deadline and \
                    (not responses.exists() or len(responses.read_bytes().splitlines()) < self.args.kill_after):
                time.sleep(0.005)
            out["killed_while_running"] = victim.poll() is None
            if victim.poll() is None:
                victim.send_signal(signal.SIGKILL)
            victim.wait(timeout=60)
        n_before = len(responses.read_bytes().splitlines()) if responses.exists() else 0
        out["lines_before_kill"] = n_before
        if not out["killed_while_running"]:
            out["killed_log"] = (work / "killed.log").read_text(errors="replace")[-2000:]
        self.log(f"killed run: {n_before} of {total} answers cached when killed "
                 f"({'killed mid-way' if out['killed_while_running'] else 'it had already ended'})")
        shard_outs = [p.communicate(timeout=self.wait_s()) for p in shards]
        out["phase1_s"] = round(time.perf_counter() - t0, 1)
        out["shard_returncodes"] = [p.returncode for p in shards]
        out["shard_summaries"] = [_summary(o) for o, _ in shard_outs]
        if any(p.returncode for p in shards):
            out["shard_stderr"] = [e[-1500:] for _, e in shard_outs]
        self.log(f"shards: exit {out['shard_returncodes']}, answered "
                 f"{[s.get('n_generated') if s else None for s in out['shard_summaries']]} in {out['phase1_s']} s")
        self.save()
        with open(responses, "ab") as f:  # the worst case: a line torn by the kill
            f.write(b'{"key": "deadbeef", "text": "tor')
        t1 = time.perf_counter()
        whole = subprocess.Popen(self.cli(work / "whole"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        resumed = subprocess.Popen(killed_cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        (w_out, w_err), (r_out, r_err) = whole.communicate(timeout=self.wait_s()), resumed.communicate(timeout=self.wait_s())
        out["phase2_s"] = round(time.perf_counter() - t1, 1)
        out["whole_returncode"], out["resumed_returncode"] = whole.returncode, resumed.returncode
        out["whole_summary"], out["resumed_summary"] = _summary(w_out), _summary(r_out)
        if whole.returncode or resumed.returncode:
            out["whole_stderr"], out["resumed_stderr"] = w_err[-1500:], r_err[-1500:]
        merged = subprocess.run([sys.executable, "-m", "musiceval", "merge", str(work / "s0" / "responses"),
                                 str(work / "s1" / "responses"), "--out", str(work / "merged")],
                                env=env, capture_output=True, text=True, timeout=300)
        out["merge_returncode"] = merged.returncode
        whole_texts = _texts(work / "whole" / "responses" / "responses.jsonl")
        merged_texts = _texts(work / "merged" / "responses.jsonl")
        resumed_texts = _texts(responses)
        keys = [json.loads(line)["key"] for line in responses.read_text().splitlines()[: 10 * total]
                if line.strip().endswith("}")]
        summary = out["resumed_summary"] or {}
        out["checks"] = {
            "shards_answered_all": sum((s or {}).get("n_generated", 0) for s in out["shard_summaries"]) == total,
            "merged_equals_unsharded": bool(whole_texts) and merged_texts == whole_texts,
            "killed_mid_way": out["killed_while_running"] and 0 < n_before < total,
            "resume_answers_only_the_rest": summary.get("n_cached") == n_before
                                            and summary.get("n_generated") == total - n_before,
            "torn_line_ignored_and_named": summary.get("cache_lines_ignored") == 1 and "torn last line" in r_err,
            "no_duplicates_none_lost": len(keys) == len(set(keys)) == total,
            "resumed_equals_unsharded": bool(whole_texts) and resumed_texts == whole_texts,
        }
        out["n_answers"] = {"whole": len(whole_texts), "merged": len(merged_texts), "resumed": len(resumed_texts)}
        self.log(f"shards + resume: {json.dumps(out['checks'])}; phase 2 {out['phase2_s']} s")
        if not all(out["checks"].values()):
            raise RuntimeError(f"a check failed: {out['checks']}")


def _summary(stdout: str) -> dict | None:
    lines = [line for line in stdout.strip().splitlines() if line.startswith("{")]
    try:
        return json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        return None


def _texts(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return {r["key"]: r["text"] for r in rows if "key" in r}


def machine(torch: Any, cuda: bool) -> dict:
    import transformers

    info: dict[str, Any] = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
                            "python": platform.python_version(), "torch": torch.__version__,
                            "transformers": transformers.__version__, "cpus": os.cpu_count()}
    if cuda:
        props = torch.cuda.get_device_properties(0)
        info.update(device=torch.cuda.get_device_name(0), gpu_mib=round(props.total_memory / 2**20),
                    tf32_matmul=torch.backends.cuda.matmul.allow_tf32)
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20)
            info["driver"] = smi.stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            info["driver"] = None
    else:
        info["device"] = "cpu"
    return info


def table_line(build: dict, row: dict, device: str) -> str:
    name = build["family"] + (" (shrunk)" if build["shrunk"] else "")
    if "error" in row:
        return f"| {name} | {device} | {row['dtype']} | {row['clip_s']} s | {row['batch_size']} | ERROR: {row['error'][:120]} |"
    peak = row.get("adapter_peak_allocated_mib")
    return (f"| {name} | {device} | {row['dtype']} | {row['clip_s']} s | {row['batch_size']} | "
            f"{row['adapter_requests_per_s']:.3f} | {'' if peak is None else peak} | {row['adapter_mean_new_tokens']} | "
            f"{row['plain_requests_per_s']:.3f} | {row['ratio_adapter_to_plain']:.2f} | "
            f"{row['answers_equal_to_plain']}/{row['n_requests']} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full-size", default="qwen2_audio", choices=sorted(FULL_SIZE), metavar="FAMILY",
                    help=f"the family whose published config is built ({', '.join(sorted(FULL_SIZE))})")
    ap.add_argument("--dtypes", nargs="+", default=["bfloat16", "float16"], choices=["bfloat16", "float16", "float32"])
    ap.add_argument("--clips", type=int, nargs="+", default=[10, 30], help="audio seconds per request (at most 30)")
    ap.add_argument("--batch-size", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--try-batch", type=int, nargs="*", default=[64, 128, 256], help="largest that fits: tried in turn")
    ap.add_argument("--requests-at-1", type=int, default=4, help="requests timed at batch size 1 (larger sizes: 2 batches)")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--stages", type=lambda s: s.split(","), default=["build", "bench", "largest", "shards"])
    ap.add_argument("--dir", type=Path, default=None, help="where the checkpoint is written (default: a temporary folder)")
    ap.add_argument("--device", default=None, help="cuda (default when present) or cpu (with --shrink)")
    ap.add_argument("--shrink", action="store_true", help="2 layers, small widths: a dry run on CPU")
    ap.add_argument("--budget-s", type=float, default=None, help="skip what would start after this many seconds")
    ap.add_argument("--limit", type=int, default=6, help="manifest items in the shards/resume runs (x 2 conditions)")
    ap.add_argument("--cli-max-tokens", type=int, default=16, help="tokens per answer in the shards/resume runs")
    ap.add_argument("--kill-after", type=int, default=4, help="answers cached before the resume run is killed")
    ap.add_argument("--json", type=Path, default=None, help="write every row here (rewritten after each)")
    ap.add_argument("--smoke", action="store_true", help="shrunk, CPU, float32, 10 s clips, batch sizes 1 "
                    "and 2, 4 tokens, the build and bench stages")
    args = ap.parse_args(argv)
    import torch

    if args.smoke:
        args.shrink, args.device, args.dtypes, args.clips = True, "cpu", ["float32"], [10]
        args.batch_size, args.try_batch, args.requests_at_1, args.max_tokens = [1, 2], [], 2, 4
        args.stages = ["build", "bench"]
    cuda = torch.cuda.is_available()
    args.device = args.device or ("cuda" if cuda or not args.shrink else "cpu")
    if args.device.startswith("cuda") and not cuda:
        print("bench_hf_cuda_fullsize: no CUDA GPU visible (torch.cuda.is_available() is False); "
              "--shrink --device cpu runs the shrunk dry run", file=sys.stderr)
        return 2
    if not args.device.startswith("cuda") and not args.shrink:
        print("bench_hf_cuda_fullsize: the full-size model on CPU would take hours; pass --shrink for the CPU dry run",
              file=sys.stderr)
        return 2
    if any(c > 30 or c <= 0 for c in args.clips):
        ap.error("--clips: 1 to 30 s (Qwen2-Audio's window)")
    own_dir = args.dir is None
    if own_dir:
        args.dir = Path(tempfile.mkdtemp(prefix="fullsize-"))
    bench = Bench(args)
    m = bench.result["machine"]
    print(f"torch {m['torch']}, transformers {m['transformers']}, {m['device']}"
          + (f" ({m['gpu_mib']} MiB, driver {m.get('driver')})" if cuda and args.device.startswith("cuda") else ""),
          flush=True)
    print("| model | device | dtype | clip | batch | adapter req/s | peak GPU MiB | mean new tokens | plain loop req/s | "
          "adapter / plain | answers = plain |", flush=True)
    print("|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    bench.stage("build", bench.build)
    if "build" not in args.stages and not (args.dir / "config.json").exists():
        print(f"bench_hf_cuda_fullsize: no checkpoint in {args.dir}; add the build stage", file=sys.stderr)
        return 2
    if bench.result["stages"].get("build", {}).get("status") not in (None, "ok"):
        bench.save()
        return 1
    # the first dtype (and the largest batch), then the CLI checks, then the other dtypes
    shards_s = 110 if cuda else 0
    bench.reserve_s = shards_s if "shards" in args.stages else 0
    if "bench" in args.stages:
        bench.stage(f"bench {args.dtypes[0]}", bench.bench(args.dtypes[0]), needs_s=60 if cuda else 0)
    bench.reserve_s = 0
    bench.stage("shards", bench.shards_and_resume, needs_s=shards_s)
    for dtype in args.dtypes[1:] if "bench" in args.stages else []:
        bench.stage(f"bench {dtype}", bench.bench(dtype), needs_s=45 if cuda else 0)
    bench.save()
    if own_dir:
        import shutil

        shutil.rmtree(args.dir, ignore_errors=True)
    failed = [n for n, s in bench.result["stages"].items() if s["status"] == "error"]
    failed += [f"row {r['dtype']} {r['clip_s']} s b={r['batch_size']}" for r in bench.result["rows"] if "error" in r]
    if failed:
        print(f"bench_hf_cuda_fullsize: failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
