"""``musiceval score factual`` options: --chunks, --hierarchy, --answers true-false|binary,
--manifest and --agreement (recorded against a local fake server, replayed with it stopped)."""
import json

import numpy as np
import pytest

from musiceval.vocab.factual_prompts import variant_items
from musiceval.extraction import extract_labels, load_vocabulary
from musiceval.records import Item
from musiceval.data.errors import InputError
from tests.protocols.cli_args import score
from tests.fake_secrets import fake_key

GENRES = """genre_id,#tracks,parent,title,top_level
12,32923,0,Rock,12
15,34413,0,Electronic,15
21,8389,0,Hip-Hop,21
25,9261,12,Punk,12
66,1138,12,Indie-Rock,12
"""


def run(file, *args):
    out = score("factual", file, "--n-permutations", "50", *args)
    return out.as_json(), out


def write(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def chunked_rows():
    return [  # item a answered per chunk, as `musiceval generate --out` writes it (meta.chunk)
        {"item_id": "a", "prompt": "q", "text": "A piano plays.", "labels": ["piano", "violin"], "meta": {"chunk": 0, "n_chunks": 3}},
        {"item_id": "a", "prompt": "q", "text": "Violin and piano.", "meta": {"chunk": 1, "n_chunks": 3}},
        {"item_id": "a", "prompt": "q", "text": "Only a cello here.", "meta": {"chunk": 2, "n_chunks": 3}},
        {"item_id": "b", "prompt": "q", "text": "A cello.", "labels": ["cello"]},
        {"item_id": "c", "prompt": "q", "text": "Flute.", "labels": ["flute"], "meta": {"chunk": 0, "n_chunks": 2}},
        {"item_id": "d", "prompt": "q", "text": "Noise answer.", "labels": ["flute"], "condition": "noise"},
    ]


def test_chunks_any_and_majority_aggregate_per_item(tmp_path):
    path = write(tmp_path / "chunks.jsonl", chunked_rows())
    anyc, _ = run(path, "--vocab", "musicnet-instruments", "--conditions", "correct", "--chunks", "any")
    major, out = run(path, "--vocab", "musicnet-instruments", "--conditions", "correct", "--chunks", "majority")
    # a: any -> {piano, violin, cello} vs {piano, violin}: F1 = 4/5; majority (2 of 3) -> {piano}: F1 = 2/3; b: 1
    assert anyc["metrics"]["f1"] == pytest.approx((0.8 + 1) / 2)
    assert major["metrics"]["f1"] == pytest.approx((2 / 3 + 1) / 2)
    assert anyc["n"] == major["n"] == 2
    reasons = {f["item_id"]: f["error"] for f in out.failures}
    assert "chunks [0] found, expected 0..1" in reasons["c"]  # chunk 1 of c is missing
    assert "condition 'noise' is not scored" in " ".join(reasons.values())
    assert {r["item_id"] for r in out.per_item if "error" not in r} == {"a", "b"}


def test_chunked_answers_without_chunks_flag_are_failures_naming_it(tmp_path):
    out, raw = run(write(tmp_path / "c.jsonl", chunked_rows()), "--vocab", "musicnet-instruments", "--conditions", "correct")
    assert out["n"] == 1 and any(f["item_id"] == "a" and "--chunks any|majority" in f["error"] for f in raw.failures)


def test_hierarchy_same_node_and_same_tree(tmp_path):
    genres = tmp_path / "genres.csv"
    genres.write_text(GENRES)
    rows = [{"item_id": "1", "prompt": "q", "text": "A punk song.", "labels": ["Rock"]},
            {"item_id": "2", "prompt": "q", "text": "Indie rock.", "labels": ["Indie-Rock"]},
            {"item_id": "3", "prompt": "q", "text": "Electronic music.", "labels": ["Hip-Hop"]}]
    out, _ = run(write(tmp_path / "g.jsonl", rows), "--hierarchy", str(genres), "--conditions", "correct")
    m = out["metrics"]
    assert out["vocab"] == "fma-genres"
    # same node: Punk vs Rock 0, Indie-Rock exact 1 ("rock" inside "indie rock" is the longer label), Electronic vs Hip-Hop 0
    assert m["same_node"]["f1"] == pytest.approx(1 / 3) == m["f1"]
    # same tree: Punk and Indie-Rock map to Rock
    assert m["same_tree"]["f1"] == pytest.approx(2 / 3) and m["same_tree"]["accuracy"] == pytest.approx(2 / 3)
    with pytest.raises(InputError, match="genres.csv"):
        run(write(tmp_path / "g.jsonl", rows), "--hierarchy", str(tmp_path / "absent" / "genres.csv"))


def items():
    return [Item("x", "q", audio="x.wav", labels=("piano", "violin"), group="x"),
            Item("y", "q", audio="y.wav", labels=("cello",), group="y")]


def write_manifest(path, items_):
    rows = [{"id": it.id, "question": it.question, "audio": it.audio, "labels": list(it.labels), "group": it.group, **dict(it.meta)}
            for it in items_]
    return write(path, rows)


def generated(items_, answer):  # `musiceval generate --out` rows: no labels, chunk in meta
    return [{"item_id": it.id, "condition": "correct", "model": "m", "prompt": it.question, "text": answer(it),
             "meta": {"chunk": 0, "n_chunks": 1}} for it in items_]


def test_true_false_answers_joined_with_the_manifest(tmp_path):
    asked = variant_items(items(), "true-false", "instrument", ["piano", "violin", "cello"])
    assert [it.id for it in asked][:3] == ["x#piano", "x#violin", "x#cello"] and "Is piano used" in asked[0].question
    answers = {"x#piano": "Yes.", "x#violin": "No.", "x#cello": "I am not sure.", "y#piano": "No.", "y#violin": "No.",
               "y#cello": "Yes, a cello."}
    manifest = write_manifest(tmp_path / "m.jsonl", asked)
    resp = write(tmp_path / "r.jsonl", generated(asked, lambda it: answers[it.id]))
    out, _ = run(resp, "--vocab", "musicnet-instruments", "--answers", "true-false", "--manifest", str(manifest))
    m = out["metrics"]
    assert out["n"] == 2 and m["n_cells"] == 6 and m["n_unanswered"] == 1
    assert m["accuracy"] == pytest.approx(4 / 6)  # x: violin wrong, cello unclear; y: all right
    # yes-sets: x {piano} vs {piano, violin} -> F1 2/3; y {cello} vs {cello} -> 1
    assert m["f1"] == pytest.approx((2 / 3 + 1) / 2) and m["labels"] == ["piano", "violin", "cello"]
    assert set(out["chance"]) == {"f1", "f1_sd", "method"}
    # an item not asked every label of the table is a counted failure
    resp2 = write(tmp_path / "r2.jsonl", generated([it for it in asked if it.id != "y#violin"], lambda it: answers[it.id]))
    _, raw2 = run(resp2, "--vocab", "musicnet-instruments", "--answers", "true-false", "--manifest", str(manifest))
    assert raw2.n == 1 and any(f["item_id"] == "y" and "not asked about ['violin']" in f["error"] for f in raw2.failures)


def test_binary_choice_answers(tmp_path):
    many = [Item(f"i{k}", "q", audio=f"{k}.wav", labels=(lab,)) for k, lab in enumerate(["piano", "cello", "flute", "oboe"])]
    asked = variant_items(many, "binary", "instrument", ["piano", "cello", "flute", "oboe", "horn"], seed=1)
    firsts = [it.meta["options"][0] == it.labels[0] for it in asked]
    assert sum(firsts) == 2 and all(it.question.startswith("Between ") for it in asked)

    def answer(it):  # right on the first three items, names both options on the last
        return f"It is a {it.labels[0]}." if it.id != "i3" else " and ".join(it.meta["options"])

    manifest = write_manifest(tmp_path / "m.jsonl", asked)
    rows = generated(asked, answer) + [{"item_id": "bad", "text": "piano", "labels": ["piano"], "options": ["piano"]}]
    out, raw = run(write(tmp_path / "r.jsonl", rows), "--vocab", "musicnet-instruments", "--answers", "binary",
                   "--manifest", str(manifest))
    m = out["metrics"]
    assert m["accuracy"] == pytest.approx(3 / 4) and m["n"] == 4 and m["n_both"] == 1 and m["n_neither"] == 0
    assert m["n_true_first"] == 2
    assert out["chance"]["accuracy"] == 0.5
    assert out["chance"]["p_value"] == pytest.approx(5 / 16)  # P(X >= 3 | 4, 1/2)
    assert [f["item_id"] for f in raw.failures] == ["bad"] and "two labels" in raw.failures[0]["error"]


def test_variants_refuse_other_formats(tmp_path):
    with pytest.raises(InputError, match="musiceval-format"):
        run(write(tmp_path / "r.jsonl", []), "--format", "dasheng", "--vocab", "nsynth", "--answers", "binary")


def test_agreement_recorded_against_a_local_server_then_replayed_with_it_stopped(tmp_path, monkeypatch):
    from sklearn.metrics import cohen_kappa_score

    from musiceval.llm.fake_server import FakeOpenAIServer
    from musiceval.metrics.sets import binarize

    gtzan = load_vocabulary("gtzan")
    texts = ["Blues rock.", "Jazz and pop.", "It is classical music.", "No drums, a country song.", "Hip hop and reggae.",
             "Metal.", "Disco with pop.", "Jazz and pop."]
    rows = [{"item_id": str(k), "prompt": "q", "text": t, "labels": ["blues"]} for k, t in enumerate(texts)]
    path = write(tmp_path / "a.jsonl", rows)

    def reply(body):  # the fake LLM drops the second label of two: partial disagreement with the rules
        return json.dumps({"labels": list(extract_labels(body["messages"][-1]["content"], gtzan).labels)[:1]})

    cassette = tmp_path / "cassettes" / "agreement.yaml"
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", fake_key("test-secret"))
    args = ("--vocab", "gtzan", "--conditions", "correct", "--agreement", "--llm-cassette", str(cassette))
    with FakeOpenAIServer(reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        recorded, _ = run(path, *args)  # the command records every call in its cassette
        assert len(server.requests) == len(set(texts))  # each distinct answer sent once
    monkeypatch.delenv("OPENAI_API_KEY")
    replayed, _ = run(path, *args, "--llm-replay")  # no server, no key: only the cassette answers
    assert fake_key("test-secret") not in cassette.read_text() and replayed["llm_cassette"] == str(cassette)
    with pytest.raises(FileNotFoundError, match="cassette .* is missing"):
        run(path, *args[:-1], str(tmp_path / "absent.yaml"), "--llm-replay")
    agreement = replayed["agreement"]
    assert replayed["metrics"] == recorded["metrics"] and agreement["exact_set"] == recorded["agreement"]["exact_set"]

    rules = [extract_labels(t, gtzan).labels for t in texts]
    llm = [r[:1] for r in rules]
    assert agreement["n"] == 8 and agreement["n_failed"] == 0
    assert agreement["exact_set"] == pytest.approx(np.mean([a == b for a, b in zip(rules, llm)]))
    a, b = binarize([set(x) for x in rules], gtzan.labels), binarize([set(x) for x in llm], gtzan.labels)
    for j, label in enumerate(gtzan.labels):
        if a[:, j].any() or b[:, j].any():
            assert agreement["kappa_per_label"][label] == pytest.approx(cohen_kappa_score(a[:, j], b[:, j]))
