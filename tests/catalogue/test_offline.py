"""Preparing without the network: a hub or release server that cannot be reached is said within
seconds, in one line naming what happened and the fixes (docs/benchmarks.md, "Preparing offline");
a slow or busy server is retried, each retry a line on stderr; ``HF_HUB_OFFLINE`` is blamed only
when the user set it. Everything here talks to loopback ports only: a closed one (refused), one
that never answers (a timeout) or a tiny HTTP server answering 503."""
from __future__ import annotations

import http.server
import os
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.error
from pathlib import Path

import pytest

from musiceval.catalogue import get_benchmark
from musiceval.catalogue import fetch as fetch_module
from musiceval.catalogue import network
from musiceval.catalogue.fetch import FetchError, fetch_hub, fetch_url
from musiceval.catalogue.network import TRANSIENT, UNREACHABLE, classify, with_retries
from musiceval.catalogue.prepare import prepare
from tests.catalogue.conftest import NSYNTH_URL

ROOT = Path(__file__).resolve().parents[2]
#: `musiceval` in a subprocess whose sockets may reach loopback only (anything else is a PermissionError,
#: which the catalogue does not take for "unreachable", so a test cannot pass by touching the network)
GUARDED_CLI = """
import ipaddress, socket, sys
_connect = socket.socket.connect
def connect(self, address, *args, **kwargs):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        host = address[0]
        try:
            ok = ipaddress.ip_address(host).is_loopback
        except ValueError:
            ok = host == "localhost"
        if not ok:
            raise PermissionError(f"test guard: no network ({host})")
    return _connect(self, address, *args, **kwargs)
socket.socket.connect = connect
from musiceval.cli import main
sys.exit(main(sys.argv[1:]))
"""
#: seconds a refused connection may take, the interpreter's start and imports included
FAST_S = 12.0


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_cli(argv: list[str], tmp_path: Path, **env_extra: str) -> tuple[subprocess.CompletedProcess, float]:
    """``musiceval argv`` with no offline variable, no mirror and no proxy unless given; ``(result, seconds)``."""
    drop = {"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT", "HF_HUB_CACHE", "HF_HOME", "MUSICEVAL_URL_MIRROR"}
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.lower().endswith("_proxy")}
    env.update(PYTHONPATH=str(ROOT), HF_HOME=str(tmp_path / "hf-home"), **env_extra)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", GUARDED_CLI, *argv], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    return proc, time.monotonic() - started


def last_line(stderr: str) -> str:
    return [line for line in stderr.splitlines() if line.strip()][-1]


@pytest.fixture
def online(monkeypatch, tmp_path):
    """In-process: the hub not offline, its cache an empty folder, no waiting between retries (recorded)."""
    import huggingface_hub.constants as hf_constants

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "MUSICEVAL_URL_MIRROR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))
    waits: list[float] = []
    monkeypatch.setattr(network, "_sleep", waits.append)
    return waits


class Server:
    """A loopback HTTP server: ``statuses`` are answered in turn (then 200 with ``body``)."""

    def __init__(self, statuses=(), body=b""):
        self.statuses, self.body, self.requests = list(statuses), body, 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                outer.requests += 1
                status = outer.statuses.pop(0) if outer.statuses else 200
                data = outer.body if status == 200 else b"busy"
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("name", ["musicqa", "hummusqa"])  # unpinned (main) and pinned to a commit
def test_an_unreachable_hub_fails_in_seconds_naming_the_fixes_not_hf_hub_offline(name, tmp_path):
    endpoint = f"http://127.0.0.1:{closed_port()}"
    proc, seconds = run_cli(["data", "prepare", name, "--data-root", str(tmp_path / "data")], tmp_path, HF_ENDPOINT=endpoint)
    repo = get_benchmark(name).source.repo_id
    assert proc.returncode == 2, proc.stderr
    assert seconds < FAST_S, f"{seconds:.1f} s before the error: {proc.stderr}"
    line = last_line(proc.stderr)
    assert line.startswith(f"musiceval: error: hf:{repo}@"), line
    assert f"the Hugging Face hub at {endpoint} could not be reached" in line and "Connection refused" in line
    assert f"is not in the local Hugging Face cache {tmp_path / 'hf-home' / 'hub'}" in line
    assert f"hf download --repo-type dataset {repo}" in line and "--cache-dir DIR" in line
    assert "set HF_HUB_CACHE=DIR" in line and "HF_ENDPOINT" in line and "docs/benchmarks.md#preparing-offline" in line
    assert "HF_HUB_OFFLINE" not in proc.stderr  # the user did not set it
    assert proc.stderr.count("trying once more") <= 1 and "Retry" not in proc.stderr


