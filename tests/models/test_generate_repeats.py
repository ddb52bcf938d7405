"""``musiceval generate --repeats K`` on an OpenAI-compatible server (the fake one, on loopback):
the meaning, seeds and refusals of ``musiceval run --repeats K`` (docs/evaluate-your-model.md,
"Sampled answers"): every (item, condition) asked K times at the model's temperature, repeat r
with the seed of (``--seed``, r); every ``--out`` row carries its ``repeat``, which the answer
readers turn into the item ``<id>#r<k>``; K = 1 is a run without repeats, byte for byte."""
from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf

from musiceval.cli import main as cli_main
from musiceval.llm.fake_server import FakeOpenAIServer
from musiceval.suite.repeats import repeat_seed

pytest.importorskip("openai")


def by_seed(body: dict) -> str:
    """A sampling model: its answer depends on the seed of the request (and so on the repeat)."""
    return ["a bass", "a guitar", "a flute"][int(body.get("seed") or 0) % 3]


@pytest.fixture
def manifest(tmp_path):
    rng = np.random.default_rng(0)
    rows = []
    for k in range(3):
        sf.write(tmp_path / f"c{k}.wav", rng.uniform(-0.5, 0.5, 8000).astype(np.float32), 8000, subtype="FLOAT")
        rows.append({"id": f"q{k}", "audio": f"c{k}.wav", "question": f"Which instrument plays in clip {k}?",
                     "labels": ["bass"]})
    path = tmp_path / "manifest.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _generate(server, manifest, tmp_path, out: str, *extra: str) -> int:
    return cli_main(["generate", "--model", f"openai-compatible:{server.base_url}#echo", "--dataset", str(manifest),
                     "--conditions", "correct,random", "--cache-dir", str(tmp_path / "cache"), "--out",
                     str(tmp_path / out), "--no-progress", *extra])


def _rows(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_three_repeats_are_asked_with_the_seeds_of_run_and_written_with_their_repeat(manifest, tmp_path, capsys):
    from musiceval.data.factual_files import load_factual

    with FakeOpenAIServer(reply=by_seed) as server:
        code = _generate(server, manifest, tmp_path, "out.jsonl", "--repeats", "3", "--temperature", "0.7", "--seed", "11")
        bodies = list(server.bodies)
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert code == 0
        assert {b["temperature"] for b in bodies} == {0.7}
        assert {b["seed"] for b in bodies} == {repeat_seed(11, r) for r in range(3)}  # musiceval run's seeds
        assert len(bodies) == 3 * 2 * 3  # 3 items x (correct, random) x 3 repeats
        assert summary["repeats"] == 3 and summary["n_responses"] == 18 and summary["n_generated"] == 18
        rows = _rows(tmp_path / "out.jsonl")
        assert sorted((r["item_id"], r["condition"], r["repeat"]) for r in rows) == sorted(
            (f"q{k}", c, rep) for k in range(3) for c in ("correct", "random") for rep in range(3))
        assert {r["text"] for r in rows if r["repeat"] == 1} == {by_seed({"seed": repeat_seed(11, 1)})}
        # repeat r is the plain run at repeat r's seed: served from the cache, byte for byte
        assert _generate(server, manifest, tmp_path, "r1.jsonl", "--temperature", "0.7",
                         "--seed", str(repeat_seed(11, 1))) == 0
        assert len(server.bodies) == len(bodies)

    def asked(r):  # what was asked and answered: the request's cache key, its Random partner, the answer
        return r["item_id"], r["condition"], r["text"], r["meta"]["cache_key"], r["meta"].get("audio_from")

    assert [asked(r) for r in rows if r["repeat"] == 1] == [asked(r) for r in _rows(tmp_path / "r1.jsonl")]
    # the answer readers make repeat k of q0 the item q0#r<k> in q0's group
    answers = load_factual(tmp_path / "out.jsonl", "musiceval", manifest=manifest)
    assert answers.repeat_of == {f"q{k}#r{rep}": f"q{k}" for k in range(3) for rep in range(3)}
    assert not answers.failures


def test_one_repeat_is_a_run_without_repeats_byte_for_byte(manifest, tmp_path, capsys):
    with FakeOpenAIServer(reply=by_seed) as server:
        assert _generate(server, manifest, tmp_path, "plain.jsonl", "--temperature", "0.7") == 0
        assert _generate(server, manifest, tmp_path, "one.jsonl", "--temperature", "0.7", "--repeats", "1") == 0
    one = (tmp_path / "one.jsonl").read_bytes()
    assert b'"repeat"' not in one
    # the second run is served from the cache: only the "cached" flag differs
    assert one == (tmp_path / "plain.jsonl").read_bytes().replace(b'"cached": false', b'"cached": true')
    assert "repeats" not in json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.parametrize("extra, message", [
    (("--repeats", "2"), "--repeats 2 needs sampling: greedy decoding"),
    (("--repeats", "2", "--temperature", "0.7", "--model-args", "do_sample=false"), "--repeats 2 needs sampling"),
    (("--repeats", "0", "--temperature", "0.7"), "--repeats 0: expected a whole number >= 1"),
])
def test_repeats_are_refused_as_musiceval_run_refuses_them_before_any_request(manifest, tmp_path, capsys, extra, message):
    with FakeOpenAIServer(reply=by_seed) as server:
        code = _generate(server, manifest, tmp_path, "out.jsonl", *extra)
        asked = len(server.requests)
    err = capsys.readouterr().err
    assert code == 2 and asked == 0, err[-2000:]
    assert message in err and ("needs sampling" not in message or "--model-args temperature=0.7" in err)
    assert not (tmp_path / "out.jsonl").exists()
