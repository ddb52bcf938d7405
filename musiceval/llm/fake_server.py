"""A small OpenAI-compatible ``/v1/chat/completions`` server on 127.0.0.1 for tests, benchmarks
and demos. Nothing here touches the network beyond the loopback interface.

Replies: ``reply(body) -> str`` gives the assistant message for a request body; the default,
:func:`echo_reply`, answers ``echo: <prompt> | audio_bytes=<n>`` (the text of the last user
message and the size of its decoded audio: ``input_audio`` parts, or ``audio_url`` parts holding
a ``data:audio/...;base64,`` URL, the two shapes vLLM's server accepts).

``GET /v1/models`` lists ``served_models`` (default: the model names below plus ``echo``), as
vLLM does; any other GET is HTTP 404. Chat requests are answered whatever the model name.

Misbehaviour, for the clients' error handling:

- ``fail_first=[429, 500, ..]`` answers the next requests with those status codes;
- ``delay_s`` sleeps before every answer (client timeouts); ``latency`` after the checks below
  (a slow but healthy server, for throughput benchmarks);
- ``hold_after=N`` answers N chat requests, then holds every later one until :meth:`release`
  (as a script: ``--hold-after N``, released by SIGUSR1), so a test can stop a client mid-run at
  a known point whatever the machine's speed;
- by model name, per distinct (model, prompt): ``flaky`` HTTP 500 on the first attempt,
  ``ratelimit`` HTTP 429 with ``Retry-After: 0`` on the first attempt, ``stall`` sleeps
  ``stall_s`` (at most 5 s) on the first attempt, ``broken`` always HTTP 503, ``garbage`` HTTP 200
  with a body that is not JSON; a prompt containing ``BAD`` gets HTTP 400.

Recorded: ``requests`` (every request body), ``bodies`` (per request: model, prompt,
audio_bytes, temperature, seed, max_tokens), ``auth_headers``, ``attempts`` per (model, prompt).

Run as a script (``python -m musiceval.llm.fake_server --latency 0.05``) it prints its port and
serves until killed or until ``--max-seconds`` pass, so it always stops by itself.
"""
from __future__ import annotations

import argparse
import base64
import json
import signal
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


SERVED_MODELS = ("echo", "flaky", "ratelimit", "stall", "broken", "garbage")


def _prompt_and_audio(body: dict[str, Any]) -> tuple[str, int]:
    """Text of the last message and the byte count of its base64 ``input_audio``/``audio_url`` parts."""
    messages = body.get("messages") or [{}]
    content = messages[-1].get("content", "")
    if isinstance(content, str):
        return content, 0
    prompt, audio_bytes = "", 0
    for part in content:
        if part.get("type") == "text":
            prompt = part["text"]
        elif part.get("type") == "input_audio":
            audio_bytes += len(base64.b64decode(part["input_audio"]["data"]))
        elif part.get("type") == "audio_url":
            audio_bytes += len(base64.b64decode(part["audio_url"]["url"].split(";base64,", 1)[1]))
    return prompt, audio_bytes


def echo_reply(body: dict[str, Any]) -> str:
    prompt, audio_bytes = _prompt_and_audio(body)
    return f"echo: {prompt} | audio_bytes={audio_bytes}"


