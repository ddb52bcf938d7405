"""``openai-compatible:<base_url>#<model>``: any OpenAI-compatible chat endpoint that takes audio.

Typical servers: vLLM serving Qwen2-Audio (``vllm serve Qwen/Qwen2-Audio-7B-Instruct``, which
spreads the model over GPUs and nodes while the suite only sends requests), or a hosted audio chat
model. Example: ``--model openai-compatible:http://localhost:8000/v1#Qwen/Qwen2-Audio-7B-Instruct``.

- Before the first request the adapter asks each server ``GET <base_url>/models`` (vLLM answers
  with the served model names) and refuses to start, in one line, when the base URL lacks ``/v1``
  (``...: got HTTP 404 at /models; did you mean http://host:8000/v1?``) or the model is not
  served (the line lists the served names). An unreachable server is not refused here: its
  requests fail one by one with the reason. ``check_models=False`` skips the check.
- Audio travels as base64 16-bit PCM WAV, before the text part, in the content part vLLM's
  OpenAI server accepts: ``input_audio`` (``{"data": b64, "format": "wav"}``, the default) or,
  with ``audio_part="audio_url"``, ``{"url": "data:audio/wav;base64,..."}``. Requests without
  audio send the text only.
- Replicas: ``<url1>,<url2>,...#<model>`` (or ``base_urls=[...]``) balances requests over several
  servers (vLLM data-parallel replicas, one per node or GPU group): each request goes to the
  replica with a free slot, at most ``concurrency`` in flight per replica; a replica that refuses
  connections rests ``max_backoff`` seconds, so retries go to the others. ``throughput`` (after each ``generate``) reports requests, seconds,
  requests/s and requests per replica; each answer's meta names its ``replica`` (an index).
- Requests run concurrently on asyncio, at most ``concurrency`` in flight per replica
  (``--concurrency N``). The event loop runs on one thread the adapter owns, with one HTTP client
  per replica for the adapter's life, so connections stay open from one ``generate`` call (one
  block of requests) to the next; ``close()`` closes them. ``generate`` may be called from any
  thread, a running event loop (a notebook) included.
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

from musiceval.models.base import Answer, GenerationSettings, ModelSpecError, Request, adapter_repr, register_model
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
        base_urls: Sequence[str] | None = None,
        audio_part: str = "input_audio",
        check_models: bool = True,
        **_: Any,
    ) -> None:
        base_url, sep, model = rest.rpartition("#")
        if not sep or not (base_url or base_urls) or not model:
            raise ModelSpecError(
                f"openai-compatible spec {redact(rest)!r} must be <base_url>#<model>, e.g. "
                "openai-compatible:http://localhost:8000/v1#Qwen/Qwen2-Audio-7B-Instruct "
                "(several replicas: <url1>,<url2>#<model>)"
            )
        if audio_part not in ("input_audio", "audio_url"):
            raise ModelSpecError(f"audio_part={audio_part!r}: choose input_audio or audio_url")
        try:
            import openai  # noqa: F401
        except ImportError as exc:
            raise ModelSpecError("the openai-compatible adapter needs the openai package: pip install 'musiceval[llm]'") from exc
        urls = list(base_urls) if base_urls else [u.strip() for u in base_url.split(",") if u.strip()]
        self.base_urls = [u.rstrip("/") for u in urls]
        self.base_url, self.model_name = self.base_urls[0], model
        self.spec = f"openai-compatible:{rest}"
        self.audio_part = audio_part
        self.throughput: dict[str, Any] = {}
        self.revision = revision or model
        self.concurrency = max(1, int(concurrency))
        self.timeout, self.max_retries = float(timeout), max(0, int(max_retries))
        self.backoff, self.max_backoff = float(backoff), float(max_backoff)
        self.sample_rate = int(sample_rate)
        self.max_audio_seconds, self.chunk_seconds = max_audio_seconds, chunk_seconds
        self.unreachable: dict[str, str] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._clients: list[Any] | None = None
        self._lock = threading.Lock()
        if check_models:
            for url in self.base_urls:
                self._check_models(url)

    # -- GET /models --------------------------------------------------------------------------
    def _check_models(self, url: str) -> None:
        """Refuse a base URL without ``/v1`` or a model the server does not serve, in one line."""
        import json
        import urllib.error
        import urllib.request

        get = urllib.request.Request(f"{url}/models", headers={"Authorization": f"Bearer {_api_key()}"})
        try:
            with urllib.request.urlopen(get, timeout=min(self.timeout, 10.0)) as response:  # noqa: S310 - user's server
                status, body = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, body = exc.code, b""
        except (OSError, ValueError) as exc:  # down or still starting: its requests will say so, one by one
            self.unreachable[url] = f"{type(exc).__name__}: {exc}"
            return
        if status == 404:
            hint = (f"did you mean {url}/v1?" if not url.endswith("/v1") else
                    "is this an OpenAI-compatible server (vLLM: `vllm serve MODEL`)? pass check_models=false to skip this check")
            raise ModelSpecError(f"{url}: got HTTP 404 at /models; {hint}")
        if status == 401:
            raise ModelSpecError(f"{url}: got HTTP 401 at /models; set {' or '.join(API_KEY_ENV_VARS)}")
        if status != 200:
            self.unreachable[url] = f"HTTP {status} at /models"
            return
        try:
            served = [str(m["id"]) for m in json.loads(body)["data"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise ModelSpecError(f"{url}: /models did not answer an OpenAI model list ({exc}); "
                                 "is this an OpenAI-compatible server?") from None
        if self.model_name not in served:
            raise ModelSpecError(
                f"{url}: model {self.model_name!r} is not served; served: {', '.join(served) or '(none)'} "
                f"(pass openai-compatible:{url}#<served name>; vLLM's name is --served-model-name or the model path)")

    # -- one request -------------------------------------------------------------------------
    def _messages(self, request: Request) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = []
        if request.audio is not None:
            data = encode_wav_base64(request.audio, self.sample_rate)
            if self.audio_part == "audio_url":
                content.append({"type": "audio_url", "audio_url": {"url": f"data:audio/wav;base64,{data}"}})
            else:
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

    async def _one(self, clients: list[Any], slots: asyncio.Queue, request: Request, settings: GenerationSettings,
                   key: str, counts: list[int]) -> Answer:
        import openai
        from openai.types.chat import ChatCompletion

        messages: list[dict[str, Any]] | None = None
        last = "no attempt made"
        url = self.base_url
        temperature = settings.temperature if settings.sampling else 0.0
        for attempt in range(self.max_retries + 1):
            t0 = time.perf_counter()
            retry_after = None
            replica = await slots.get()  # a free slot of some replica: bounded, balanced
            url = self.base_urls[replica]
            cooldown = 0.0
            try:
                if messages is None:  # encoded once a slot is free, so encoding overlaps other requests' waits
                    messages = self._messages(request)
                # the client's own POST (auth, timeouts, status errors) without the per-call
                # TypedDict transform of the messages, which costs ~3 ms of CPU per request
                completion = await clients[replica].post(
                    "/chat/completions", cast_to=ChatCompletion,
                    body={"model": self.model_name, "messages": messages, "temperature": temperature,
                          "max_tokens": settings.max_tokens, "seed": settings.seed},
                )
                text = completion.choices[0].message.content if completion.choices else None
                if not isinstance(text, str):
                    return Answer(error="server returned no message content")
                counts[replica] += 1
                return Answer(text=text, meta={"latency_s": round(time.perf_counter() - t0, 4), "attempts": attempt + 1,
                                               "replica": replica})
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
                cooldown = self.max_backoff  # a replica that is down rests; the retry goes elsewhere
            except (openai.APIError, ValueError, TypeError, AttributeError) as exc:  # malformed answer
                last = f"unusable response ({type(exc).__name__}: {exc})"
                break
            finally:
                if cooldown and len(self.base_urls) > 1:
                    asyncio.get_running_loop().call_later(cooldown, slots.put_nowait, replica)
                else:
                    slots.put_nowait(replica)
            if attempt < self.max_retries:
                await asyncio.sleep(self._delay(attempt, retry_after))
        if key != "EMPTY":
            last = last.replace(key, "***")
        return Answer(error=redact(f"{url}: {last}")[:500])

    def _tls(self) -> Any:
        """One TLS context for every ``generate`` call: building one reads the CA bundle (~50-90 ms),
        which a fresh client per call would pay again for each block of requests."""
        if getattr(self, "_tls_context", None) is None:
            import ssl

            try:
                import certifi

                self._tls_context = ssl.create_default_context(cafile=certifi.where())
            except ImportError:
                self._tls_context = ssl.create_default_context()
        return self._tls_context

    def _http_clients(self, key: str) -> list[Any]:
        """One client (and connection pool) per replica, made on the adapter's loop and kept."""
        import openai

        if self._clients is None or self._clients[0].api_key != key:
            self._clients = [openai.AsyncOpenAI(base_url=url, api_key=key, max_retries=0, timeout=self.timeout,
                                                http_client=openai.DefaultAsyncHttpxClient(verify=self._tls()))
                             for url in self.base_urls]
        return self._clients

    async def _agenerate(self, requests: Sequence[Request], settings: GenerationSettings) -> list[Answer]:
        key = _api_key()
        slots: asyncio.Queue = asyncio.Queue()
        for _ in range(self.concurrency):  # interleaved, so a burst spreads over the replicas
            for replica in range(len(self.base_urls)):
                slots.put_nowait(replica)
        clients = self._http_clients(key)
        counts = [0] * len(self.base_urls)
        t0 = time.perf_counter()
        answers = list(await asyncio.gather(*(self._one(clients, slots, r, settings, key, counts) for r in requests)))
        elapsed = time.perf_counter() - t0
        self.throughput = {"requests": len(requests), "answered": sum(counts), "seconds": round(elapsed, 4),
                           "requests_per_s": round(len(requests) / elapsed, 3) if elapsed > 0 else None,
                           "per_replica": counts}
        return answers

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        """The adapter's own event loop, on a daemon thread started at the first ``generate``."""
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name="musiceval-openai-compatible",
                                                daemon=True)
                self._thread.start()
            return self._loop

    def generate(self, requests: Sequence[Request], settings: GenerationSettings) -> list[Answer]:
        return asyncio.run_coroutine_threadsafe(self._agenerate(requests, settings), self._event_loop()).result()

    __repr__ = adapter_repr  # never the spec's credentials

    def close(self) -> None:
        """Close the HTTP clients and stop the adapter's event loop (a later ``generate`` starts them again)."""
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None or thread is None:
            return

        async def shut() -> None:
            for client in self._clients or []:
                await client.close()
            self._clients = None

        asyncio.run_coroutine_threadsafe(shut(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
