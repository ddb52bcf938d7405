"""``musiceval score freeform``: formats, conditions, JSON shape, per-item failures, errors."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from musiceval.data.musicqa import load_dasheng_musicqa
from musiceval.metrics.lexical_corpus import lexical_scores
from musiceval.data.errors import InputError
from tests.protocols.cli_args import score

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "freeform"
DASHENG = FIXTURES / "musicqa_dev_midashenglm.jsonl"


def run(file, fmt, *extra):
    return score("freeform", file, "--format", fmt, *extra)


def test_dasheng_correct_and_random_json_shape_and_values():
    out = run(DASHENG, "dasheng", "--metrics", "bleu,rouge_l,cider", "--conditions", "correct,random", "--seed", "3")
    js = out.as_json()
    assert js["protocol"] == "freeform" and js["n"] == 396 and js["n_failed"] == 0
    assert js["excluded"]["reference_copies_question"]["n"] == 4  # 396 + 4: every line of the file
    assert set(js["conditions"]) == {"random"} and set(js["metrics"]) == {"bleu", "rouge_l", "cider"}
    data = load_dasheng_musicqa(DASHENG)
    refs = [it.reference for it in data.items]
    expected = lexical_scores([r.text for r in data.responses], refs, ["bleu"], df_references=refs)["bleu"].mean()
    assert js["metrics"]["bleu"] == pytest.approx(expected)
    assert js["n_per_condition"]["random"] == 229 and js["random_unpaired"] == 167
    assert set(js["correct_on_random_items"]) == {"bleu", "rouge_l", "cider"}
    assert {"item_id", "condition", "bleu"} <= set(out.per_item[0])
    assert out.failures == [] and js["excluded"]["no_random_partner"]["n"] == js["random_unpaired"]
    again = run(DASHENG, "dasheng", "--metrics", "bleu", "--conditions", "random", "--seed", "3").as_json()
    assert again["conditions"]["random"]["bleu"] == pytest.approx(js["conditions"]["random"]["bleu"])
    other = run(DASHENG, "dasheng", "--metrics", "bleu", "--conditions", "random", "--seed", "4").as_json()
    assert other["conditions"]["random"]["bleu"] != again["conditions"]["random"]["bleu"]


def test_skyline_and_adversarial_from_the_hand_written_rewrites():
    rewrites = FIXTURES / "rewrites_handwritten.jsonl"
    out = run(DASHENG, "dasheng", "--metrics", "rouge_l", "--conditions", "skyline,adversarial", "--rewrites", str(rewrites)).as_json()
    assert out["rewrite_sources"] == ["hand-written"]
    assert out["n_per_condition"]["skyline"] == out["n_per_condition"]["adversarial"] >= 60
    assert out["conditions"]["adversarial"]["rouge_l"] > out["conditions"]["skyline"]["rouge_l"]  # the known NLP failure
    with pytest.raises(InputError, match="--rewrites"):
        run(DASHENG, "dasheng", "--conditions", "skyline")


def test_musiceval_format_with_recorded_random_and_bad_items(tmp_path):
    rows = [
        {"id": "a", "question": "Describe the music.", "reference": "A calm piano piece.", "response": "a calm piano piece"},
        {"id": "a", "question": "Describe the music.", "reference": "A calm piano piece.", "response": "loud drums", "condition": "random"},
        {"id": "b", "question": "Describe the music.", "reference": ["Fast rock.", "A rock song."], "response": "a rock song"},
        {"id": "b", "question": "Describe the music.", "reference": "Fast rock.", "response": "", "condition": "random"},
        {"id": "c", "question": "Q", "reference": None, "response": "x"},
    ]
    path = tmp_path / "f.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n{oops\n")
    out = run(path, "musiceval", "--metrics", "bleu,meteor,rouge_l", "--conditions", "correct,random")
    js = out.as_json()
    assert js["n"] == 2 and js["n_failed"] == 2
    assert js["metrics"]["rouge_l"] == pytest.approx(1.0)  # b matches its second reference
    assert js["conditions"]["random"]["rouge_l"] == pytest.approx(0.0)
    with pytest.raises(InputError, match="noise"):
        run(path, "musiceval", "--conditions", "noise")
    with pytest.raises(InputError, match="--metrics"):
        run(path, "musiceval", "--metrics", "bleu,spice")


def test_random_draws_are_averaged(tmp_path):
    one = run(DASHENG, "dasheng", "--metrics", "bleu", "--conditions", "random", "--random-draws", "1").per_item
    four = run(DASHENG, "dasheng", "--metrics", "bleu", "--conditions", "random", "--random-draws", "4").per_item
    assert len(one) == len(four) == 229
    assert not np.allclose([r["bleu"] for r in one], [r["bleu"] for r in four])


def test_cli_prints_the_documented_json():
    proc = subprocess.run([sys.executable, "-m", "musiceval.cli", "score", "freeform", "--format", "dasheng", str(DASHENG),
                           "--metrics", "bleu,bleu4,rouge_l", "--conditions", "correct,random", "--seed", "0", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    js = json.loads(proc.stdout)
    assert js["protocol"] == "freeform" and js["n"] == 396 and js["n_failed"] == 0
    assert js["excluded"]["reference_copies_question"]["n"] == 4
    assert set(js["conditions"]["random"]) == {"bleu", "bleu4", "rouge_l"}


def test_clap_text_without_weights_names_the_download(monkeypatch, tmp_path):
    monkeypatch.delenv("MUSICEVAL_CLAP", raising=False)
    with pytest.raises(InputError, match="huggingface-cli download laion/larger_clap_music"):
        run(DASHENG, "dasheng", "--metrics", "clap_text", "--conditions", "correct", "--clap", str(tmp_path / "absent"))


def test_several_references_every_metric_uses_them_all(tmp_path):
    from musiceval.encoders.base import load_text_encoder
    from musiceval.metrics.embedding import text_similarity

    refs_b = ["Fast rock with loud drums.", "An energetic rock song with electric guitar."]
    rows = [{"id": "a", "question": "Describe the music.", "reference": ["A calm piano piece.", "Soft solo piano."],
             "response": "soft solo piano music"},
            {"id": "b", "question": "Describe the music.", "reference": refs_b, "response": "energetic rock song with guitar"}]
    path = tmp_path / "multi.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    per_item = {r["item_id"]: r for r in run(path, "musiceval", "--metrics", "bleu,rouge_l,sentence_cosine",
                                              "--conditions", "correct").per_item}
    minilm = load_text_encoder("minilm")
    for row in rows:
        singles = [text_similarity(minilm, [row["response"]], [r])[0] for r in row["reference"]]
        assert per_item[row["id"]]["sentence_cosine"] == pytest.approx(max(singles), abs=1e-6)
        assert max(singles) > min(singles) + 0.05  # the rule matters on these pairs
        expected = lexical_scores([row["response"]], [row["reference"]], ["bleu", "rouge_l"])
        for metric in ("bleu", "rouge_l"):  # the lexical metrics still see every reference
            assert per_item[row["id"]][metric] == pytest.approx(expected[metric][0])
        assert expected["rouge_l"][0] > lexical_scores([row["response"]], [row["reference"][0]], ["rouge_l"])["rouge_l"][0]


def test_live_freeform_questions_are_the_template_output_of_the_audio_manifest():
    import importlib.util

    from musiceval.data.musicqa import item_references
    from musiceval.generate import load_manifest

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("make_freeform_audio_fixtures", root / "scripts" / "make_freeform_audio_fixtures.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    path = root / "musiceval" / "evals" / "audio" / "freeform.jsonl"
    assert path.read_text(encoding="utf-8") == script.render(), "rerun scripts/make_freeform_audio_fixtures.py"
    items, bad = load_manifest(path)
    truth = {json.loads(line)["id"]: json.loads(line) for line in (root / "musiceval" / "evals" / "audio" / "manifest.jsonl").open()}
    assert not bad and len(items) == len(truth) == 15
    for item in items:
        refs = item_references(item)
        assert len(refs) == 2 and item.meta["source"].startswith("template-written")
        row = truth[item.id.removeprefix("describe_")]
        assert (item.audio, item.group) == (row["audio"], row["group"])
        fact = row["meta"].get("note") or row["answer"]  # the pitch clips name the note, the others their answer
        assert all(fact.lower() in r.lower() for r in refs), (item.id, refs)


def test_live_random_draws_are_averaged_per_item():
    """Responses from ``musiceval generate --random-draws 2`` (meta "draw") score as the mean over draws."""
    from musiceval.data.answers import AnswerSet
    from musiceval.records import Item, Response
    from musiceval.protocols.freeform.engine import FreeformEvaluation

    items = [Item(id=f"i{k}", question="Describe the music.", reference=ref, audio=f"c{k}.wav")
             for k, ref in enumerate(["A slow piano piece in C major.", "Fast drums and an electric guitar."])]
    texts = {("i0", 0): "A slow piano piece.", ("i0", 1): "Drums and guitar.",
             ("i1", 0): "A piano in C major.", ("i1", 1): "Fast drums, electric guitar."}
    responses = [Response(i.id, "correct", "m", i.question, "An answer.") for i in items]
    responses += [Response(i, "random", "m", "Describe the music.", t, {"draw": d}) for (i, d), t in texts.items()]
    run = FreeformEvaluation(AnswerSet(items=items, responses=responses))
    assert len(run.texts["random"]) == 2
    refs = [it.reference for it in items]
    per_draw = [lexical_scores([texts[(i.id, d)] for i in items], refs, ["bleu"], df_references=refs)["bleu"] for d in (0, 1)]
    np.testing.assert_allclose(run.scores("bleu", "random").values, (per_draw[0] + per_draw[1]) / 2)
