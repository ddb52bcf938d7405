"""The shared OpenAI client: env configuration, bounded retries on 429/5xx/timeouts, no key leaks."""
import time

import openai
import pytest

from musiceval.llm.client import LLMCallFailed, MissingAPIKey, RetryPolicy, call_with_retries, make_client
from musiceval.llm.fake_server import FakeOpenAIServer
from tests.fake_secrets import fake_key

SECRET = fake_key("test-secret-0123456789")
NO_WAIT = RetryPolicy(max_retries=2, base_delay=0.0)


def _chat(client):
    return client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], temperature=0)


@pytest.fixture
def server():
    with FakeOpenAIServer(lambda body: "ok") as srv:
        yield srv


def test_client_reads_key_and_base_url_from_env(monkeypatch, server):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    client = make_client()
    assert str(client.base_url).rstrip("/") == server.base_url and client.max_retries == 0
    assert _chat(client).choices[0].message.content == "ok"


def test_missing_key_names_the_fix_and_replay_needs_none(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingAPIKey, match="OPENAI_API_KEY"):
        make_client()
    assert make_client(require_key=False, base_url="http://127.0.0.1:9/v1") is not None
    with pytest.raises(ValueError, match="max_retries"):
        make_client(api_key="x", max_retries=99)


def test_429_is_retried_with_backoff_then_succeeds(server):
    server.fail_first = [429, 429]
    client = make_client(api_key=SECRET, base_url=server.base_url)
    waits = []
    out = call_with_retries(lambda: _chat(client), RetryPolicy(max_retries=3, base_delay=0.25, max_delay=0.4), sleep=waits.append)
    assert out.choices[0].message.content == "ok"
    assert len(server.requests) == 3 and waits == [0.25, 0.4]


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retries_are_bounded_then_the_call_fails(server, status):
    server.fail_first = [status] * 10
    client = make_client(api_key=SECRET, base_url=server.base_url)
    with pytest.raises(LLMCallFailed, match=f"HTTP {status}.*after 3 attempt") as info:
        call_with_retries(lambda: _chat(client), NO_WAIT)
    assert len(server.requests) == 3
    assert SECRET not in str(info.value)


def test_client_errors_are_not_retried(server):
    server.fail_first = [400]
    client = make_client(api_key=SECRET, base_url=server.base_url)
    with pytest.raises(openai.BadRequestError):
        call_with_retries(lambda: _chat(client), NO_WAIT)
    assert len(server.requests) == 1


def test_timeouts_are_retried_then_fail():
    with FakeOpenAIServer(lambda body: "late", delay_s=0.6) as slow:
        client = make_client(api_key=SECRET, base_url=slow.base_url, timeout=0.15)
        with pytest.raises(LLMCallFailed, match="APITimeoutError after 2 attempt"):
            call_with_retries(lambda: _chat(client), RetryPolicy(max_retries=1, base_delay=0.0))
        # the client gave up before the server's answer; on a loaded machine the server thread may
        # record the second request only after that
        for _ in range(500):
            if len(slow.requests) >= 2:
                break
            time.sleep(0.01)
        assert len(slow.requests) == 2


def test_backoff_is_exponential_and_capped():
    policy = RetryPolicy(max_retries=5, base_delay=0.5, max_delay=3.0)
    assert [policy.delay(k) for k in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_retry_policy_is_bounded():
    with pytest.raises(ValueError, match="max_retries"):
        RetryPolicy(max_retries=100)
