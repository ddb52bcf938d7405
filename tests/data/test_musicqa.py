"""MusicQA loaders: MU-LLaMA release layout, dasheng recorded layout, musiceval JSONL, captions."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from musiceval.catalogue.datasets.captions import load_captions
from musiceval.data.musicqa import (
    item_references,
    load_dasheng_musicqa,
    load_freeform_jsonl,
    load_musicqa_release,
    strip_question_prefix,
    track_of,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "freeform" / "musicqa_dev_midashenglm.jsonl"
SHARED = ROOT.parent / "shared" / "data"


def test_release_layout_as_in_evalmusicqa_json(tmp_path):
    # the layout of MU-LLaMA's MusicQA/MusicQA/EvalMusicQA.json
    records = [
        {"audio_name": "012542.wav", "conversation": [{"from": "human", "value": "Describe the audio"},
                                                      {"from": "gpt", "value": "The audio is an alternative rock track."}]},
        {"audio_name": "012542.wav", "conversation": [{"from": "human", "value": "What is the overall genre of the audio?"},
                                                      {"from": "gpt", "value": "The overall genre is postrock."}]},
        {"audio_name": "012543.wav", "conversation": [{"from": "human", "value": "Describe the audio"},
                                                      {"from": "gpt", "value": "An experimental piece."}]},
        {"audio_name": "012544.wav", "conversation": [{"from": "human", "value": "Describe the audio"}]},
        "not an object",
    ]
    path = tmp_path / "EvalMusicQA.json"
    path.write_text(json.dumps(records, indent=2))
    data = load_musicqa_release(path)
    assert [it.id for it in data.items] == ["012542.wav#0", "012542.wav#1", "012543.wav#0"]
    assert data.items[1].question == "What is the overall genre of the audio?"
    assert data.items[1].reference == "The overall genre is postrock."
    assert data.items[0].group == data.items[1].group == "012542.wav"
    assert len(data.failures) == 2 and "conversation" in data.failures[0].reason


def test_release_file_errors_name_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="mu-llama/MusicQA"):
        load_musicqa_release(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe[")
    with pytest.raises(ValueError, match="EvalMusicQA.json layout"):
        load_musicqa_release(bad)


def test_question_prefix_is_stripped_from_dasheng_references():
    assert strip_question_prefix("What do you hear in the audio?", "What do you hear in the audio: Flute and bass.") == "Flute and bass."
    assert strip_question_prefix("Describe the audio", "Describe the audio in detail: x") == "Describe the audio in detail: x"
    assert strip_question_prefix("Describe the audio", "The audio is calm.") == "The audio is calm."
    assert strip_question_prefix("Describe the audio", "Describe the audio") == ""


def test_dasheng_fixture_loads_with_groups_prompts_and_counted_exclusions():
    data = load_dasheng_musicqa(FIXTURE)
    assert len(data.items) == 396 and len(data.responses) == 396
    # the 4 rows whose reference is only the question are left out by rule, counted with the file, not failures
    assert data.failures == []
    (rule,) = data.excluded
    assert rule.rule == "reference_copies_question" and len(rule.ids) == 4 and "dev_midashenglm.jsonl" in rule.why
    assert len(data.items) + len(rule.ids) == 400
    assert not any(it.reference.lower().startswith(it.question.rstrip("?").lower() + ":") for it in data.items)
    assert len({it.group for it in data.items}) == 45
    first = data.items[0]
    assert first.id == "audios_eval_013063_c07d001fa2f84523806c3f3ecc243c11.flac" and first.group == "013063"
    assert data.responses[0].prompt == "Describe the audio Answer with 1-2 sentences"
    assert track_of("weird.flac") == "weird.flac"


def test_dasheng_hostile_lines_are_per_item_failures(tmp_path):
    good = {"question": "Describe the audio", "answer": "A calm piece.", "audio": "audios_eval_000001_ab.flac",
            "prompt": "Describe the audio Answer with 1-2 sentences", "model_output": "calm", "model_name": "M"}
    lines = [
        json.dumps(good).encode(),
        b"{broken json",
        b"\xff\xfe not utf-8",
        json.dumps([1, 2]).encode(),
        json.dumps({**good, "audio": "audios_eval_000002_cd.flac", "answer": None}).encode(),
        json.dumps({**good, "audio": "audios_eval_000003_ef.flac", "model_output": None}).encode(),
        json.dumps(good).encode(),  # duplicate
        json.dumps({**good, "audio": "audios_eval_000004_aa.flac", "model_output": "go " * 10_000}).encode(),
    ]
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    data = load_dasheng_musicqa(path)
    assert [it.id for it in data.items] == ["audios_eval_000001_ab.flac", "audios_eval_000003_ef.flac", "audios_eval_000004_aa.flac"]
    assert data.responses[1].text == ""  # null output: scored as an empty answer, not dropped
    reasons = " | ".join(f.reason for f in data.failures)
    assert len(data.failures) == 5
    for needle in ("malformed JSON", "not valid UTF-8", "expected a JSON object", "field 'answer'", "duplicate item"):
        assert needle in reasons


def test_musiceval_freeform_jsonl(tmp_path):
    rows = [
        {"id": "a", "question": "Describe the music.", "reference": ["Calm piano.", "A quiet piano piece."], "response": "piano", "group": "t1"},
        {"id": "a", "question": "Describe the music.", "reference": "Calm piano.", "response": "drums", "condition": "random"},
        {"id": "b", "question": "Q", "reference": "", "response": "x"},
        {"id": "c", "question": "Q", "reference": "R", "response": None},
        {"id": "a", "question": "Describe the music.", "reference": "Calm piano.", "response": "again"},
    ]
    path = tmp_path / "f.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    data = load_freeform_jsonl(path)
    assert [it.id for it in data.items] == ["a", "c"]
    assert item_references(data.items[0]) == ("Calm piano.", "A quiet piano piece.")
    assert [(r.item_id, r.condition, r.text) for r in data.responses] == [("a", "correct", "piano"), ("a", "random", "drums"), ("c", "correct", "")]
    assert len(data.failures) == 2


@pytest.mark.parametrize("name, n_min", [("song_describer.csv", 700), ("musiccaps-public.csv", 5000)])
def test_caption_csvs_load_as_reference_sets(name, n_min):
    path = SHARED / "captions" / name
    if not path.exists():
        pytest.skip(f"{path} absent (../shared/data is optional)")
    items, failures = load_captions(path)
    assert len(items) >= n_min and not failures
    assert all(item_references(it) and all(r.strip() for r in item_references(it)) for it in items)
    if name == "song_describer.csv":
        assert max(len(item_references(it)) for it in items) > 1


def test_caption_csv_layouts(tmp_path):
    sd = tmp_path / "sd.csv"
    sd.write_text("caption_id,track_id,caption,is_valid_subset,familiarity,artist_id,album_id,path,duration\n"
                  "1,100,Calm piano.,True,0,1,1,00/100.mp3,10\n2,100,\"Soft, slow piano\",,0,1,1,00/100.mp3,10\n3,101,,True,0,1,1,x,1\n")
    items, failures = load_captions(sd)
    assert item_references(items[0]) == ("Calm piano.", "Soft, slow piano") and len(failures) == 1
    items, _ = load_captions(sd, valid_only=True)
    assert item_references(items[0]) == ("Calm piano.",)
    mc = tmp_path / "mc.csv"
    mc.write_text("ytid,start_s,end_s,audioset_positive_labels,aspect_list,caption,author_id,is_balanced_subset,is_audioset_eval\n"
                  "abc,30,40,x,[],A rock song.,4,False,True\n")
    items, _ = load_captions(mc)
    assert items[0].id == "abc_30" and items[0].reference == "A rock song."
    other = tmp_path / "o.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="neither Song Describer"):
        load_captions(other)


def test_every_duplicate_record_is_a_counted_failure_with_its_line(tmp_path):
    """12 records sharing one id: 1 item and 11 failures, each named by its own line."""
    from musiceval.cli import main

    rec = {"question": "Describe the audio", "answer": "a calm piano piece", "audio": "same.flac",
           "prompt": "p", "model_output": "a calm piano piece", "model_name": "M"}
    path = tmp_path / "dups.jsonl"
    path.write_text("".join(json.dumps(rec) + "\n" for _ in range(12)))
    data = load_dasheng_musicqa(path)
    assert len(data.items) == 1 and len(data.failures) == 11
    assert [f.item_id for f in data.failures] == [f"dups.jsonl:{k}" for k in range(2, 13)]
    free = tmp_path / "free.jsonl"
    free.write_text("".join(json.dumps({"id": "x", "question": "q", "reference": "r", "response": "r"}) + "\n" for _ in range(12)))
    assert len(load_freeform_jsonl(free).failures) == 11
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["score", "freeform", str(path), "--format", "dasheng", "--json", "--metrics", "bleu",
                     "--conditions", "correct"]) == 0
    obj = json.loads(out.getvalue())
    assert obj["n"] + obj["n_failed"] == 12


def test_a_blank_reference_is_a_failure_and_a_copy_of_the_question_is_left_out(tmp_path):
    row = {"question": "Describe the audio", "audio": "audios_eval_000001_ab.flac", "model_output": "calm", "model_name": "M"}
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({**row, "answer": "   "}) + "\n"
                    + json.dumps({**row, "audio": "audios_eval_000002_cd.flac", "answer": "Describe the audio?"}) + "\n")
    data = load_dasheng_musicqa(path)
    assert [f.reason for f in data.failures] == ["d.jsonl:1: reference ('answer') is empty; nothing to score against"]
    assert [(e.rule, e.ids) for e in data.excluded] == [("reference_copies_question", ("audios_eval_000002_cd.flac",))]
