"""The LLM rewriter: versioned prompts, temperature 0, cassette record/replay, cache, failures.

The "LLM" is a local OpenAI-compatible server (musiceval.llm.fake_server) whose replies are
deterministic string edits; recording goes through the shared cassette policy
(musiceval.llm.cassettes), one cassette per test, written under tmp_path.
"""
from __future__ import annotations

import pytest

from musiceval.conditions import load_rewrites
from musiceval.llm.cache import JSONCache
from musiceval.llm.cassettes import use_cassette
from musiceval.llm.client import RetryPolicy, make_client
from musiceval.llm.fake_server import FakeOpenAIServer
from musiceval.llm.rewrite import KINDS, PROMPT_VERSION, LLMRewriter, load_prompts, write_rewrites
from musiceval.records import Item
from tests.fake_secrets import fake_key

SECRET = fake_key("test-secret-never-recorded")
ITEMS = [
    Item(id="a.flac", question="Describe the audio", reference="A calm ambient piece with flute and synthesizer."),
    Item(id="b.flac", question="What is the tempo of the audio?", reference="The tempo is fast, around 140 bpm."),
    Item(id="c.flac", question="Describe the audio", reference="   "),
]


def fake_llm(body):
    """Deterministic 'rewrites': the adversarial prompt swaps facts, the skyline prompt rephrases."""
    content = body["messages"][-1]["content"]
    reference = content.split('Reference: "', 1)[1].rsplit('"', 1)[0]
    if "Change the musical meaning" in content:
        return reference.replace("calm", "frantic").replace("flute", "tuba").replace("fast", "slow").replace("140", "60")
    return "Paraphrase: " + reference.lower()


def rewriter(base_url, **kw):
    client = make_client(api_key=SECRET, base_url=base_url, timeout=5, max_retries=0)
    return LLMRewriter(client=client, model="fake-model", retry=RetryPolicy(max_retries=1, base_delay=0), **kw)


def test_prompts_are_versioned_with_both_kinds():
    prompts = load_prompts()
    assert PROMPT_VERSION == "rewrite_v1" and set(prompts) == set(KINDS)
    for text in prompts.values():
        assert "{reference}" in text and "{question}" in text


def test_record_then_replay_with_the_server_stopped(tmp_path):
    cassette = tmp_path / "cassettes" / "test_rewrite_record_then_replay.yaml"
    with FakeOpenAIServer(fake_llm) as server:
        base_url = server.base_url
        with use_cassette(cassette, mode="once"):
            recorded, failures = rewriter(base_url).rewrite_items(ITEMS)
        bodies = list(server.requests)
    assert len(bodies) == 4  # 2 items x 2 kinds; the empty reference is never sent
    assert all(b["temperature"] == 0 and b["stream"] is False and b["model"] == "fake-model" for b in bodies)
    assert [f.item_id for f in failures] == ["c.flac"]
    assert recorded["a.flac"].adversarial == "A frantic ambient piece with tuba and synthesizer."
    assert recorded["b.flac"].skyline.startswith("Paraphrase: the tempo")
    assert {r.source for r in recorded.values()} == {f"llm:fake-model:{PROMPT_VERSION}"}

    text = cassette.read_text()
    assert SECRET not in text and "x-stainless" not in text.lower() and "authorization" not in text.lower()

    with use_cassette(cassette, mode="none"):  # the server is gone: only the cassette answers
        replayed, _ = rewriter(base_url).rewrite_items(ITEMS)
    assert replayed == recorded

    out = tmp_path / "rewrites.jsonl"
    write_rewrites(out, recorded)
    assert load_rewrites(out) == recorded


def test_cache_makes_a_rerun_call_nothing(tmp_path):
    cache = JSONCache(tmp_path / "cache")
    with FakeOpenAIServer(fake_llm) as server:
        first, _ = rewriter(server.base_url, cache=cache).rewrite_items(ITEMS[:2])
        again = rewriter(server.base_url, cache=cache)
        second, _ = again.rewrite_items(ITEMS[:2])
        assert len(server.requests) == 4 and again.n_calls == 0
    assert first == second
    assert len(cache) == 4


def test_bad_replies_and_rate_limits_are_item_failures(tmp_path):
    replies = iter(["", ITEMS[0].reference, "fine paraphrase", "fine adversarial"])
    with FakeOpenAIServer(lambda body: next(replies)) as server:
        rw = rewriter(server.base_url)
        out, failures = rw.rewrite_items(ITEMS[:1])  # empty skyline reply
        out2, failures2 = rw.rewrite_items(ITEMS[:1])  # reply repeats the reference
        server.fail_first = [429, 429]
        out3, failures3 = rw.rewrite_items(ITEMS[1:2])
    assert not out and "empty reply" in failures[0].reason
    assert not out2 and "repeats the reference" in failures2[0].reason
    assert not out3 and "RateLimitError (HTTP 429) after 2 attempt" in failures3[0].reason
    with pytest.raises(ValueError, match="kind must be"):
        rw.rewrite("summary", "q", "r")
