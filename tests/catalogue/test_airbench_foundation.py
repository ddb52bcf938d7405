"""AIR-Bench foundation, music items: the catalogue entry and its letter rule (docs/benchmarks.md).

``Foundation/Foundation_meta.json`` is written in the layout OFA-Sys/AIR-Bench's
``Inference_Foundation.py`` reads (a JSON array of ``question, choice_a .. choice_d, answer_gt,
path, task_name, dataset_name, uniq_id``; the clip at ``Foundation/<task_name>_<dataset_name>/<path>``),
into a hub cache at the pinned commit; prepared offline (``prepare`` and ``musiceval data prepare``),
its replies read with ``score_foundation.py``'s rule, and asked by the tiny Qwen2-Audio checkpoint
through ``musiceval run``."""
from __future__ import annotations

import json

import pytest

import musiceval.catalogue.airbench_foundation as entry
from musiceval.catalogue import get_benchmark
from musiceval.catalogue.airbench import REVISION
from musiceval.catalogue.lock import MANIFEST_NAME
from musiceval.catalogue.prepare import prepare
from musiceval.metrics.choice import UNANSWERED, accuracy, get_matcher, instruction_following_rate
from tests.catalogue.mirror import finished_run, hub_dataset, musiceval_cli, offline, tiny_run, tone, tone_bytes

NAME = "airbench-foundation-music"
META = "Foundation/Foundation_meta.json"


def _row(uid, task, dataset, clip, question, answer, *choices, **extra):
    row = {"path": clip, "question": question, "answer_gt": answer, "task_name": task, "dataset_name": dataset,
           "uniq_id": uid, **dict(zip(("choice_a", "choice_b", "choice_c", "choice_d"), choices)), **extra}
    return row


GENRE = ("Music_Genre_Recognition", "fma")
#: six music tasks (two, three and four options), a speech item, and rows that cannot be read as music items
ROWS = [
    _row(7, "Speaker_Age_Prediction", "common_voice_13.0_en", "a.mp3", "Which age range?", "teens to twenties",
         "teens to twenties", "thirties to fourties", "fifties to sixties", "seventies to eighties"),
    _row(5001, *GENRE, "004708.wav", "What is the genre of this music?", "jazz", "rock", "jazz", "hip-hop", "folk"),
    _row(5002, "Music_Instruments_Classfication", "nsynth", "bass_electronic_018-047-100.wav",
         "Which instrument plays this note?", "bass", "guitar", "bass", "organ", "flute"),
    _row(5003, "Music_Midi_Pitch_Analysis", "nsynth", "keyboard_acoustic_004-060-025.wav",
         "What is the MIDI pitch of this note?", "60", "60", "47", "72", "55"),
    _row(5004, "Music_Midi_Velocity_Analysis", "nsynth", "keyboard_acoustic_004-060-025.wav",
         "What is the MIDI velocity of this note?", "25", "25", "50", "75", "100"),
    _row(5005, "Music_AQA", "music_avqa", "00001234.wav", "Is the piano playing all the time?", "no", "yes", "no"),
    _row(5006, "Music_Mood_Recognition", "MTJ-Jamendo", "1001.wav", "What is the mood of this music?", "sad",
         "happy", "sad", "energetic", choice_d=None),
    _row(5007, "Music_Genre_Recognition", "MTJ-Jamendo", "gone.wav", "What genre is it?", "pop", "pop", "rock"),
    _row(5008, *GENRE, "004708.wav", "Which genre?", "polka", "rock", "jazz", "hip-hop", "folk"),
    _row(5009, *GENRE, "004708.wav", "Which genre?", "rock", "rock", "jazz", None, "folk"),
    _row(5010, *GENRE, "004708.wav", "Which genre?", "rock", "Rock", "rock", "jazz"),
    _row(5001, *GENRE, "004708.wav", "A repeated id?", "rock", "rock", "jazz"),
    _row(None, "Music_AQA", "music_avqa", "00001234.wav", "No id?", "yes", "yes", "no"),
    _row(5011, "Music_AQA", "music_avqa", "00001234.wav", "  ", "yes", "yes", "no"),
    {"question": "no task name", "choice_a": "x", "choice_b": "y", "answer_gt": "x", "path": "x.wav", "uniq_id": 5999},
    42,
]
USABLE = ["5001", "5002", "5003", "5004", "5005", "5006", "5007"]
CLIPS = {"Music_Genre_Recognition_fma/004708.wav": 220.0,
         "Music_Instruments_Classfication_nsynth/bass_electronic_018-047-100.wav": 110.0,
         "Music_Midi_Pitch_Analysis_nsynth/keyboard_acoustic_004-060-025.wav": 261.6,
         "Music_Midi_Velocity_Analysis_nsynth/keyboard_acoustic_004-060-025.wav": 262.0,
         "Music_AQA_music_avqa/00001234.wav": 330.0,
         "Music_Mood_Recognition_MTJ-Jamendo/1001.wav": 440.0}


