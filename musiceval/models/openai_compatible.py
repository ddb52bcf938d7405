"""``openai-compatible:<base_url>#<model>``: any OpenAI-compatible chat endpoint that takes audio.

Typical servers: vLLM serving Qwen2-Audio (``vllm serve Qwen/Qwen2-Audio-7B-Instruct``, which
spreads the model over GPUs and nodes while the suite only sends requests), or a hosted audio chat
model. Example: ``--model openai-compatible:http://localhost:8000/v1#Qwen/Qwen2-Audio-7B-Instruct``.

- Audio travels as base64 16-bit PCM WAV in an ``input_audio`` content part, before the text part;
  requests without audio send the text only.
- Requests run concurrently on asyncio, at most ``concurrency`` in flight (``--concurrency N``).
- Each request has a ``timeout`` (seconds). Timeouts, connection errors, 429 and 5xx answers are
  retried up to ``max_retries`` times with exponential backoff and jitter (``Retry-After`` is
  honoured, capped at ``max_backoff``); other 4xx answers fail at once. A request that still fails
  gives an ``Answer`` with the error: it never aborts the batch.
- The API key comes from the environment only: ``$MUSICEVAL_OPENAI_API_KEY``, else
  ``$OPENAI_API_KEY``, else the placeholder ``EMPTY`` that local vLLM servers accept. It is never
  part of the spec, the cache, a response, an error message or a log line.
"""
from __future__ import annotations

import asyncio
import base64
import io
import os
import random
import threading
import time
from typing import Any, Sequence

import numpy as np

from musiceval.models.base import Answer, GenerationSettings, ModelSpecError, Request, register_model
from musiceval.redact import redact

__all__ = ["OpenAICompatibleModel", "encode_wav_base64", "API_KEY_ENV_VARS"]

API_KEY_ENV_VARS = ("MUSICEVAL_OPENAI_API_KEY", "OPENAI_API_KEY")
RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


def encode_wav_base64(audio: np.ndarray, sample_rate: int) -> str:
    """Mono float32 -> base64 of a 16-bit PCM WAV file."""
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, np.clip(np.asarray(audio, dtype=np.float32), -1.0, 1.0), sample_rate, format="WAV", subtype="PCM_16")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _api_key() -> str:
    for name in API_KEY_ENV_VARS:
        value = os.environ.get(name)
        if value:
            return value
    return "EMPTY"


@register_model("openai-compatible")
class OpenAICompatibleModel:
    """Send each request to ``<base_url>/chat/completions`` of an OpenAI-compatible server."""

    def __init__(
        self,
        rest: str,
        *,
        concurrency: int = 8,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
        sample_rate: int = 16_000,
        max_audio_seconds: float | None = None,
        chunk_seconds: float | None = None,
        revision: str | None = None,
        **_: Any,
    ) -> None:
        base_url, sep, model = rest.rpartition("#")
        if not sep or not base_url or not model:
            raise ModelSpecError(
                f"openai-compatible spec {redact(rest)!r} must be <base_url>#<model>, e.g. "
                "openai-compatible:http://localhost:8000/v1#Qwen/Qwen2-Audio-7B-Instruct"
            )
        try:
            import openai  # noqa: F401
        except ImportError as exc:
            raise ModelSpecError("the openai-compatible adapter needs the openai package: pip install 'musiceval[llm]'") from exc
        self.base_url, self.model_name = base_url, model
        self.spec = f"openai-compatible:{rest}"
        self.revision = revision or model
        self.concurrency = max(1, int(concurrency))
        self.timeout, self.max_retries = float(timeout), max(0, int(max_retries))
        self.backoff, self.max_backoff = float(backoff), float(max_backoff)
        self.sample_rate = int(sample_rate)
        self.max_audio_seconds, self.chunk_seconds = max_audio_seconds, chunk_seconds

    # -- one request -------------------------------------------------------------------------
    def _messages(self, request: Request) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = []
        if request.audio is not None:
            data = encode_wav_base64(request.audio, self.sample_rate)
            content.append({"type": "input_audio", "input_audio": {"data": data, "format": "wav"}})
        content.append({"type": "text", "text": request.prompt})
        return [{"role": "user", "content": content}]

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(max(float(retry_after), 0.0), self.max_backoff)
            except ValueError:
                pass
        return min(self.backoff * (2**attempt), self.max_backoff) * (0.5 + random.random() / 2)

    async def _one(self, client: Any, sem: asyncio.Semaphore, request: Request, settings: GenerationSettings, key: str) -> Answer:
        import openai

        messages = self._messages(request)
        last = "no attempt made"
        async with sem:
            for attempt in range(self.max_retries + 1):
                t0 = time.perf_counter()
                retry_after = None
                try:
                    completion = await client.chat.completions.create(
                        model=self.model_name,
                        messages=messages,
                        temperature=settings.temperature,
                        max_tokens=settings.max_tokens,
                        seed=settings.seed,
                    )
                    text = completion.choices[0].message.content if completion.choices else None
                    if not isinstance(text, str):
                        return Answer(error="server returned no message content")
                    return Answer(text=text, meta={"latency_s": round(time.perf_counter() - t0, 4), "attempts": attempt + 1})
                except openai.APIStatusError as exc:
                    last = f"HTTP {exc.status_code}: {exc.message}"
                    if exc.status_code == 401:
                        last += f" (set {' or '.join(API_KEY_ENV_VARS)})"
                    if exc.status_code not in RETRY_STATUS:
                        break
                    retry_after = exc.response.headers.get("retry-after")
                except openai.APITimeoutError:
                    last = f"timed out after {self.timeout:g} s"
                except openai.APIConnectionError as exc:
                    last = f"connection error: {exc}"
                except (openai.APIError, ValueError, TypeError, AttributeError) as exc:  # malformed answer
                    last = f"unusable response ({type(exc).__name__}: {exc})"
                    break
                if attempt < self.max_retries:
                    await asyncio.sleep(self._delay(attempt, retry_after))
        if key != "EMPTY":
            last = last.replace(key, "***")
        return Answer(error=redact(f"{self.base_url}: {last}")[:500])

    async def _agenerate(self, requests: Sequence[Request], settings: GenerationSettings) -> list[Answer]:
        import openai

        key = _api_key()
        sem = asyncio.Semaphore(self.concurrency)
        client = openai.AsyncOpenAI(base_url=self.base_url, api_key=key, max_retries=0, timeout=self.timeout)
        try:
            return list(await asyncio.gather(*(self._one(client, sem, r, settings, key) for r in requests)))
        finally:
            await client.close()

    def generate(self, requests: Sequence[Request], settings: GenerationSettings) -> list[Answer]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._agenerate(requests, settings))
        # Called from inside a running event loop (a notebook): run ours on a helper thread.
        result: list[list[Answer]] = []
        thread = threading.Thread(target=lambda: result.append(asyncio.run(self._agenerate(requests, settings))))
        thread.start()
        thread.join()
        return result[0]

    def close(self) -> None:
        pass
