"""``musiceval score factual``: formats, conditions, chance, per-item failures, JSON shape."""
import json
from pathlib import Path

import pytest

from musiceval.extraction import load_vocabulary
from musiceval.data.errors import InputError
from musiceval.protocols.factual.engine import factual_set, load_factual, score_factual
from tests.protocols.cli_args import score

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "factual"


def run(file, fmt, vocab, **kw):
    argv = [file, "--format", fmt, "--vocab", vocab, "--n-permutations", "200"]
    for k, v in kw.items():
        argv += [f"--{k.replace('_', '-')}", v]
    return score("factual", *argv).as_json()


def test_dasheng_nsynth_json_shape_and_values():
    out = run(FIXTURES / "nsynth_midashenglm.jsonl", "dasheng", "nsynth")
    assert out["protocol"] == "factual" and out["n"] == 300 and out["n_failed"] == 0
    m = {"correct": out["metrics"], **out["conditions"], "chance": out["chance"]}
    assert set(out["conditions"]) == {"random"}
    assert {"precision", "recall", "f1", "accuracy"} <= set(m["correct"])
    # single-label answers naming one family: P = R = F1 = accuracy = share of exact answers
    rows = [json.loads(x) for x in (FIXTURES / "nsynth_midashenglm.jsonl").read_text().splitlines()]
    exact = sum(r["model_output"] == r["label"][0] for r in rows) / len(rows)
    assert m["correct"]["f1"] == pytest.approx(exact) and m["correct"]["accuracy"] == pytest.approx(exact)
    assert m["random"]["f1"] < m["correct"]["f1"] and m["chance"]["f1"] < m["correct"]["f1"]


def test_cmi_bench_format_and_conditions_flag():
    out = run(FIXTURES / "mullama_GTZAN.jsonl", "cmi-bench", "gtzan", conditions="correct")
    assert out["n"] == 290 and "conditions" not in out and "f1" in out["metrics"] and "f1" in out["chance"]


