"""``musiceval run --repeats K`` on an OpenAI-compatible server (the fake one, on loopback): every
item asked K times at the model's temperature, repeat r with the seed of (run seed, r); every row
carries its repeat; the gates read K items per question in the question's clip, the coverage gate
counts each question once, a finding says how the repeats agree, and results.json records K
(docs/evaluate-your-model.md, "Sampled answers")."""
from __future__ import annotations

import json

from musiceval.cli import main as cli_main
from musiceval.llm.fake_server import FakeOpenAIServer
from musiceval.suite.repeats import repeat_seed


def by_seed(body: dict) -> str:
    """A sampling model: its letter depends on the seed of the request (and so on the repeat)."""
    return f"The correct answer is: ({'ABCD'[int(body.get('seed') or 0) % 4]})"


def _run(server, tmp_path, *extra: str, out: str = "out") -> int:  # the mirror's data root is tmp_path / "data"
    spec = f"openai-compatible:{server.base_url}#echo"
    return cli_main(["run", "--model", spec, "--benchmarks", "hummusqa", "--data-root", str(tmp_path / "data"),
                     "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / out), "--no-progress",
                     "--conditions", "correct,random", *extra])


def test_three_repeats_are_asked_seeded_written_and_gated(hummusqa_mirror, tmp_path, capsys):
    with FakeOpenAIServer(reply=by_seed) as server:
        code = _run(server, tmp_path, "--repeats", "3", "--model-args", "temperature=0.7,seed=11")
        bodies = list(server.bodies)
        assert code in (0, 1), capsys.readouterr().err[-3000:]
        assert {b["temperature"] for b in bodies} == {0.7}
        assert {b["seed"] for b in bodies} == {repeat_seed(11, r) for r in range(3)}
        assert len(bodies) == 4 * 2 * 3  # 4 questions x (correct, random) x 3 repeats
        rows = [json.loads(line) for line in (tmp_path / "out" / "hummusqa.jsonl").read_text().splitlines()]
        assert sorted({(r["item_id"], r["condition"], r["repeat"]) for r in rows}) == sorted(
            (f"hq{k}", c, rep) for k in range(4) for c in ("correct", "random") for rep in range(3))
        assert "repeats = 3" in (tmp_path / "out" / "musiceval.toml").read_text()
        results = json.loads((tmp_path / "out" / "results" / "results.json").read_text())
        assert results["meta"]["repeats"] == 3 and results["meta"]["provenance"]["model"]["repeats"] == 3
        gates = results["gates"] if "gates" in results else results["results"]
        text = json.dumps(gates)
        assert "covers 4 of 320 items" in text  # the questions, not 4 x 3 rows
        agree = [g for g in gates if "agree across 3 sampled repeats" in g["name"]]
        assert agree and agree[0]["outcome"] == "FINDING" and agree[0]["n"] == 4
        # a rerun is served from the response cache, every repeat included
        capsys.readouterr()
        again = _run(server, tmp_path, "--repeats", "3", "--model-args", "temperature=0.7,seed=11", out="again")
        assert again == code and len(server.bodies) == len(bodies)
        assert "0 generated" in capsys.readouterr().err


def test_repeats_at_temperature_zero_are_refused_naming_the_fix(hummusqa_mirror, tmp_path, capsys):
    with FakeOpenAIServer(reply=by_seed) as server:
        code = _run(server, tmp_path, "--repeats", "5")
        asked = len(server.requests)
    err = capsys.readouterr().err
    assert code == 2 and asked == 0, err[-2000:]
    assert "--repeats 5 needs sampling" in err and "--model-args temperature=0.7" in err
    assert not (tmp_path / "out").exists()


def test_one_repeat_is_a_run_without_repeats_byte_for_byte(hummusqa_mirror, tmp_path, capsys):
    with FakeOpenAIServer(reply=by_seed) as server:
        assert _run(server, tmp_path, out="plain") in (0, 1)
        assert _run(server, tmp_path, "--repeats", "1", out="one") in (0, 1)
    for name in ("hummusqa.jsonl", "musiceval.toml", "musiceval.datasets.json"):
        assert (tmp_path / "plain" / name).read_bytes() == (tmp_path / "one" / name).read_bytes(), name
    assert b'"repeat"' not in (tmp_path / "one" / "hummusqa.jsonl").read_bytes()
    results = json.loads((tmp_path / "one" / "results" / "results.json").read_text())
    assert "repeats" not in results["meta"] and "repeats" not in results["meta"]["provenance"]["model"]