def _files(rows=ROWS) -> dict[str, bytes]:
    files = {META: json.dumps(rows).encode(), "Chat/Chat_meta.json": b"[]"}
    files.update({f"Foundation/{clip}": tone_bytes(freq) for clip, freq in CLIPS.items()})
    files["Foundation/Speaker_Age_Prediction_common_voice_13.0_en/a.wav"] = tone_bytes(660.0)  # not music: not fetched
    return files


@pytest.fixture
def foundation_mirror(mirror):
    hub_dataset(mirror["hub"], "qyang1021/AIR-Bench-Dataset", _files(), commit=REVISION)
    return mirror


def _questions(tmp_path, rows=ROWS):
    meta = tmp_path / "Foundation_meta.json"
    meta.write_text(json.dumps(rows), encoding="utf-8")
    return {q.id: q for q in get_benchmark(NAME).questions({META: meta})}


def test_the_music_rows_are_asked_with_the_upstream_prompt(tmp_path):
    qs = _questions(tmp_path)
    usable = {i: q for i, q in qs.items() if "unusable" not in q.meta}
    assert sorted(usable) == USABLE and "7" not in qs  # the speech item is not a music item
    q = usable["5001"]
    assert q.prompt == ("Choose the most suitable answer from options A, B, C, and D to respond the question in next "
                        "line, you may only choose A or B or C or D.\nWhat is the genre of this music?\n"
                        "A. rock\nB. jazz\nC. hip-hop\nD. folk")  # Inference_Foundation.py's instruction, as written
    assert q.question == "What is the genre of this music?" and q.choices == ("rock", "jazz", "hip-hop", "folk")
    assert q.answer == "B" and q.audio_key == q.group == "Music_Genre_Recognition_fma/004708.wav"
    assert q.meta["task"] == "Music_Genre_Recognition" and q.meta["dataset"] == "fma"
    assert usable["5005"].choices == ("yes", "no") and usable["5005"].prompt.endswith("A. yes\nB. no\nC. None\nD. None")
    assert usable["5006"].choices == ("happy", "sad", "energetic") and usable["5006"].prompt.endswith("D. None")
    assert {i: q.answer for i, q in usable.items()} == {"5001": "B", "5002": "B", "5003": "A", "5004": "A", "5005": "B",
                                                        "5006": "B", "5007": "A"}
    assert all(q.meta["distractor_types"][ord(q.answer) - 65] == "answer" and len(q.meta["distractor_types"]) ==
               len(q.choices) for q in usable.values())


def test_every_row_that_is_no_item_is_counted_with_its_reason(tmp_path):
    qs = _questions(tmp_path)
    reasons = {i: q.meta["unusable"] for i, q in qs.items() if "unusable" in q.meta}
    where = "of Foundation/Foundation_meta.json"
    assert reasons == {
        "5008": f"row 8 {where} (Music_Genre_Recognition): answer_gt 'polka' is none of the options",
        "5009": f"row 9 {where} (Music_Genre_Recognition): choice_d is given without choice_c",
        "5010": f"row 10 {where} (Music_Genre_Recognition): the options repeat (Rock, rock, jazz)",
        "row11": f"row 11 {where} (Music_Genre_Recognition): uniq_id 5001 repeats an earlier row",
        "row12": f"row 12 {where} (Music_AQA): uniq_id is missing (or not an integer or a string)",
        "5011": f"row 13 {where} (Music_AQA): question is missing or empty",
        "row14": f"row 14 {where}: no task_name: cannot tell whether it is a music item",
        "row15": f"row 15 {where}: not an object (int): cannot tell whether it is a music item"}
    assert all(qs[i].audio_key is None for i in reasons)
    with pytest.raises(ValueError, match="expected a JSON array of foundation items, got dict"):
        entry.read_rows({"rows": []})


def test_the_letter_rule_reads_replies_as_score_foundation_does():
    # the module's own examples run in tests/test_doctests.py
    match = get_matcher(get_benchmark(NAME).options["matcher"])
    options = ["rock", "jazz", "hip-hop", "folk"]
    replies = {"B": 1, "B.": 1, "  B\n": 1, "The answer is B.": 1, "I would say B.": 1,  # last-but-one character
               "Answer: B": 0,         # the first character, A, wins
               "Definitely B.": 3,     # a capital D opens the reply
               "(B)": 1, "(B).": UNANSWERED, "b": UNANSWERED, "jazz": UNANSWERED,  # no option texts are read
               "None": UNANSWERED, "": UNANSWERED, None: UNANSWERED, "The answer is\nB.": 1}
    assert {reply: match(reply, options) for reply in replies} == replies
    assert match("C", ["yes", "no"]) == UNANSWERED  # a letter beyond the options
    predicted = [match(reply, options) for reply in ("B", "Answer: B", "jazz", "(B).")]
    # upstream: 1 of the 2 answered is right (0.5); musiceval counts the two unanswered wrong
    assert accuracy(predicted, [1] * 4) == 0.25 and instruction_following_rate(predicted) == 0.5


