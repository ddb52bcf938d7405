"""``musiceval run --repeats K`` on an OpenAI-compatible server (the fake one, on loopback): every
item asked K times at the model's temperature, repeat r with the seed of (run seed, r); every row
carries its repeat; the gates read K items per question in the question's clip, the coverage gate
counts each question once, a finding says how the repeats agree, and results.json records K
(docs/evaluate-your-model.md, "Sampled answers")."""
from __future__ import annotations

import json

import pytest

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


def test_pytest_with_benchmarks_asks_the_repeats_and_records_them(hummusqa_mirror, tmp_path):
    """``-n 2``: the controller asks the repeats, the workers read the answers it wrote."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    results = tmp_path / "results"
    hummusqa_mirror["data"].mkdir(exist_ok=True)  # prepared into it on first use
    with FakeOpenAIServer(reply=by_seed) as server:
        command = [sys.executable, "-m", "pytest", str(root / "evals"), "-p", "no:randomly", "-p", "no:cacheprovider",
                   "-q", "-n", "2", "-k", "not text_encoder", f"--musiceval-model=openai-compatible:{server.base_url}#echo",
                   "--musiceval-benchmarks=hummusqa", "--musiceval-repeats=2", "--musiceval-model-args=temperature=0.5",
                   f"--musiceval-data-dir={hummusqa_mirror['data']}", f"--musiceval-cache-dir={tmp_path / 'cache'}",
                   f"--musiceval-results-dir={results}"]
        done = subprocess.run(command, env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True,
                              timeout=900, cwd=str(root))
        seeds = {b["seed"] for b in server.bodies}
    assert (results / "results.json").is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads((results / "results.json").read_text())
    assert data["verdict"] in ("FAILED", "INCONCLUSIVE", "PASSED"), done.stdout[-3000:] + done.stderr[-3000:]
    assert seeds == {repeat_seed(0, 0), repeat_seed(0, 1)}
    assert data["meta"]["repeats"] == 2 and data["meta"]["provenance"]["model"]["repeats"] == 2
    text = json.dumps(data["gates"])
    assert "covers 4 of 320 items" in text and "agree across 2 sampled repeats" in text


def test_the_tiny_qwen2_audio_checkpoint_samples_three_repeats(hummusqa_mirror, tmp_path, capsys):
    """The real ``hf:`` adapter at a temperature: the seed of each repeat reaches ``generate``
    (``torch.manual_seed``), so a rerun answers the same from the cache."""
    pytest.importorskip("transformers")
    from musiceval.models.qwen2audio import build_tiny_checkpoint

    tiny = build_tiny_checkpoint(tmp_path / "tiny-qwen2-audio")
    args = ["run", "--model", f"hf:{tiny}", "--benchmarks", "hummusqa", "--repeats", "3", "--conditions", "correct,noise",
            "--model-args", "max_new_tokens=4,device=cpu,num_threads=1,temperature=0.9", "--data-root",
            str(tmp_path / "data"), "--cache-dir", str(tmp_path / "cache"), "--no-progress"]
    code = cli_main([*args, "--out", str(tmp_path / "out")])
    assert code in (0, 1), capsys.readouterr().err[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "out" / "hummusqa.jsonl").read_text().splitlines()]
    assert sorted({(r["item_id"], r["condition"], r["repeat"]) for r in rows}) == sorted(
        (f"hq{k}", c, rep) for k in range(4) for c in ("correct", "noise") for rep in range(3))
    results = json.loads((tmp_path / "out" / "results" / "results.json").read_text())
    assert results["meta"]["repeats"] == 3 and "covers 4 of 320 items" in json.dumps(results["gates"])
    capsys.readouterr()
    assert cli_main([*args, "--out", str(tmp_path / "again")]) == code
    assert "0 generated" in capsys.readouterr().err
    assert (tmp_path / "again" / "hummusqa.jsonl").read_bytes() == (tmp_path / "out" / "hummusqa.jsonl").read_bytes()
    texts = {}
    for r in rows:
        texts.setdefault((r["item_id"], r["condition"]), set()).add(r["text"])
    assert any(len(t) > 1 for t in texts.values())  # sampled: the repeats do not all answer alike


def test_factual_repeats_report_how_far_the_graded_headline_moves(nsynth_mirror, tmp_path, capsys):
    """NSynth (factual F1, graded per item): the finding gives the mean range of F1 across repeats."""
    def instrument(body: dict) -> str:
        return ["a bass", "a guitar and a keyboard", "a reed instrument"][int(body.get("seed") or 0) % 3]

    with FakeOpenAIServer(reply=instrument) as server:
        code = cli_main(["run", "--model", f"openai-compatible:{server.base_url}#echo", "--benchmarks", "nsynth",
                         "--data-root", str(nsynth_mirror["data"]), "--cache-dir", str(tmp_path / "cache"),
                         "--out", str(tmp_path / "out"), "--no-progress", "--repeats", "3",
                         "--model-args", "temperature=1.0"])
    assert code in (0, 1), capsys.readouterr().err[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "out" / "nsynth.jsonl").read_text().splitlines()]
    assert {r["repeat"] for r in rows} == {0, 1, 2} and {r["condition"] for r in rows} == {"correct", "random"}
    gates = json.loads((tmp_path / "out" / "results" / "results.json").read_text())["gates"]
    assert "covers 4 of 4,096 items" in json.dumps(gates)
    (agree,) = [g for g in gates if "agree across 3 sampled repeats" in g["name"]]
    assert "varies across repeats by" in agree["detail"] and agree["n"] == 4