def test_a_release_server_that_refuses_fails_in_seconds_naming_the_url_mirror(tmp_path):
    """nsynth's real URL through a proxy on a closed loopback port: the connection is refused."""
    proxy = f"http://127.0.0.1:{closed_port()}"
    data = tmp_path / "data"
    proc, seconds = run_cli(["data", "prepare", "nsynth", "--data-root", str(data), "--no-progress"], tmp_path,
                            http_proxy=proxy, HTTP_PROXY=proxy, no_proxy="", NO_PROXY="")
    assert proc.returncode == 2, proc.stderr
    assert seconds < FAST_S, f"{seconds:.1f} s before the error: {proc.stderr}"
    line = last_line(proc.stderr)
    assert line.startswith(f"musiceval: error: {NSYNTH_URL}: could not be reached (") and "Connection refused" in line
    assert ("put the file at $MUSICEVAL_URL_MIRROR/download.magenta.tensorflow.org/datasets/nsynth/nsynth-test.jsonwav.tar.gz "
            "and set MUSICEVAL_URL_MIRROR to that folder") in line
    assert f"or copy it to {data / 'nsynth' / 'downloads' / 'nsynth-test.jsonwav.tar.gz'}" in line
    assert "docs/benchmarks.md#preparing-offline" in line
    assert proc.stderr.count("trying once more") == 1 and "retrying in" not in proc.stderr


def test_a_mirror_that_lacks_the_file_is_said_not_silently_skipped(tmp_path):
    proxy = f"http://127.0.0.1:{closed_port()}"
    (tmp_path / "mirror").mkdir()
    proc, _ = run_cli(["data", "prepare", "nsynth", "--data-root", str(tmp_path / "data"), "--no-progress"], tmp_path,
                      http_proxy=proxy, HTTP_PROXY=proxy, no_proxy="", NO_PROXY="", MUSICEVAL_URL_MIRROR=str(tmp_path / "mirror"))
    assert proc.returncode == 2
    missing = tmp_path / "mirror" / "download.magenta.tensorflow.org" / "datasets" / "nsynth" / "nsynth-test.jsonwav.tar.gz"
    assert f"{NSYNTH_URL}: not in $MUSICEVAL_URL_MIRROR (no {missing}); downloading it" in proc.stderr
    assert f"(now {tmp_path / 'mirror'}, which lacks it)" in last_line(proc.stderr)


def test_a_hub_layout_mirror_in_hf_hub_cache_serves_an_unreachable_hub(hummusqa_mirror, monkeypatch):
    """The hub-layout mirror of tests/catalogue/mirror.py, given as HF_HUB_CACHE, without HF_HUB_OFFLINE."""
    import huggingface_hub.constants as hf_constants

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setattr(network, "_sleep", lambda s: None)
    lines: list[str] = []
    report = prepare(get_benchmark("hummusqa"), hummusqa_mirror["data"], progress=False, log=lines.append)
    assert report.lock.with_audio == 4
    used = [line for line in lines if "using the snapshot" in line]
    assert len(used) == 1 and "could not be reached" in used[0]
    assert f"using the snapshot ca7bad071bde from the local Hugging Face cache {hummusqa_mirror['hub']}" in used[0]


def test_a_busy_hub_is_retried_each_retry_said(online, monkeypatch):
    import huggingface_hub.constants as hf_constants

    server = Server(statuses=[503] * 20)
    try:
        monkeypatch.setattr(hf_constants, "ENDPOINT", server.url)
        lines: list[str] = []
        with pytest.raises(FetchError) as info:
            fetch_hub(get_benchmark("hummusqa").source, progress=False, log=lines.append)
    finally:
        server.close()
    retries = [line for line in lines if "retrying in" in line]
    assert [r.split("retrying in ")[1] for r in retries] == ["1 s (attempt 2 of 4)", "2 s (attempt 3 of 4)",
                                                             "4 s (attempt 4 of 4)"]
    assert all(r.startswith(f"hf:mtg-upf/HumMusQA@ca7bad071bde0b27e55eca050f2e88b49ae01f56 (hub {server.url}): HTTP 503")
               for r in retries)
    assert online == [1, 2, 4]
    assert f"the Hugging Face hub at {server.url} kept failing (HTTP 503)" in str(info.value)


