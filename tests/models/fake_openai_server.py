"""A small OpenAI-compatible chat server on 127.0.0.1 for tests and benchmarks (no network).

The model name picks the behaviour, per distinct prompt:

- ``echo``: answers ``echo: <prompt> | audio_bytes=<n>`` at once (after ``latency`` seconds);
- ``flaky``: HTTP 500 on the first attempt, then echo;
- ``ratelimit``: HTTP 429 with ``Retry-After: 0`` on the first attempt, then echo;
- ``stall``: sleeps ``stall_s`` (bounded at 5 s) on the first attempt, then echo;
- ``broken``: always HTTP 503;
- ``garbage``: HTTP 200 with a body that is not JSON;
- any prompt containing ``BAD`` gets HTTP 400.

Run as a script (``python fake_openai_server.py --latency 0.05``) it prints its port and serves
until killed or until ``--max-seconds`` pass, so it always stops by itself.
"""
from __future__ import annotations

import argparse
import base64
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAIServer:
    def __init__(self, *, latency: float = 0.0, stall_s: float = 2.0) -> None:
        self.latency, self.stall_s = latency, min(stall_s, 5.0)
        self.attempts: Counter[tuple[str, str]] = Counter()
        self.auth_headers: list[str] = []
        self.bodies: list[dict] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                req = json.loads(self.rfile.read(length) or b"{}")
                model = req.get("model", "echo")
                prompt, audio_bytes = "", 0
                for part in req["messages"][-1]["content"]:
                    if part.get("type") == "text":
                        prompt = part["text"]
                    elif part.get("type") == "input_audio":
                        audio_bytes = len(base64.b64decode(part["input_audio"]["data"]))
                with server._lock:
                    server.attempts[(model, prompt)] += 1
                    attempt = server.attempts[(model, prompt)]
                    server.auth_headers.append(self.headers.get("Authorization", ""))
                    server.bodies.append({"model": model, "prompt": prompt, "audio_bytes": audio_bytes,
                                          "temperature": req.get("temperature"), "seed": req.get("seed"),
                                          "max_tokens": req.get("max_tokens")})
                if "BAD" in prompt:
                    return self._send(400, {"error": {"message": "bad request", "type": "invalid"}})
                if model == "garbage":
                    body = b"<html>not json</html>"
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return None
                if model == "broken":
                    return self._send(503, {"error": {"message": "overloaded"}})
                if model == "flaky" and attempt == 1:
                    return self._send(500, {"error": {"message": "internal"}})
                if model == "ratelimit" and attempt == 1:
                    return self._send(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
                if model == "stall" and attempt == 1:
                    time.sleep(server.stall_s)
                if server.latency:
                    time.sleep(server.latency)
                text = f"echo: {prompt} | audio_bytes={audio_bytes}"
                self._send(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": model,
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                })

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # the default backlog of 5 refuses bursts of 32 connections
            daemon_threads = True

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> "FakeOpenAIServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--max-seconds", type=float, default=600.0)
    args = ap.parse_args()
    with FakeOpenAIServer(latency=args.latency) as server:
        print(server.port, flush=True)
        time.sleep(args.max_seconds)


if __name__ == "__main__":
    main()
