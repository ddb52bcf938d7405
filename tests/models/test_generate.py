"""musiceval generate: manifests, conditions, per-item failures, cache reuse, kill and resume."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from musiceval.cli import main as cli_main
from musiceval.generate import generate_responses, load_manifest, random_partners
from musiceval.models import Answer, GenerationSettings
from musiceval.models.cache import ResponseCache
from musiceval.records import Item

ROOT = Path(__file__).resolve().parents[2]


def main(argv):
    """``musiceval generate ARGV``."""
    return cli_main(["generate", *argv])


class Echo:
    """Reports what reached it: prompt, audio length and a fingerprint of the samples."""

    spec, revision, sample_rate = "test:echo", "v1", 8000

    def __init__(self, chunk_seconds=None, max_audio_seconds=None, fail_on=None, explode=False):
        self.chunk_seconds, self.max_audio_seconds = chunk_seconds, max_audio_seconds
        self.fail_on, self.explode, self.calls = fail_on, explode, 0

    def generate(self, requests, settings):
        self.calls += len(requests)
        if self.explode:
            raise RuntimeError("adapter bug")
        return [Answer(error="model refused") if r.item_id == self.fail_on else
                Answer(text=f"{r.prompt}|{'none' if r.audio is None else f'{len(r.audio)}:{float(r.audio[:50].sum()):.4f}'}")
                for r in requests]

    def close(self):
        pass


@pytest.fixture
def dataset(tmp_path):
    rng = np.random.default_rng(0)
    rows = []
    for k in range(4):
        sf.write(tmp_path / f"c{k}.wav", rng.uniform(-0.5, 0.5, 8000 * (k + 1)).astype(np.float32), 8000, subtype="FLOAT")
        rows.append({"id": f"q{k}", "audio": f"c{k}.wav", "question": f"What is in clip {k}?", "labels": ["x"]})
    rows.append({"id": "q0b", "audio": "c0.wav", "question": "Another question on clip 0"})
    rows.append({"id": "missing", "audio": "nope.wav", "question": "?"})
    rows.append({"id": "escape", "audio": "../c0.wav", "question": "?"})
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text("\n".join(json.dumps(r) for r in rows) + '\n{"id": "noq"}\nnot json\n{"id": "q1", "question": "dup"}\n'
                        '{"id": "win", "question": "q", "audio": "a.wav", "audio_start": "soon"}\n')
    return manifest


def test_manifest_bad_lines_are_failures_with_reasons(dataset):
    items, failures = load_manifest(dataset)
    assert [i.id for i in items] == ["q0", "q1", "q2", "q3", "q0b", "missing", "escape"]
    reasons = " | ".join(f.reason for f in failures)
    assert len(failures) == 4 and "question" in reasons and "not a JSON object" in reasons and "duplicate id 'q1'" in reasons
    assert "'audio_start'/'audio_end' must be numbers" in reasons


def test_cmi_bench_audio_end_of_minus_one_means_the_whole_file(tmp_path):
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"id": "a", "question": "q", "audio": "a.wav", "audio_start": 2, "audio_end": -1}) + "\n")
    (item,), failures = load_manifest(manifest)
    assert not failures and item.meta["audio_start"] == 2.0 and "audio_end" not in item.meta


def test_random_partner_is_always_another_clip_and_seeded():
    items = [Item(id=f"i{k}", question="q", audio=f"c{k % 3}.wav") for k in range(9)]
    (partners,) = random_partners(items, seed=1)
    assert all(partners[i.id].audio != i.audio for i in items)
    assert {k: p.id for k, p in partners.items()} == {k: p.id for k, p in random_partners(items, seed=1)[0].items()}
    assert len({p.audio for p in partners.values()}) == 3
    assert random_partners(items[:1], seed=1) == [{}]
    draws = random_partners(items, seed=1, draws=4)
    assert all(d[i.id].audio != i.audio for d in draws for i in items)
    assert len({tuple(sorted((k, p.audio) for k, p in d.items())) for d in draws}) > 1  # independent pairings


def test_k_random_draws_are_answered_separately_and_reruns_keep_each_draws_partner(dataset, tmp_path):
    items, _ = load_manifest(dataset)
    items = [i for i in items if i.id in ("q0", "q1", "q2", "q3")]
    cache = ResponseCache(tmp_path / "c")
    kwargs = dict(conditions=["random"], data_dir=dataset.parent, settings=GenerationSettings(seed=5), random_draws=3)
    first = generate_responses(Echo(), items, cache=cache, **kwargs)
    again = generate_responses(Echo(), items, cache=ResponseCache(tmp_path / "c"), **kwargs)
    assert sorted((r.item_id, r.meta["draw"]) for r in first.responses) == sorted((i.id, k) for i in items for k in range(3))
    assert again.n_generated == 0
    assert [(r.item_id, r.meta["draw"], r.meta["audio_from"]) for r in again.responses] == \
        [(r.item_id, r.meta["draw"], r.meta["audio_from"]) for r in first.responses]
    by_id = {i.id: i for i in items}
    assert all(by_id[r.meta["audio_from"]].audio != by_id[r.item_id].audio for r in first.responses)
    with pytest.raises(ValueError, match="random_draws"):
        generate_responses(Echo(), items, random_draws=0, conditions=["random"], data_dir=dataset.parent)


def test_every_condition_reaches_the_model_as_intended_and_bad_items_fail_alone(dataset, tmp_path):
    items, _ = load_manifest(dataset)
    model = Echo()
    result = generate_responses(model, items, conditions=["correct", "random", "noise", "text_only"],
                                data_dir=dataset.parent, settings=GenerationSettings(seed=3))
    by = {(r.item_id, r.condition): r.text for r in result.responses}
    assert by[("q1", "correct")].startswith("What is in clip 1?|16000:")
    assert by[("q1", "text_only")] == "What is in clip 1?|none"
    assert by[("q1", "noise")].split(":")[0] == by[("q1", "correct")].split(":")[0]  # same length
    assert by[("q1", "noise")] != by[("q1", "correct")]
    assert by[("q1", "random")] != by[("q1", "correct")]
    assert by[("q0b", "random")] == by[("q0", "random")].replace("What is in clip 0?", "Another question on clip 0")
    failed = {(f.item_id, f.reason.split(":")[0]) for f in result.failures}
    assert ("missing", "correct") in failed and ("escape", "noise") in failed
    assert ("missing", "text_only") not in failed  # no audio needed
    assert any("nope.wav" in f.reason for f in result.failures)
    assert any("'..'" in f.reason for f in result.failures)
    r = result.responses[0]
    assert r.meta["settings"] == {"temperature": 0.0, "max_tokens": 256, "seed": 3} and r.model == "test:echo"


def test_a_second_run_is_served_from_the_cache_and_new_settings_miss_it(dataset, tmp_path):
    items, _ = load_manifest(dataset)
    items = [i for i in items if i.id.startswith("q")]
    cache = ResponseCache(tmp_path / "cache")
    first = generate_responses(Echo(), items, conditions=["correct", "noise"], data_dir=dataset.parent, cache=cache)
    model = Echo()
    again = generate_responses(model, items, conditions=["correct", "noise"], data_dir=dataset.parent, cache=ResponseCache(tmp_path / "cache"))
    assert (first.n_generated, again.n_generated, again.n_cached, model.calls) == (10, 0, 10, 0)
    assert [r.text for r in again.responses] == [r.text for r in first.responses]
    other = generate_responses(Echo(), items, conditions=["correct"], data_dir=dataset.parent, cache=cache,
                               settings=GenerationSettings(seed=1))
    assert other.n_generated == 5 and len(cache) == 15


def test_failed_answers_and_adapter_crashes_are_per_item_and_not_cached(dataset, tmp_path):
    items, _ = load_manifest(dataset)
    items = [i for i in items if i.id.startswith("q")]
    cache = ResponseCache(tmp_path / "cache")
    result = generate_responses(Echo(fail_on="q2"), items, data_dir=dataset.parent, cache=cache, batch_size=2)
    assert [f.item_id for f in result.failures] == ["q2"] and "model refused" in result.failures[0].reason
    assert len(cache) == 4
    crashed = generate_responses(Echo(explode=True), items, data_dir=dataset.parent, batch_size=2)
    assert len(crashed.failures) == 5 and "adapter bug" in crashed.failures[0].reason


def test_long_audio_is_chunked_or_truncated_as_the_model_declares(dataset):
    items = [i for i in load_manifest(dataset)[0] if i.id == "q3"]  # 4 s
    chunked = generate_responses(Echo(chunk_seconds=1.5), items, data_dir=dataset.parent)
    assert [(r.meta["chunk"], r.meta["n_chunks"]) for r in chunked.responses] == [(0, 3), (1, 3), (2, 3)]
    truncated = generate_responses(Echo(max_audio_seconds=1.0), items, data_dir=dataset.parent)
    assert truncated.responses[0].text.split("|")[1].startswith("8000:") and truncated.responses[0].meta["truncated_to_s"] == 1.0


def test_cli_exit_codes_and_export(dataset, tmp_path, capsys):
    fixtures = ROOT / "musiceval" / "evals" / "audio" / "manifest.jsonl"
    rows = [json.loads(x) for x in fixtures.read_text().splitlines()]
    recorded = tmp_path / "rec.jsonl"
    recorded.write_text("".join(json.dumps({"item_id": r["id"], "prompt": r["question"], "text": "a guess"}) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    code = main(["--model", f"recorded:{recorded}", "--dataset", str(fixtures), "--cache-dir", str(tmp_path / "c"),
                 "--out", str(out), "--no-progress"])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and summary["n_responses"] == len(rows) == len(out.read_text().splitlines())
    assert main(["--model", "nope:x", "--dataset", str(fixtures), "--cache-dir", str(tmp_path / "c")]) == 2
    assert main(["--model", f"recorded:{recorded}", "--dataset", str(fixtures), "--conditions", "skyline",
                 "--cache-dir", str(tmp_path / "c")]) == 2
    assert main(["--model", f"recorded:{recorded}", "--dataset", str(dataset), "--no-progress",
                 "--cache-dir", str(tmp_path / "c")]) == 1  # items without a recorded answer


def test_a_run_killed_mid_way_resumes_without_duplicates_or_torn_lines(tmp_path):
    pytest.importorskip("openai")
    # the server answers 6 requests, then holds the rest until SIGUSR1: the kill lands mid-run on any machine
    server = subprocess.Popen([sys.executable, "-m", "musiceval.llm.fake_server", "--hold-after", "6", "--max-seconds", "120"],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
        cache_dir = tmp_path / "cache" / "responses"
        cmd = [sys.executable, "-m", "musiceval", "generate", "--model", f"openai-compatible:http://127.0.0.1:{port}/v1#echo",
               "--dataset", str(ROOT / "musiceval" / "evals" / "audio" / "manifest.jsonl"), "--conditions", "correct,noise",
               "--cache-dir", str(cache_dir.parent), "--concurrency", "1", "--batch-size", "2", "--no-progress"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        run = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        path = cache_dir / "responses.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not path.exists() or len(path.read_bytes().splitlines()) < 6):
            time.sleep(0.02)
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=10)
        server.send_signal(signal.SIGUSR1)
        n_before = len(path.read_bytes().splitlines())
        assert 6 <= n_before < 30
        with open(path, "ab") as f:  # and the worst case: a line torn by the kill
            f.write(b'{"key": "deadbeef", "text": "tor')
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout.strip().splitlines()[-1])
        assert summary["n_cached"] == n_before and summary["n_generated"] == 30 - n_before
        assert summary["cache_lines_ignored"] == 1 and "torn last line" in done.stderr
        keys = [json.loads(line)["key"] for line in path.read_text().splitlines()]
        assert len(keys) == len(set(keys)) == 30
    finally:
        server.kill()
        server.wait(timeout=10)


def test_two_concurrent_runs_on_one_cache_ask_the_model_once_per_request(tmp_path):
    """Claims in the response cache: a second run waits for the first one's answers."""
    pytest.importorskip("openai")
    import threading

    from musiceval.llm.fake_server import FakeOpenAIServer
    from musiceval.models import load_model

    items = [Item(id=f"q{k}", question=f"question {k}?", audio=None) for k in range(40)]
    results, errors = [], []
    with FakeOpenAIServer(latency=0.01) as server:
        def one_run():
            try:
                model = load_model(f"openai-compatible:{server.base_url}#echo", concurrency=4)
                results.append(generate_responses(model, items, conditions=["text_only", "correct"], data_dir=tmp_path,
                                                  cache=ResponseCache(tmp_path / "cache"), batch_size=8))
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=one_run) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        n_requests = len(server.requests)
    assert errors == [] and len(results) == 2
    # 40 text-only answers; 'correct' fails per item (no audio) without a model call
    assert n_requests == 40
    assert all(len(r.responses) == 40 and len(r.failures) == 40 for r in results)
    assert sum(r.n_generated for r in results) == 40 and sum(r.n_cached for r in results) == 40
    assert not list((tmp_path / "cache" / "claims").iterdir())  # every claim released
    assert [r.text for r in results[0].responses] == [r.text for r in results[1].responses]


