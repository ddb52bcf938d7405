"""openai-compatible adapter against a local OpenAI-compatible server (127.0.0.1, no network)."""
from __future__ import annotations

import base64
import io

import numpy as np
import pytest
import soundfile as sf

pytest.importorskip("openai")

from musiceval.llm.fake_server import FakeOpenAIServer  # noqa: E402

from musiceval.models import GenerationSettings, ModelSpecError, Request, load_model  # noqa: E402
from musiceval.models.openai_compatible import encode_wav_base64  # noqa: E402
from tests.fake_secrets import fake_key  # noqa: E402

SETTINGS = GenerationSettings(temperature=0.2, max_tokens=16, seed=7)
# a healthy answer on a loaded machine stays far inside the timeout; a stall (5 s) stays far outside it
FAST = dict(timeout=2.0, max_retries=2, backoff=0.01, max_backoff=0.05)


@pytest.fixture
def server():
    with FakeOpenAIServer(stall_s=5.0) as s:
        yield s


def requests(n: int, audio: bool = True) -> list[Request]:
    clip = np.zeros(1600, np.float32) if audio else None
    return [Request(f"i{k}", f"question {k}", clip) for k in range(n)]


def test_audio_goes_as_base64_wav_and_settings_are_sent(server):
    model = load_model(f"openai-compatible:{server.base_url}#echo", concurrency=4, **FAST)
    answers = model.generate(requests(3) + [Request("t", "no audio", None)], SETTINGS)
    assert [a.ok for a in answers] == [True] * 4
    assert answers[0].text.startswith("echo: question 0 | audio_bytes=")
    assert answers[3].text == "echo: no audio | audio_bytes=0"
    body = server.bodies[0]
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.2, 16, 7)
    wav = base64.b64decode(encode_wav_base64(np.zeros(1600, np.float32), 16_000))
    data, sr = sf.read(io.BytesIO(wav))
    assert sr == 16_000 and len(data) == 1600
    assert int(answers[0].text.rsplit("=", 1)[1]) == len(wav)


@pytest.mark.parametrize("behaviour", ["flaky", "ratelimit", "stall"])
def test_5xx_429_and_stalls_are_retried_until_answered(server, behaviour):
    model = load_model(f"openai-compatible:{server.base_url}#{behaviour}", concurrency=4, **FAST)
    answers = model.generate(requests(4), SETTINGS)
    assert all(a.ok for a in answers), [a.error for a in answers]
    assert all(a.meta["attempts"] == 2 for a in answers)


def test_a_server_that_keeps_failing_gives_per_item_errors_after_bounded_retries(server):
    model = load_model(f"openai-compatible:{server.base_url}#broken", concurrency=2, **FAST)
    answers = model.generate(requests(3), SETTINGS)
    assert all(not a.ok and "HTTP 503" in a.error for a in answers)
    assert sum(server.attempts.values()) == 3 * (FAST["max_retries"] + 1)


def test_a_malformed_answer_is_a_per_item_error(server):
    model = load_model(f"openai-compatible:{server.base_url}#garbage", **FAST)
    answers = model.generate(requests(2), SETTINGS)
    assert all(not a.ok and "unusable response" in a.error for a in answers)


def test_one_bad_request_fails_alone_without_retries(server):
    model = load_model(f"openai-compatible:{server.base_url}#echo", **FAST)
    batch = requests(2) + [Request("bad", "BAD prompt", None)]
    answers = model.generate(batch, SETTINGS)
    assert [a.ok for a in answers] == [True, True, False]
    assert "HTTP 400" in answers[2].error and server.attempts[("echo", "BAD prompt")] == 1


def test_an_unreachable_server_is_a_per_item_error_not_a_crash():
    model = load_model("openai-compatible:http://127.0.0.1:9/v1#echo", timeout=0.3, max_retries=1, backoff=0.01)
    (answer,) = model.generate(requests(1), SETTINGS)
    assert not answer.ok and "127.0.0.1:9" in answer.error


def test_the_api_key_comes_from_the_environment_and_never_appears_in_errors(server, monkeypatch):
    monkeypatch.setenv("MUSICEVAL_OPENAI_API_KEY", fake_key("test-SECRET"))
    model = load_model(f"openai-compatible:{server.base_url}#broken", **{**FAST, "max_retries": 0})
    (answer,) = model.generate(requests(1), SETTINGS)
    assert server.auth_headers[-1] == "Bearer " + fake_key("test-SECRET")
    assert "SECRET" not in answer.error and "SECRET" not in model.spec


def test_concurrency_is_bounded(server):
    server.latency = 0.05
    model = load_model(f"openai-compatible:{server.base_url}#echo", concurrency=3, **FAST)
    import threading

    active, peak, lock = [0], [0], threading.Lock()
    original = server.httpd.RequestHandlerClass.do_POST

    def counting(handler):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        try:
            original(handler)
        finally:
            with lock:
                active[0] -= 1

    server.httpd.RequestHandlerClass.do_POST = counting
    assert all(a.ok for a in model.generate(requests(12), SETTINGS))
    assert 1 < peak[0] <= 3


@pytest.mark.parametrize("spec", ["openai-compatible:http://x/v1", "openai-compatible:#m", "openai-compatible:"])
def test_a_spec_without_url_or_model_is_a_clear_error(spec):
    with pytest.raises(ModelSpecError, match="<base_url>#<model>"):
        load_model(spec)
