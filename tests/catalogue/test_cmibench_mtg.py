"""``cmi-bench/MTG_*``: CMI-Bench's four MTG-Jamendo tasks prepared from the user's split files with the
rule of the toolkit's ``data/MTG/sft_{genre,emotion,instrument,tags}.py`` (musiceval/catalogue/mtg.py).
The split files here are written in mtg-jamendo-dataset's layout (a header, then TRACK_ID, ARTIST_ID,
ALBUM_ID, PATH, DURATION and the ``<category>---<tag>`` columns, tab-separated); the tracks and tags
of the first rows are those of the real ``split-0`` files."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from musiceval.catalogue import get_benchmark
from musiceval.catalogue.fetch import FetchError
from musiceval.catalogue.mtg import GENERATORS_COMMIT, TASKS, questions_from_split
from musiceval.catalogue.prepare import MANIFEST_NAME, prepare, prepared_dir
from musiceval.catalogue.spec import benchmark_names
from musiceval.cli import main
from musiceval.data.benchmarks import CMI_BENCH_TEST_ITEMS
from musiceval.vocab.cmibench import TAG_VOCABULARIES
from tests.catalogue.mirror import musiceval_cli, tiny_run_of_own_files, tone

HEADER = "TRACK_ID\tARTIST_ID\tALBUM_ID\tPATH\tDURATION\tTAGS"
#: task -> rows (path, tags as written in the file: unsorted, with their category)
ROWS = {
    "MTG_genre": [
        ("14/214.mp3", ["genre---punkrock"]),
        ("92/1048592.mp3", ["genre---rock", "genre---alternative", "genre---electronic"]),
        ("56/1376256.mp3", ["genre---easylistening", "genre---downtempo", "genre---chillout"]),
    ],
    "MTG_emotion": [
        ("24/3524.mp3", ["mood/theme---melodic"]),
        ("56/1376256.mp3", ["mood/theme---corporate", "mood/theme---commercial"]),
    ],
    "MTG_instrument": [
        ("87/4887.mp3", ["instrument---piano"]),
        ("92/1048592.mp3", ["instrument---voice", "instrument---bass", "instrument---drummachine"]),
    ],
    "MTG_top50tags": [
        ("34/786434.mp3", ["genre---electronic", "genre---house"]),
        ("81/1048681.mp3", ["genre---hiphop", "instrument---computer", "instrument---piano", "mood/theme---emotional"]),
        ("24/1267124.mp3", ["mood/theme---relaxing", "genre---classical", "instrument---piano"]),
    ],
}
#: the reference each row must get: the tags without category, sorted, joined by ", "
EXPECTED = {
    "MTG_genre": ["punkrock", "alternative, electronic, rock", "chillout, downtempo, easylistening"],
    "MTG_emotion": ["melodic", "commercial, corporate"],
    "MTG_instrument": ["piano", "bass, drummachine, voice"],
    "MTG_top50tags": ["electronic, house", "computer, emotional, hiphop, piano", "classical, piano, relaxing"],
}
INSTRUCTIONS = {
    "MTG_genre": "Please provide the genre tag(s) of given audio.",
    "MTG_emotion": "Please provide the emotion tag(s) of given audio.",
    "MTG_instrument": "Please provide the instrument tag(s) of given audio.",
    "MTG_top50tags": "Please provide the music tags of given audio? This may include but not limited to instruments, "
                     "emotions and genres",
}
FILES = {"MTG_genre": "autotagging_genre-test.tsv", "MTG_emotion": "autotagging_moodtheme-test.tsv",
         "MTG_instrument": "autotagging_instrument-test.tsv", "MTG_top50tags": "autotagging_top50tags-test.tsv"}


def _write(directory, task, rows=None):
    rows = ROWS[task] if rows is None else rows
    lines = [HEADER] + [f"track_{k:07d}\tartist_{k:06d}\talbum_{k:06d}\t{path}\t{200 + k}.5\t" + "\t".join(tags)
                        for k, (path, tags) in enumerate(rows)]
    path = directory / FILES[task]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("task", sorted(TASKS))
def test_each_row_is_built_as_the_toolkit_generator_writes_it(tmp_path, task):
    qs = questions_from_split(_write(tmp_path, task), task)
    assert len(qs) == len(ROWS[task])
    for line, (q, (path, _), reference) in enumerate(zip(qs, ROWS[task], EXPECTED[task])):
        clip = "data/MTG/audio-low/" + path.replace(".mp3", ".low.mp3")
        assert q.id == f"{line}|{clip}" and q.audio_key == clip == q.group
        assert q.prompt == q.question == INSTRUCTIONS[task]
        assert q.reference == reference
        assert (q.audio_start, q.audio_end) == (0.0, 30.0)
        assert q.meta == {"task": task, "line": line, "path": path}


def test_the_split_files_and_instructions_are_the_generators():
    assert GENERATORS_COMMIT == "e058384678087b3daf0c78934463ea7894791b85"
    assert {t: s.file for t, s in TASKS.items()} == FILES and {t: s.instruction for t, s in TASKS.items()} == INSTRUCTIONS


@pytest.mark.parametrize("damage, message", [
    (lambda rows: rows[:1] + [("15/215.mp3", [])] + rows[1:], "row 3 has 5 columns"),
    (lambda rows: rows + [("15/215.wav", ["genre---rock"])], "row 5 has 6 columns or no .mp3 path"),
    (lambda rows: rows[:2] + [("15/215.mp3", ["genre---rock", "rock"])], "row 4: tag 'rock' is not <category>---<tag>"),
    (lambda rows: [("15/215.mp3", ["instrument---piano"])] + rows, "row 2: tag 'piano' is not one of MTG_genre's 87 tags"),
])
def test_a_malformed_row_is_refused_with_its_number(tmp_path, damage, message):
    path = _write(tmp_path, "MTG_genre", damage(ROWS["MTG_genre"]))
    with pytest.raises(ValueError, match=message):
        questions_from_split(path, "MTG_genre")


def test_a_file_without_the_header_is_refused(tmp_path):
    path = _write(tmp_path, "MTG_genre")
    path.write_text(path.read_text().split("\n", 1)[1])
    with pytest.raises(ValueError, match="expected a header starting TRACK_ID"):
        questions_from_split(path, "MTG_genre")


def test_a_blank_line_is_a_malformed_row(tmp_path):
    path = _write(tmp_path, "MTG_emotion")
    path.write_text(path.read_text() + "\n")
    with pytest.raises(ValueError, match="row 4 has 1 columns"):
        questions_from_split(path, "MTG_emotion")


@pytest.mark.parametrize("task", sorted(TASKS))
def test_data_prepare_builds_the_manifest_from_the_split_file_and_clips(mirror, tmp_path, task, capsys):
    bench = get_benchmark(f"cmi-bench/{task}")
    assert bench.source.kind == "local" and bench.task == task and bench.items == CMI_BENCH_TEST_ITEMS.get(task)
    with pytest.raises(FetchError, match=f"pass --questions FILE \\({FILES[task]}\\)"):
        prepare(bench, mirror["data"], progress=False, log=lambda _: None)
    path, audio = _write(tmp_path, task), tmp_path / "audio-low"
    for track, _ in ROWS[task][1:]:  # the first track's clip is missing
        tone(audio / track.replace(".mp3", ".low.mp3"), fmt="WAV")
    assert main(["data", "prepare", bench.name, "--data-root", str(mirror["data"]), "--questions", str(path),
                 "--audio-dir", str(audio), "--no-progress"]) == 0
    assert f"{len(ROWS[task]) - 1} of" in capsys.readouterr().out
    manifest = prepared_dir(mirror["data"], bench) / MANIFEST_NAME
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    assert [r["id"] for r in rows] == [f"{k}|data/MTG/audio-low/{p.replace('.mp3', '.low.mp3')}"
                                       for k, (p, _) in enumerate(ROWS[task]) if k]
    for row, reference in zip(rows, EXPECTED[task][1:]):
        assert row["question"] == INSTRUCTIONS[task] and row["reference"] == reference
        assert (row["audio_start"], row["audio_end"]) == (0.0, 30.0) and row["meta"]["benchmark"] == bench.name
        assert row["audio"].endswith(row["id"].split("|", 1)[1].removeprefix("data/MTG/audio-low/"))


def test_cmi_bench_alone_leaves_the_mtg_tasks_to_be_named():
    names = {b.name for b in benchmark_names("cmi-bench")}
    assert not {f"cmi-bench/{t}" for t in TASKS} & names and "cmi-bench/GTZAN" in names
    assert [b.name for b in benchmark_names("cmi-bench/MTG_genre,cmi-bench/MTG_top50tags")] == [
        "cmi-bench/MTG_genre", "cmi-bench/MTG_top50tags"]


def test_data_list_shows_the_entries():
    done = musiceval_cli("data", "list", "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["benchmarks"]}
    for task in TASKS:
        row = rows[f"cmi-bench/{task}"]
        assert "CC BY-NC-SA 4.0" in row["licence"] and FILES[task] in json.dumps(row)
    assert rows["cmi-bench/MTG_genre"]["items"] == 11479 and rows["cmi-bench/MTG_top50tags"]["items"] is None


OUTPUTS = Path(__file__).resolve().parents[3] / "shared" / "data" / "cmi-bench" / "outputs"
if not OUTPUTS.is_dir():
    OUTPUTS = Path("/work/shared/data/cmi-bench/outputs")


@pytest.mark.skipif(not OUTPUTS.is_dir(), reason="../shared/data is not here")
@pytest.mark.parametrize("task", ["MTG_genre", "MTG_emotion", "MTG_instrument"])
def test_the_published_records_are_what_the_rule_builds(task, tmp_path):
    """MU-LLaMA's and LTU's published outputs of the real test split: as many records as the catalogue
    says, each reference sorted and inside the task's vocabulary (why a tag outside it means another
    file), each clip ``data/MTG/audio-low/<NN>/<track>.low.mp3``; the first real row of split 0's
    ``autotagging_genre-test.tsv`` builds the first record exactly."""
    vocab = set(TAG_VOCABULARIES[task])
    for model in ("mullama", "ltu"):
        records = json.loads((OUTPUTS / model / f"{model}_{task}.jsonl").read_text())
        assert len(records) == CMI_BENCH_TEST_ITEMS[task]
        for r in records:
            tags = r["correct_answer"].split(", ")
            assert tags == sorted(tags) and set(tags) <= vocab and r["question"] == INSTRUCTIONS[task]
            assert re.search(r"data/MTG/audio-low/\d\d/\d+\.low\.mp3$", r["audioid"])
        if task == "MTG_genre":
            real = tmp_path / FILES[task]
            real.write_text(HEADER + "\ntrack_0000214\tartist_000014\talbum_000031\t14/214.mp3\t124.6\tgenre---punkrock\n")
            (q,) = questions_from_split(real, task)
            first = records[0]
            assert first["audioid"].endswith(q.audio_key) and (first["question"], first["correct_answer"]) == (
                q.prompt, q.reference) and q.id == "0|data/MTG/audio-low/14/214.low.mp3"


@pytest.mark.slow
def test_musiceval_run_asks_the_tiny_model_and_scores_an_mtg_task(tiny_qwen, mirror, tmp_path):
    audio = tmp_path / "audio-low"
    for track, _ in ROWS["MTG_top50tags"]:
        tone(audio / track.replace(".mp3", ".low.mp3"), fmt="WAV")
    results, _ = tiny_run_of_own_files("cmi-bench/MTG_top50tags", tiny_qwen, mirror, tmp_path,
                                       _write(tmp_path, "MTG_top50tags"), audio)
    text = json.dumps(results)
    assert "MTG_top50tags" in text and "roc_auc" in text and "covers 3 of" in text