def test_musiceval_format_with_explicit_random_rows_and_bad_lines(tmp_path):
    lines = [
        {"item_id": "a", "prompt": "q", "text": "Pop and soft rock", "labels": ["pop"]},
        {"item_id": "b", "prompt": "q", "text": "Jazz", "labels": "jazz"},
        {"item_id": "c", "prompt": "q", "text": "Polka", "labels": ["polka"]},  # truth outside the vocabulary
        {"item_id": "a", "condition": "random", "text": "jazz"},
        {"item_id": "b", "condition": "random", "text": "jazz"},
    ]
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n{broken\n")
    data = factual_set(load_factual(path, "musiceval"))
    result = score_factual(data, load_vocabulary("gtzan"), n_permutations=50)
    # docs/protocols/factual.md: [pop, rock] vs [pop] -> 0.667
    assert result.metrics["correct"]["f1"] == pytest.approx((2 / 3 + 1) / 2)
    assert result.metrics["random"]["f1"] == pytest.approx(0.5)
    reasons = " | ".join(f.reason for f in result.failures)
    assert "not in vocabulary 'gtzan'" in reasons and "malformed JSON" in reasons


def test_input_errors_name_the_fix(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_factual(tmp_path / "absent.jsonl", "dasheng")
    (tmp_path / "latin1.jsonl").write_bytes(b'{"item_id": "a", "text": "caf\xe9", "labels": ["pop"]}')
    data = factual_set(load_factual(tmp_path / "latin1.jsonl", "musiceval"))
    assert data.n == 0 and "not valid UTF-8" in data.failures[0].reason
    with pytest.raises(InputError, match="no line could be read .*re-encode the file as UTF-8"):
        run(tmp_path / "latin1.jsonl", "musiceval", "gtzan")
    with pytest.raises(InputError, match="--vocab"):
        run(FIXTURES / "mullama_GTZAN.jsonl", "cmi-bench", "no-such-vocab")
    with pytest.raises(InputError, match="conditions"):
        score_factual(factual_set(load_factual(FIXTURES / "ltu_GTZAN.jsonl", "cmi-bench")), load_vocabulary("gtzan"),
                      conditions=("noise",))


def test_llm_extractor_through_the_cli_caches_reruns(tmp_path, monkeypatch):
    from musiceval.extraction import extract_labels
    from musiceval.llm.fake_server import FakeOpenAIServer

    gtzan = load_vocabulary("gtzan")

    def reply(body):
        return json.dumps({"labels": list(extract_labels(body["messages"][-1]["content"], gtzan).labels)})

    monkeypatch.delenv("CI", raising=False)  # a user's live run: calls are made and recorded
    llm = dict(extractor="llm", llm_cache=str(tmp_path / "cache"), llm_cassette=str(tmp_path / "extract.yaml"))
    with FakeOpenAIServer(reply) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        first = run(FIXTURES / "mullama_GTZAN.jsonl", "cmi-bench", "gtzan", **llm)
        second = run(FIXTURES / "mullama_GTZAN.jsonl", "cmi-bench", "gtzan", **llm)
    rules = run(FIXTURES / "mullama_GTZAN.jsonl", "cmi-bench", "gtzan")
    distinct = {r["response"] for r in json.loads((FIXTURES / "mullama_GTZAN.jsonl").read_text())}
    assert first["llm_calls"] == len(distinct) and second["llm_calls"] == 0
    assert first["metrics"] == second["metrics"] == rules["metrics"]


def test_hostile_chunk_rows_are_counted_failures(tmp_path):
    from musiceval.data.factual_files import MAX_LINE_BYTES

    rows = [
        {"item_id": "neg", "text": "x", "labels": ["pop"], "chunk": -1},
        {"item_id": "boolean", "text": "x", "labels": ["pop"], "chunk": True},
        {"item_id": "short", "text": "x", "labels": ["pop"], "meta": {"chunk": 3, "n_chunks": 2}},
        {"item_id": "dup", "text": "pop", "labels": ["pop"]},
        {"item_id": "dup", "text": "rock", "labels": ["pop"]},
        {"item_id": "clash", "text": "pop", "labels": ["pop"], "chunk": 0},
        {"item_id": "clash", "text": "pop", "labels": ["rock"], "chunk": 1},
        {"item_id": "ok", "text": "Pop.", "labels": ["pop"]},
        {"item_id": "ok", "condition": "random", "text": "Rock.", "chunk": 0},
        {"item_id": "ok", "condition": "random", "text": "Pop.", "chunk": 1},
        {"item_id": "orphan", "condition": "random", "text": "Pop."},
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n" + "x" * (MAX_LINE_BYTES + 1) + "\n")
    data = factual_set(load_factual(path, "musiceval"))
    assert data.ids == ["ok"] and data.random_texts == {"ok": ("Rock.", "Pop.")}
    reasons = " | ".join(f"{f.item_id}: {f.reason}" for f in data.failures)
    for expected in ("non-negative integer", "does not cover chunk 3", "duplicate answer for chunk 0",
                     "differ from the item's other rows", "exceeds", "orphan: random: an answer for an item with no"):
        assert expected in reasons
    result = score_factual(data, load_vocabulary("gtzan"), n_permutations=10, chunks="majority")
    assert result.metrics["random"]["n"] == 1 and result.predictions["random"]["ok"] == ()  # 1 of 2 chunks: no majority
    with pytest.raises(InputError, match="--chunks"):
        score_factual(data, load_vocabulary("gtzan"), chunks="all")


def test_manifest_errors(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"item_id": "a", "text": "pop"}) + "\n")
    with pytest.raises(InputError, match="--manifest"):
        load_factual(path, "musiceval", manifest=tmp_path / "absent.jsonl")
    with pytest.raises(InputError, match="musiceval-format"):
        load_factual(FIXTURES / "ltu_GTZAN.jsonl", "cmi-bench", manifest=path)
    data = factual_set(load_factual(path, "musiceval"))  # no labels and no manifest: a failure naming both fixes
    assert data.n == 0 and "--labels-field or --manifest" in data.failures[0].reason