def test_prepared_offline_from_the_hub_layout_counting_every_unreadable_row(foundation_mirror):
    bench = get_benchmark(NAME)
    assert bench.protocol == "choice" and bench.source.revision == REVISION and not bench.source.unpinned
    assert bench.items is None and bench.licence.startswith("CC BY-NC 4.0")
    report = prepare(bench, foundation_mirror["data"], progress=False, log=lambda _: None)
    lock = report.lock
    assert lock.source["resolved_revision"] == REVISION and lock.items == 15  # the file's music rows, all counted
    assert lock.with_audio == 6 and set(lock.item_clips) == set(USABLE) - {"5007"}
    assert lock.missing["5007"].startswith("no clip for 'Music_Genre_Recognition_MTJ-Jamendo/gone.wav'")
    assert "answer_gt 'polka' is none of the options" in lock.missing["5008"]
    assert {"5009", "5010", "5011", "row11", "row12", "row14", "row15"} <= set(lock.missing) and not lock.corrupt
    assert list(lock.question_files) == [META]
    audio = report.audio_root
    assert not (audio / "Speaker_Age_Prediction_common_voice_13.0_en").exists()  # only the music folders are fetched
    rows = {r["id"]: r for r in map(json.loads, (report.directory / MANIFEST_NAME).read_text("utf-8").splitlines())}
    assert rows["5005"]["choices"] == ["yes", "no"] and rows["5005"]["answer"] == "B"
    assert all((audio / r["audio"]).is_file() for r in rows.values())


def test_the_datasets_own_foundation_folder_as_audio_dir(mirror, tmp_path):
    hub_dataset(mirror["hub"], "qyang1021/AIR-Bench-Dataset", {META: json.dumps(ROWS).encode()}, commit=REVISION)
    local = tmp_path / "AIR-Bench-Dataset"  # a copy downloaded elsewhere, passed whole
    tone(local / "Foundation" / "Music_Genre_Recognition_fma" / "004708.wav", 220.0)
    report = prepare(get_benchmark(NAME), mirror["data"], audio_dir=local, progress=False, log=lambda _: None)
    assert report.lock.with_audio == 1
    assert report.lock.item_clips["5001"] == "Foundation/Music_Genre_Recognition_fma/004708.wav"


def test_musiceval_data_prepare_and_listoffline(foundation_mirror):
    done = musiceval_cli("data", "prepare", NAME, "--data-root", str(foundation_mirror["data"]), "--no-progress",
                env=offline(foundation_mirror), timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    said = done.stdout + done.stderr
    assert "6 of 15 items with audio" in said and "Traceback" not in said
    listed = musiceval_cli("data", "list", timeout=120)
    line = next(x for x in listed.stdout.splitlines() if x.startswith(NAME))
    assert "choice" in line and "CC BY-NC 4.0 (dataset card" in line


@pytest.mark.slow
def test_musiceval_run_scores_what_the_tiny_model_answered_with_the_letter_rule(tiny_qwen, foundation_mirror, tmp_path):
    out = tmp_path / "run"
    done = musiceval_cli(*tiny_run(NAME, tiny_qwen, foundation_mirror, tmp_path),
                         env={**offline(foundation_mirror), "MUSICEVAL_CACHE": str(tmp_path / "cache"), "CI": ""})
    results = finished_run(done, out)
    assert "covers 6 of 15 items" in json.dumps(results)
    assert results["meta"]["provenance"]["scorer"]["datasets"][NAME]["revision"] == REVISION
    answers = [json.loads(line) for line in (out / f"{NAME}.jsonl").read_text("utf-8").splitlines()]
    assert {a["condition"] for a in answers} == {"correct", "random", "noise", "text_only"}
    asked = {a["item_id"]: a["prompt"] for a in answers if a["condition"] == "correct"}
    assert asked["5005"].endswith("A. yes\nB. no\nC. None\nD. None")
    assert 'matcher = "airbench-foundation"' in (out / "musiceval.toml").read_text("utf-8")
    # upstream reports accuracy per task: every answer row carries its task, the table has a row per task
    assert {a["task"] for a in answers} == {"Music_Genre_Recognition", "Music_Instruments_Classfication",
                                           "Music_Midi_Pitch_Analysis", "Music_Midi_Velocity_Analysis", "Music_AQA",
                                           "Music_Mood_Recognition"}
    table = next(t for t in results["tables"] if t["protocol"] == "choice" and "per dimension" in t["name"])
    per_task = {row["value"]: row for row in table["rows"] if row["slice"] == "task"}
    assert set(per_task) == {a["task"] for a in answers}
    assert all(0.0 <= row["accuracy"] <= 1.0 for row in per_task.values())
    # items with two or three options (Music_AQA, Music_Mood_Recognition here) count in the headline
    assert "options_as_published = true" in (out / "musiceval.toml").read_text("utf-8")
    assert not any(row["slice"] == "distractors" for row in table["rows"])
