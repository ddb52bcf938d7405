"""Credentials never reach an artefact: the one redaction function, and every file a run writes."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from musiceval.redact import MASK, _substitute, redact, redact_meta, relative_path
from tests.fake_secrets import fake_key

SECRET = "S3cr3tPl4nted"


@pytest.mark.parametrize("text, expected", [
    ("openai-compatible:http://user:S3cr3t@host:8000/v1#m", "openai-compatible:http://user:***@host:8000/v1#m"),
    ("https://S3cr3t@host/v1", "https://***@host/v1"),
    ("http://h/v1?token=S3cr3t&x=1#model", "http://h/v1?token=***&x=1#model"),
    ("http://h/v1?api_key=a&apikey=b&key=c&secret=d&password=e&sig=f&signature=g&access_token=h&auth=i",
     "http://h/v1?api_key=***&apikey=***&key=***&secret=***&password=***&sig=***&signature=***&access_token=***&auth=***"),
    ("http://h/v1?X-Amz-Signature=abc&Token=Q", "http://h/v1?X-Amz-Signature=***&Token=***"),
    ("Authorization: Bearer " + "abcdefgh" + "12345", "Authorization: Bearer ***"),
    (f"key {fake_key('proj-abcdefghijklmnop1234')} leaked", "key *** leaked"),
    ("hf:/models/qwen2-audio", "hf:/models/qwen2-audio"),
    ("http://127.0.0.1:8000/v1#Qwen/Qwen2-Audio-7B-Instruct", "http://127.0.0.1:8000/v1#Qwen/Qwen2-Audio-7B-Instruct"),
    ("http://h/?monkey=1&page=2", "http://h/?monkey=1&page=2"),
    ("max token reached; the task-key is ok", "max token reached; the task-key is ok"),
])
def test_redact_examples(text, expected):
    assert redact(text) == expected


_secret = st.text(alphabet=st.characters(whitelist_categories=("Lu", "Ll", "Nd"), max_codepoint=127), min_size=6, max_size=30)
_host = st.from_regex(r"[a-z][a-z0-9]{0,10}(\.[a-z]{2,5})?(:[0-9]{2,5})?", fullmatch=True)
_name = st.sampled_from(["token", "key", "api_key", "apikey", "secret", "password", "sig", "signature",
                         "access_token", "auth", "TOKEN", "Api_Key", "x-api-key"])


@settings(max_examples=200, deadline=None)
@given(secret=_secret, host=_host, name=_name, user=st.sampled_from(["", "user:", "u.n-1:"]),
       scheme=st.sampled_from(["http", "https", "wss"]), prefix=st.sampled_from(["", "openai-compatible:", "see "]),
       suffix=st.sampled_from(["", "#model", "&page=2#m", " failed"]))
def test_a_planted_secret_never_survives_and_redaction_is_idempotent(secret, host, name, user, scheme, prefix, suffix):
    # a secret that is also a word of the text around it ("apikey" as the value of apikey=) would
    # be found in that word, not leaked: the property is about the planted value
    assume(secret not in f"{prefix}{scheme}://{user}@{host}/v1?a=1&{name}={suffix}")
    for text in (f"{prefix}{scheme}://{user}{secret}@{host}/v1{suffix}",
                 f"{prefix}{scheme}://{host}/v1?a=1&{name}={secret}{suffix}",
                 f"{prefix}{scheme}://{host}/v1?{name}={secret}{suffix}"):
        out = redact(text)
        assert secret not in out and MASK in out
        assert redact(out) == out
        assert out.endswith(suffix) and out.startswith(prefix)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_text_without_credentials_keeps_its_length_class(text):
    out = redact(text)
    assert redact(out) == out
    if "://" not in text and "=" not in text and "earer" not in text and not any(p in text for p in ("sk-", "hf_", "gh", "xox", "rk-")):
        assert out == text


_fragments = st.sampled_from(["://", "=", "@", "?", "&", "Bearer ", "bEaReR\t", "sk-", "rk-", "hf_", "ghp_", "gho_",
                               "ghs_", "github_pat_", "xoxb-", "token", "key", "abcdefghijklmnop1234", " ", "/", "#",
                               "user:pw", "host", "1"])


def _key_shaped(prefix: str) -> str:
    """A key-shaped word built when the test runs: no tracked file holds one (tests/fake_secrets.py)."""
    return "".join((prefix, "abcdefghijklmnop", "1234"))


@settings(max_examples=400, deadline=None)
@example("?token=abcdef")
@example("x;KEY=1")
@example("bearer abcdefgh1")
@example(_key_shaped("ghs_"))
@example("s://u:p@h")
@example(_key_shaped("xoxp-"))
@example(_key_shaped("github_pat_"))
@example(_key_shaped("sk-"))
@given(st.lists(st.one_of(_fragments, st.text(max_size=4)), max_size=12).map("".join))
def test_the_quick_return_never_changes_what_is_masked(text):
    # redact() skips the substitutions when no pattern can match: the same text as always running them
    assert redact(text) == _substitute(text)


def test_redact_meta_is_deep_and_keeps_keys_and_types():
    meta = {"model": f"openai-compatible:http://u:{SECRET}@h/v1#m", "args": ["--model", f"http://h?key={SECRET}"],
            "n": 3, "nested": {"t": (f"Bearer {SECRET}", 1.5)}, "ok": None}
    out = redact_meta(meta)
    assert SECRET not in json.dumps(out) and out["n"] == 3 and out["ok"] is None
    assert isinstance(out["nested"]["t"], tuple) and out["nested"]["t"][1] == 1.5
    assert SECRET in json.dumps(meta)  # not modified in place


def test_relative_path_never_writes_an_absolute_home_path(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "proj").mkdir(parents=True)
    assert relative_path(tmp_path / "home" / "proj" / "t.toml", tmp_path / "home" / "proj") == "t.toml"
    assert relative_path(tmp_path / "home" / "other" / "t.toml", tmp_path / "home" / "proj") == "~/other/t.toml"
    assert relative_path("/etc/x.toml", tmp_path / "home" / "proj") == "/etc/x.toml"


# -- end to end: a planted secret is in no file a run writes ---------------------------------------------------
def _all_files(*roots: Path):
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file():
                yield path


def test_generate_and_a_cassette_recording_write_the_secret_nowhere(tmp_path, monkeypatch, capsys):
    pytest.importorskip("openai")
    pytest.importorskip("vcr")
    from musiceval.cli import main
    from musiceval.llm.cassettes import use_cassette
    from musiceval.llm.client import make_client
    from musiceval.llm.fake_server import FakeOpenAIServer

    data = tmp_path / "data"
    data.mkdir()
    sf.write(data / "a.wav", np.zeros(1600, np.float32), 16000)
    rows = [{"id": "ok", "audio": "a.wav", "question": "what?"}, {"id": "bad", "audio": "a.wav", "question": "BAD request"},
            {"id": "noaudio", "audio": "missing.wav", "question": "q"}]
    manifest = data / "m.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out_dir = tmp_path / "out"
    monkeypatch.setenv("OPENAI_API_KEY", f"sk-{SECRET}abcdefghijkl")
    with FakeOpenAIServer() as server:
        host = server.base_url.split("://", 1)[1]
        for spec in (f"openai-compatible:http://user:{SECRET}@{host}#echo",
                     f"openai-compatible:http://{host}?token={SECRET}#echo"):
            code = main(["generate", "--model", spec, "--dataset", str(manifest), "--cache-dir", str(out_dir / "cache"),
                         "--out", str(out_dir / "responses.jsonl"), "--no-progress", "--concurrency", "1"])
            assert code in (0, 1, 2)  # 2: the adapter refuses the base URL without /v1, in one redacted line
        # a cassette recorded with a key in OPENAI_BASE_URL's query
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.base_url}?api_key={SECRET}&sig={SECRET}")
        import openai

        with use_cassette(out_dir / "cassettes" / "c.yaml", mode="once"):
            client = make_client()  # the query garbles the path (HTTP 404), but the request is recorded
            with pytest.raises(openai.NotFoundError):
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], temperature=0)
            client = make_client(base_url=server.base_url).with_options(default_query={"api-key": SECRET, "token": SECRET})
            with pytest.raises(openai.NotFoundError):  # the fake server routes no query string
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], temperature=0)
        assert len(server.requests) >= 2
    captured = capsys.readouterr()
    assert SECRET not in captured.out + captured.err
    files = list(_all_files(out_dir))
    assert any(p.name == "responses.jsonl" for p in files) and any(p.suffix == ".yaml" for p in files)
    assert "uri:" in (out_dir / "cassettes" / "c.yaml").read_text()
    leaks = [str(p) for p in files if SECRET.encode() in p.read_bytes()]
    assert leaks == []
