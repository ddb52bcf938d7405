"""A tiny OpenAI-compatible ``/v1/chat/completions`` server on 127.0.0.1, for tests and demos.

It answers each request with ``reply(body) -> str`` (the assistant message content) and can be
told to misbehave: ``fail_first=[429, 500]`` answers the first requests with those status codes,
``delay_s`` sleeps before answering (to trigger client timeouts). ``requests`` records every
request body received. Nothing here touches the network beyond the loopback interface.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


class FakeOpenAIServer:
    def __init__(self, reply: Callable[[dict[str, Any]], str], *, fail_first: list[int] | None = None, delay_s: float = 0.0):
        self.reply = reply
        self.fail_first = list(fail_first or [])
        self.delay_s = delay_s
        self.requests: list[dict[str, Any]] = []
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                body = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(body)
                if server.delay_s:
                    time.sleep(server.delay_s)
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                if server.fail_first:
                    status = server.fail_first.pop(0)
                    return self._send(status, {"error": {"message": f"simulated {status}", "type": "server_error"}})
                content = server.reply(body)
                self._send(200, {
                    "id": f"chatcmpl-fake-{len(server.requests)}", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "fake"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content, "refusal": None}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                })

        return Handler

    def start(self) -> "FakeOpenAIServer":
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