def test_a_claim_released_without_an_answer_is_asked_again_and_a_dead_owners_claim_is_stale(tmp_path):
    cache = ResponseCache(tmp_path / "c")
    other = ResponseCache(tmp_path / "c")
    mine, others = cache.claim(["ab", "cd"])
    assert mine == ["ab", "cd"] and other.claim(["ab"]) == ([], ["ab"])
    cache.release(["ab"])  # failed: no answer written
    assert other.wait_for(["ab"], timeout=5) == {}
    assert other.claim(["ab"])[0] == ["ab"]
    (tmp_path / "c" / "claims" / "ef").write_text("%s 999999999 token" % __import__("socket").gethostname())
    assert other.claim(["ef"])[0] == ["ef"]  # the owner process does not exist
    cache.put_many([{"key": "cd", "text": "x"}])
    cache.release()
    assert other.wait_for(["cd"], timeout=5)["cd"]["text"] == "x"


def test_a_claim_left_empty_by_a_run_killed_while_claiming_goes_stale_after_the_grace(tmp_path):
    """A run SIGKILLed between creating its claim file and writing its name leaves the file empty:
    it is a live claim for CLAIM_WRITE_GRACE seconds (a writer may be between the two calls), then
    stale, so the next run waits at most that long instead of the hour of claim_ttl."""
    from musiceval.models.cache import CLAIM_WRITE_GRACE

    cache = ResponseCache(tmp_path / "c")
    (tmp_path / "c" / "claims").mkdir()
    for key, text in (("aa", ""), ("bb", "half-written")):
        path = tmp_path / "c" / "claims" / key
        path.write_text(text)
        assert cache.claim([key]) == ([], [key])  # just written: maybe a live writer
        old = time.time() - CLAIM_WRITE_GRACE - 1
        os.utime(path, (old, old))
        assert cache.wait_for([key], timeout=5) == {}  # stale: nobody will answer it
        assert cache.claim([key]) == ([key], [])
