"""The LLM extractor: record against a local OpenAI-compatible server, replay with it stopped,
validate replies, cache so reruns make no calls, and turn exhausted retries into item failures."""
import json

import pytest

from musiceval.extraction import extract_labels, load_vocabulary
from musiceval.llm.cache import JSONCache, cache_key
from musiceval.llm.cassettes import CassetteMissing, record_mode, use_cassette
from musiceval.llm.client import RetryPolicy, make_client
from musiceval.llm.extract import PROMPT_VERSION, CassetteMissError, LLMExtractor, parse_reply
from musiceval.llm.fake_server import FakeOpenAIServer
from tests.fake_secrets import fake_key

SECRET = fake_key("test-secret-0123456789")
GTZAN = load_vocabulary("gtzan")
ANSWERS = [  # real MU-LLaMA / LTU answers from fixtures/factual
    "The given music is a blues rock song.",
    "This audio clip does not contain any of the given genres of music.",
    "The given music is a blend of classical and hip-hop elements.",
    "The given music is a blues rock song.",
]


def rule_based_reply(body):
    """The fake model answers with the rule extractor, so replies are deterministic and checkable."""
    return json.dumps({"labels": list(extract_labels(body["messages"][-1]["content"], GTZAN).labels)})


def extractor(base_url, **kw):
    client = make_client(api_key=SECRET, base_url=base_url, timeout=5, max_retries=0)
    return LLMExtractor(client=client, vocab=GTZAN, model="fake-model", retry=RetryPolicy(max_retries=1, base_delay=0), **kw)


def test_record_then_replay_with_the_server_stopped(tmp_path):
    cassette = tmp_path / "cassettes" / "test_record_then_replay.yaml"
    with FakeOpenAIServer(rule_based_reply) as server:
        base_url = server.base_url
        with use_cassette(cassette, mode="once"):
            recorded = extractor(base_url).extract_many(ANSWERS)
        body = server.requests[0]
    assert len(server.requests) == 3  # the repeated answer is sent once
    assert [r.labels for r in recorded] == [("blues", "rock"), (), ("classical", "hiphop"), ("blues", "rock")]
    assert body["temperature"] == 0 and body["stream"] is False
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["labels"]["items"]["enum"] == list(GTZAN.labels)
    assert PROMPT_VERSION == "extract_v1" and "Rules:" in body["messages"][0]["content"]

    text = cassette.read_text()
    assert SECRET not in text and "x-stainless" not in text.lower() and "authorization" not in text.lower()

    with use_cassette(cassette, mode="none"):  # the server is gone: only the cassette can answer
        replayed = extractor(base_url).extract_many(ANSWERS)
    assert replayed == recorded

    with use_cassette(cassette, mode="none"):
        with pytest.raises(CassetteMissError, match="re-record"):
            extractor(base_url).extract("A new answer the cassette never saw: reggae.")


def test_missing_cassette_in_replay_mode_names_file_and_command(tmp_path, monkeypatch):
    monkeypatch.delenv("MUSICEVAL_RECORD", raising=False)
    missing = tmp_path / "nope.yaml"
    with pytest.raises(CassetteMissing, match=r"nope\.yaml.*MUSICEVAL_RECORD=1 OPENAI_API_KEY=\.\.\. pytest tests/x\.py"):
        with use_cassette(missing, test_id="tests/x.py"):
            pass


def test_record_mode_policy(monkeypatch):
    monkeypatch.delenv("MUSICEVAL_RECORD", raising=False)
    monkeypatch.setenv("CI", "true")
    assert record_mode() == "none"
    monkeypatch.setenv("MUSICEVAL_RECORD", "1")
    with pytest.raises(RuntimeError, match="CI"):
        record_mode()
    monkeypatch.delenv("CI")
    assert record_mode() == "once"


def test_cache_makes_a_rerun_call_nothing(tmp_path):
    cache = JSONCache(tmp_path / "cache")
    with FakeOpenAIServer(rule_based_reply) as server:
        first = extractor(server.base_url, cache=cache)
        a = first.extract_many(ANSWERS)
        base_url = server.base_url
    assert first.n_calls == 3 and len(cache) == 3
    rerun = extractor(base_url, cache=cache)  # server stopped: any call would fail
    b = rerun.extract_many(ANSWERS)
    assert rerun.n_calls == 0
    assert [x.labels for x in b] == [x.labels for x in a] and all(x.cached for x in b)
    other_model = cache_key(model="other", prompt_version=PROMPT_VERSION, vocabulary_hash=GTZAN.hash, answer=ANSWERS[0])
    assert cache.get(other_model) is None


@pytest.mark.parametrize(
    "content,labels,oov,failure",
    [
        ('{"labels": ["blues", "Rock", "blues"]}', ("blues", "rock"), (), None),
        ('{"labels": ["blues", "polka", 3]}', ("blues",), ("polka", "3"), None),
        ('{"labels": ["hip hop"]}', ("hiphop",), (), None),
        ('{"labels": []}', (), (), None),
        ("blues, rock", (), (), "not JSON"),
        ("", (), (), "empty reply"),
        (None, (), (), "empty reply"),
        ('{"genres": ["blues"]}', (), (), "lacks a 'labels' list"),
        ('["blues"]', (), (), "lacks a 'labels' list"),
    ],
)
def test_reply_validation(content, labels, oov, failure):
    out = parse_reply(content, GTZAN)
    assert out.labels == labels and out.oov == oov
    assert (out.failure is None) if failure is None else (failure in out.failure)


def test_instrument_replies_are_normalised():
    out = parse_reply('{"labels": ["Double Bass", "French horn", "Acoustic Grand Piano"]}', load_vocabulary("musicnet-instruments"))
    assert out.labels == ("bass", "horn", "piano")


def test_bad_replies_and_rate_limits_are_item_failures_not_crashes(tmp_path):
    replies = iter(["not json at all", "", '{"labels": ["jazz", "zydeco"]}'])
    cache = JSONCache(tmp_path / "c")
    with FakeOpenAIServer(lambda body: next(replies)) as server:
        ex = extractor(server.base_url, cache=cache)
        out = [ex.extract(a) for a in ("a1", "a2", "a3")]
        server.fail_first = [429, 429, 429]
        limited = ex.extract("a4")
    assert "not JSON" in out[0].failure and "empty reply" in out[1].failure
    assert out[2].labels == ("jazz",) and out[2].oov == ("zydeco",)
    assert "RateLimitError (HTTP 429) after 2 attempt" in limited.failure
    assert len(cache) == 1  # failures are not cached: a rerun retries them