def test_a_refused_loopback_port_fails_in_about_a_second(online, tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/records/1/files/questions.csv"
    lines: list[str] = []
    started = time.monotonic()
    with pytest.raises(FetchError) as info:
        fetch_url(url, tmp_path / "downloads", progress=False, log=lines.append)
    assert time.monotonic() - started < 3
    assert online == [0.5] and len(lines) == 1 and "trying once more in 0.5 s" in lines[0]
    host = url.split("/")[2]
    assert str(info.value).startswith(f"{url}: could not be reached (")
    assert f"$MUSICEVAL_URL_MIRROR/{host}/records/1/files/questions.csv" in str(info.value)


def test_a_busy_release_server_is_retried_then_the_file_arrives(online, tmp_path):
    server = Server(statuses=[503, 502], body=b"question,answer\n")
    try:
        lines: list[str] = []
        path = fetch_url(f"{server.url}/files/q.csv", tmp_path / "downloads", progress=False, log=lines.append)
    finally:
        server.close()
    assert path.read_bytes() == b"question,answer\n" and server.requests == 3
    assert [line.split(": ", 1)[1] for line in lines] == [
        "HTTP 503 Service Unavailable; retrying in 1 s (attempt 2 of 4)",
        "HTTP 502 Bad Gateway; retrying in 2 s (attempt 3 of 4)"]


def test_a_server_that_never_answers_times_out_and_is_retried(online, tmp_path, monkeypatch):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # connections are accepted by the kernel and never answered
    monkeypatch.setattr(fetch_module, "URL_TIMEOUT", 0.2)
    try:
        lines: list[str] = []
        with pytest.raises(FetchError) as info:
            fetch_url(f"http://127.0.0.1:{silent.getsockname()[1]}/f.bin", tmp_path, progress=False, log=lines.append)
    finally:
        silent.close()
    assert len(lines) == 3 and all("timed out; retrying in" in line for line in lines)
    assert "kept failing (4 attempts)" in str(info.value)


def test_a_missing_file_is_not_retried(online, tmp_path):
    server = Server(statuses=[404])
    try:
        lines: list[str] = []
        with pytest.raises(FetchError) as info:
            fetch_url(f"{server.url}/gone.csv", tmp_path, progress=False, log=lines.append)
    finally:
        server.close()
    assert server.requests == 1 and lines == []
    assert "failed (HTTP 404 Not Found)" in str(info.value)


def test_failures_are_sorted_into_unreachable_transient_and_final():
    import httpx2

    refused = urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))
    no_name = urllib.error.URLError(socket.gaierror(-2, "Name or service not known"))
    assert classify(refused) == classify(no_name) == classify(httpx2.ConnectError("refused")) == UNREACHABLE
    assert classify(OSError(101, "Network is unreachable")) == UNREACHABLE
    assert classify(TimeoutError("timed out")) == classify(urllib.error.URLError(TimeoutError())) == TRANSIENT
    assert classify(httpx2.ReadTimeout("slow")) == classify(httpx2.ConnectTimeout("slow")) == TRANSIENT
    assert classify(ConnectionResetError()) == TRANSIENT
    for code in (429, 500, 502, 503, 504):
        assert classify(urllib.error.HTTPError("u", code, "busy", {}, None)) == TRANSIENT
    for code in (401, 403, 404, 416):
        assert classify(urllib.error.HTTPError("u", code, "no", {}, None)) is None
    assert classify(PermissionError("guard")) is None and classify(ValueError("bad")) is None


def test_with_retries_tries_an_unreachable_server_once_more_and_a_transient_one_up_to_the_limit():
    waits, lines = [], []

    def failing(exc):
        calls = []

        def call():
            calls.append(1)
            raise exc

        return call, calls

    call, calls = failing(ConnectionRefusedError(111, "Connection refused"))
    with pytest.raises(ConnectionRefusedError):
        with_retries(call, what="x", log=lines.append, sleep=waits.append)
    assert len(calls) == 2 and waits == [0.5]
    call, calls = failing(TimeoutError("timed out"))
    with pytest.raises(TimeoutError):
        with_retries(call, what="x", log=lines.append, sleep=waits.append, attempts=4)
    assert len(calls) == 4 and waits == [0.5, 1, 2, 4] and len(lines) == 4
    call, calls = failing(ValueError("bad"))
    with pytest.raises(ValueError):
        with_retries(call, what="x", log=lines.append, sleep=waits.append)
    assert len(calls) == 1
