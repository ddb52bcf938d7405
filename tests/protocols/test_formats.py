"""Answer formats: detection on every real answer file, wrong-protocol errors, hostile inputs."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from musiceval.data.answers import AnswerSet
from musiceval.data.formats import FORMATS, FormatError, detect_format, load_answers, sniff
from musiceval.protocols.pairing import model_name

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
#: ../shared/data beside the repo (MUSICEVAL_SHARED_DATA overrides it, e.g. for a git worktree)
SHARED = Path(os.environ.get("MUSICEVAL_SHARED_DATA") or REPO.parent / "shared" / "data")

#: every answer file in fixtures/ -> the format it must resolve to
FIXTURE_ANSWERS = {
    "choice/dev_midashenglm.jsonl": "dasheng-choice",
    "factual/nsynth_midashenglm.jsonl": "dasheng-factual",
    "freeform/musicqa_dev_midashenglm.jsonl": "dasheng-musicqa",
    **{f"factual/{m}_{t}.jsonl": "cmi-bench" for m in ("ltu", "mullama") for t in ("GTZAN", "Nsynth_instrument")},
}
#: files of the repository that hold no answers (manifests, rewrites, instructions, ontology, triplets)
NOT_ANSWERS = ["musiceval/evals/audio/manifest.jsonl", "musiceval/evals/audio/freeform.jsonl",
               "fixtures/freeform/rewrites_handwritten.jsonl", "fixtures/mir/instructions/CMI_GTZAN.jsonl",
               "musiceval/vocab/audioset_ontology.json", "fixtures/text_encoders/triplets_sample.csv",
               "fixtures/factual/musicnet_metadata.csv"]
SHARED_ANSWERS = {"muchomusic/dev_midashenglm.jsonl": "dasheng-choice", "nsynth/dev_midashenglm.jsonl": "dasheng-factual",
                  "musicqa/dev_midashenglm.jsonl": "dasheng-musicqa"}


def test_builtin_formats_are_registered_with_their_protocols():
    names = FORMATS.names()
    for name in ("musiceval-choice", "dasheng-choice", "muchomusic-eval", "musiceval-factual", "dasheng-factual",
                 "dasheng-musicqa", "musiceval-freeform", "cmi-bench"):
        assert name in names
    assert FORMATS.get("cmi-bench").protocols == ("mir", "factual")


@pytest.mark.parametrize("rel,expected", sorted(FIXTURE_ANSWERS.items()))
def test_every_fixture_answer_file_is_detected(rel, expected):
    path = FIXTURES / rel
    fmt = detect_format(path)
    assert fmt.name == expected
    answers = load_answers(path)
    assert isinstance(answers, AnswerSet) and answers.format == expected and answers.source == str(path)
    assert len(answers.responses) >= 200 and model_name(answers) != "model"


def test_every_mir_fixture_output_is_cmi_bench_with_its_task():
    files = sorted((FIXTURES / "mir" / "outputs").glob("*/*.jsonl"))
    assert len(files) == 38
    for path in files:
        answers = load_answers(path, protocol="mir")
        assert answers.format == "cmi-bench" and answers.extra["task"] in path.stem
        assert answers.model == path.parent.name
        assert len(answers.items) == len(answers.responses) > 0


@pytest.mark.parametrize("rel", NOT_ANSWERS)
def test_files_without_answers_are_refused_naming_their_keys(rel):
    with pytest.raises(FormatError) as exc:
        detect_format(REPO / rel)
    msg = str(exc.value)
    assert "\n" not in msg and rel.split("/")[-1] in msg and "keys" in msg and "no answer format" in msg


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data not present")
def test_every_shared_answer_file_is_detected():
    for rel, expected in SHARED_ANSWERS.items():
        assert detect_format(SHARED / rel).name == expected
    outputs = sorted((SHARED / "cmi-bench" / "outputs").glob("*/*.jsonl"))
    assert outputs
    for path in outputs:  # reads only the first 64 KiB of each (the largest is several MB)
        assert detect_format(path, "mir").name == "cmi-bench"
    for path in sorted((SHARED / "cmi-bench" / "instructions").glob("*.jsonl")):
        with pytest.raises(FormatError, match="instruction"):
            detect_format(path)


def test_a_file_given_to_the_wrong_protocol_names_file_keys_and_fix():
    path = FIXTURES / "factual" / "nsynth_midashenglm.jsonl"
    with pytest.raises(FormatError) as exc:
        detect_format(path, "choice")
    msg = str(exc.value)
    assert msg.startswith(str(path)) and "\n" not in msg
    assert "dasheng factual answers" in msg and "label" in msg and "model_output" in msg
    assert "feeds 'factual', not 'choice'" in msg and "give it to the factual protocol" in msg
    with pytest.raises(FormatError, match="feed 'choice' and 'judge', not 'freeform'"):
        load_answers(FIXTURES / "choice" / "dev_midashenglm.jsonl", protocol="freeform")
    with pytest.raises(FormatError, match="format 'dasheng-choice' feeds 'choice' and 'judge', not 'mir'"):
        load_answers(FIXTURES / "choice" / "dev_midashenglm.jsonl", "dasheng-choice", protocol="mir")


def test_cmi_bench_outputs_feed_mir_and_factual():
    path = FIXTURES / "factual" / "ltu_GTZAN.jsonl"
    assert detect_format(path, "factual").name == detect_format(path, "mir").name == "cmi-bench"
    answers = load_answers(path, protocol="factual")
    assert answers.items[0].labels == (answers.items[0].reference,)


@pytest.mark.parametrize("content,seen", [
    (b"", "empty file"),
    (b"\n \n", "empty file"),
    (b"this is not json at all\n", "neither JSON lines"),
    (b"[1, 2, 3]", "JSON array of int values, not objects"),
    (b'["a", "b"]', "JSON array of str values"),
    (b"{not json}\n", "neither JSON lines"),
    (b'{"x": 1, "y": 2}\n', "JSON lines with keys x, y"),
    (b"a,b\n", "a CSV with keys a, b"),
    (b"\xff\xfe\x00garbage", "neither"),
])
def test_hostile_files_raise_one_line_format_errors(tmp_path, content, seen):
    path = tmp_path / "answers.jsonl"
    path.write_bytes(content)
    with pytest.raises(FormatError) as exc:
        load_answers(path)
    msg = str(exc.value)
    assert "\n" not in msg and str(path) in msg and seen in msg


def test_a_missing_file_and_an_unknown_format_name(tmp_path):
    with pytest.raises(FileNotFoundError, match="file not found"):
        detect_format(tmp_path / "nope.jsonl")
    path = FIXTURES / "choice" / "dev_midashenglm.jsonl"
    with pytest.raises(FormatError, match="unknown answer format 'dasheng-choise'; did you mean 'dasheng-choice'"):
        load_answers(path, "dasheng-choise")


def test_detection_reads_a_truncated_json_array_head(tmp_path):
    records = [{"question": "q", "response": "x" * 500, "correct_answer": "blues", "audioid": f"data/{i}.wav"} for i in range(400)]
    path = tmp_path / "model_GTZAN.jsonl"
    path.write_text(json.dumps(records), encoding="utf-8")
    assert path.stat().st_size > 1 << 16
    kind, head = sniff(path)
    assert kind == "json-array" and 0 < len(head) < 400
    assert detect_format(path).name == "cmi-bench"
    assert len(load_answers(path).items) == 400


def test_loader_errors_are_format_errors_naming_the_file(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("[{\"answer_orders\": [0, 1, 2, 3]", encoding="utf-8")  # an array cut short
    with pytest.raises(FormatError) as exc:
        load_answers(path, "muchomusic-eval")
    assert str(path) in str(exc.value) or path.name in str(exc.value)


def test_a_first_record_longer_than_the_head_is_still_detected(tmp_path):
    path = tmp_path / "answers.jsonl"
    looping = {"dataset_name": "NSynth", "audio": "a.wav", "label": ["bass"], "prompt": "?", "model_output": "bass " * 20000}
    path.write_text(json.dumps(looping) + "\n" + json.dumps({**looping, "audio": "b.wav", "model_output": "flute"}) + "\n",
                    encoding="utf-8")
    assert path.stat().st_size > 1 << 16
    assert detect_format(path).name == "dasheng-factual"