class FakeOpenAIServer:
    def __init__(self, reply: Callable[[dict[str, Any]], str] = echo_reply, *, fail_first: list[int] | None = None,
                 delay_s: float = 0.0, latency: float = 0.0, stall_s: float = 2.0,
                 served_models: tuple[str, ...] = SERVED_MODELS, hold_after: int | None = None,
                 max_hold_s: float = 600.0):
        self.reply = reply
        self.served_models = tuple(served_models)
        self.fail_first = list(fail_first or [])
        self.delay_s, self.latency, self.stall_s = delay_s, latency, min(stall_s, 5.0)
        self.hold_after, self.max_hold_s = hold_after, max_hold_s
        self._released = threading.Event()
        self.requests: list[dict[str, Any]] = []
        self.bodies: list[dict[str, Any]] = []
        self.auth_headers: list[str] = []
        #: client (host, port) of each request: one entry per distinct connection the client kept open
        self.connections: Counter[tuple[str, int]] = Counter()
        self.attempts: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        self.httpd: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self.httpd is not None, "server not started"
        return self.httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _answer(self, handler: "BaseHTTPRequestHandler", body: dict[str, Any]) -> None:
        model = body.get("model", "echo")
        prompt, audio_bytes = _prompt_and_audio(body)
        with self._lock:
            self.requests.append(body)
            self.attempts[(model, prompt)] += 1
            attempt = self.attempts[(model, prompt)]
            self.auth_headers.append(handler.headers.get("Authorization", ""))
            self.connections[tuple(handler.client_address[:2])] += 1
            self.bodies.append({"model": model, "prompt": prompt, "audio_bytes": audio_bytes,
                                "temperature": body.get("temperature"), "seed": body.get("seed"),
                                "max_tokens": body.get("max_tokens")})
            status = self.fail_first.pop(0) if self.fail_first else None
            held = self.hold_after is not None and len(self.requests) > self.hold_after
        send = handler._send  # type: ignore[attr-defined]
        if held:
            self._released.wait(self.max_hold_s)
        if self.delay_s:
            time.sleep(self.delay_s)
        if not handler.path.endswith("/chat/completions"):
            return send(404, {"error": {"message": f"no route {handler.path}"}})
        if status is not None:
            return send(status, {"error": {"message": f"simulated {status}", "type": "server_error"}})
        if "BAD" in prompt:
            return send(400, {"error": {"message": "bad request", "type": "invalid"}})
        if model == "garbage":
            return send(200, b"<html>not json</html>")
        if model == "broken":
            return send(503, {"error": {"message": "overloaded"}})
        if model == "flaky" and attempt == 1:
            return send(500, {"error": {"message": "internal"}})
        if model == "ratelimit" and attempt == 1:
            return send(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
        if model == "stall" and attempt == 1:
            time.sleep(self.stall_s)
        if self.latency:
            time.sleep(self.latency)
        send(200, {"id": f"chatcmpl-fake-{len(self.requests)}", "object": "chat.completion", "created": 0, "model": model,
                   "choices": [{"index": 0, "finish_reason": "stop",
                                "message": {"role": "assistant", "content": self.reply(body), "refusal": None}}],
                   "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    def release(self) -> None:
        """Answer the requests held by ``hold_after`` and every later one."""
        self._released.set()

    def start(self) -> "FakeOpenAIServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body go out in two writes; with Nagle's algorithm the body waits for the
            # client's delayed ACK (~40 ms per request). Real servers (uvicorn under vLLM) set TCP_NODELAY too.
            disable_nagle_algorithm = True

            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, payload: dict | bytes, headers: dict | None = None) -> None:
                body = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/") == "/v1/models":
                    return self._send(200, {"object": "list", "data": [
                        {"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in server.served_models]})
                self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                server._answer(self, json.loads(self.rfile.read(length) or b"{}"))

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # the default backlog of 5 refuses bursts of 32 connections
            daemon_threads = True

        self.httpd = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description="a local OpenAI-compatible echo server (prints its port)")
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--max-seconds", type=float, default=600.0)
    ap.add_argument("--hold-after", type=int, default=None,
                    help="answer N chat requests, then hold later ones until the process gets SIGUSR1")
    args = ap.parse_args()
    with FakeOpenAIServer(latency=args.latency, hold_after=args.hold_after, max_hold_s=args.max_seconds) as server:
        signal.signal(signal.SIGUSR1, lambda *_: server.release())
        print(server.port, flush=True)
        time.sleep(args.max_seconds)


if __name__ == "__main__":
    main()
