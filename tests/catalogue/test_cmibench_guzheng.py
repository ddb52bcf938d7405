"""``cmi-bench/Guzheng_Tech``: CMI-Bench's Guzheng playing-technique task prepared from the user's
Guzheng_Tech99 label CSVs with the rule of the toolkit's ``data/Guzheng/sft_guzheng.py``
(musiceval/catalogue/guzheng.py). The rule is checked two ways: against the generator's own steps
(``np.genfromtxt`` + ``np.vectorize``, ``np.arange`` offsets, the float32-against-float64 comparison in
torch, ``tensor_to_tuple_string``) on synthetic label files, and against the published task: label
files written back from the 94 published references (``fixtures/mir/outputs/ltu/ltu_Guzheng_Tech.jsonl``)
rebuild them exactly, with the published instruction, order and line numbers."""
from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import numpy as np
import pytest

from musiceval.catalogue import get_benchmark
from musiceval.catalogue.fetch import FetchError, files_in_folder
from musiceval.catalogue.guzheng import (GENERATOR_COMMIT, INSTRUCTION, NO_TECHNIQUE, TECHNIQUES, TEST_TRACKS, clip_of,
                                         clips, label_file, questions_from_files)
from musiceval.catalogue.prepare import MANIFEST_NAME, prepare, prepared_dir
from musiceval.catalogue.spec import benchmark_names
from musiceval.cli import main
from tests.catalogue.mirror import tiny_run_of_own_files, tone

REPO = Path(__file__).resolve().parents[2]
PUBLISHED = REPO / "fixtures" / "mir" / "outputs" / "ltu" / "ltu_Guzheng_Tech.jsonl"
SHARED = Path(os.environ.get("MUSICEVAL_SHARED_DATA") or REPO.parent / "shared" / "data")
#: clips of the published file before its test lines: 746 training, 83 validation
EARLIER = {"train": 746, "validation": 83}
#: one dataset label per reference name, to write a published reference back as label rows
LABEL_OF = {name: label for label, name in reversed(list(TECHNIQUES.items())) if name}
HEADER = "onset_time,offset_time,IPT,note"


def _generator_clips(path: Path) -> list[tuple[float, str]]:
    """The generator's steps on one label CSV: ``(offset, output)`` of each clip."""
    torch = pytest.importorskip("torch")
    data = np.genfromtxt(path, delimiter=",", dtype=str)

    def convert(value):
        try:
            return float(value)
        except ValueError:
            return value

    table = np.vectorize(convert)(data)[1:]
    offsets = np.arange(0, float(table[-1, 0]) + 10.0, 10.0)
    bounds = np.vstack((offsets[:-1], offsets[1:]))
    onsets = torch.tensor(table[:, :1].astype(np.float32)).float()
    masks = torch.logical_and(onsets > torch.tensor(bounds[0, :]), onsets < torch.tensor(bounds[1, :])).numpy().T
    out = []
    for offset, mask in zip(offsets, masks):
        rows = table[np.where(mask == 1)[0]]
        names = [{**TECHNIQUES, "boxian": "0"}[t] for t in rows[:, 2].tolist()]
        kept = [(f"{float(s):.4f}", f"{float(e):.4f}", t) for s, e, t in zip(rows[:, 0].tolist(), rows[:, 1].tolist(), names)
                if t != "0"]
        out.append((float(offset), str(kept if kept else [("0.0", "10.0", "No Tech")])))
    return out


def _write(folder: Path, name: str, rows, split: str = "test") -> Path:
    path = folder / label_file(name, split)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([HEADER, *(",".join(map(str, r)) for r in rows)]) + "\n")
    return path


def _notes(seed: int, seconds: float) -> list[tuple]:
    rng = np.random.default_rng(seed)
    onsets = np.sort(rng.uniform(0, seconds, max(int(seconds * 1.5), 2)))
    labels = rng.choice(sorted(TECHNIQUES), onsets.size)
    return [(f"{t:.6f}", f"{t + rng.uniform(0.05, 2.5):.6f}", lab, int(rng.integers(40, 90))) for t, lab in zip(onsets, labels)]


@pytest.mark.parametrize("seconds", [3.0, 10.0, 25.0, 47.3, 130.0])
def test_each_clip_is_what_the_generator_writes(tmp_path, seconds):
    path = _write(tmp_path, "74", _notes(int(seconds * 10), seconds))
    ours = clips(path)
    assert ours == _generator_clips(path) and len(ours) >= 1
    assert [o for o, _ in ours] == [10.0 * k for k in range(len(ours))]


def test_edges_strict_onsets_boxian_only_clips_and_the_last_row(tmp_path):
    rows = [(0.0, 0.5, "chanyin", 60),           # onset 0: in no clip
            (9.7591, 10.4321, "shanghua", 60),   # ends past its clip: kept with the recording's times
            (10.0, 11.0, "dianyin", 60),         # on the boundary: in no clip
            (12.5, 13.0, "boxian", 60),          # the second clip's only note is left out: No Tech
            (29.99999999, 30.2, "yaozhi", 60),   # float32 reads 30.0: in no clip
            (25.0, 26.0, "lianmo", 60)]          # the last row, not the latest onset, sets the clip count
    path = _write(tmp_path, "17", rows)
    assert clips(path) == _generator_clips(path) == [
        (0.0, "[('9.7591', '10.4321', 'Upward Portamento')]"), (10.0, NO_TECHNIQUE), (20.0, "[('25.0000', '26.0000', 'Plucks')]")]


def _from_published(folder: Path) -> list[dict]:
    """Label files written back from the published references (one label per reference name, a
    ``boxian`` note where a track's last clip has none), training and validation files that give the
    published clip counts before the test lines; returns the published records."""
    records = json.loads(PUBLISHED.read_text("utf-8"))
    by_track: dict[str, list[str]] = {}
    for rec in records:
        by_track.setdefault(Path(rec["audioid"]).stem, []).append(rec["correct_answer"])
    for track, refs in by_track.items():
        rows = [(s, e, LABEL_OF[t], 60) for ref in refs if ref != NO_TECHNIQUE for s, e, t in ast.literal_eval(ref)]
        if refs[-1] == NO_TECHNIQUE:
            rows.append((10.0 * (len(refs) - 1) + 5, 10.0 * len(refs) - 4, "boxian", 60))
        _write(folder, track, rows)
    for split, count in EARLIER.items():  # one recording each whose last onset gives the clip count
        _write(folder, "1", [(1.5, 2.0, "chanyin", 60), (10.0 * count - 5, 10.0 * count - 4, "xiahua", 60)], split)
    return records


def test_the_published_references_rebuild_with_the_published_order_lines_and_instruction(tmp_path):
    records = _from_published(tmp_path)
    qs = questions_from_files(files_in_folder(get_benchmark("cmi-bench/Guzheng_Tech"), tmp_path))
    assert len(qs) == len(records) == 94 and tuple(dict.fromkeys(q.meta["track"] for q in qs)) == TEST_TRACKS
    for k, (q, rec) in enumerate(zip(qs, records)):
        audio = clip_of(q.meta["track"])
        assert q.id == f"{829 + k}|{audio}" and q.meta["line"] == 829 + k and q.group == q.audio_key == audio
        assert rec["audioid"].endswith(audio.removeprefix("data/"))
        assert (q.reference, q.prompt, q.question) == (rec["correct_answer"], rec["question"], rec["question"]) == (
            rec["correct_answer"], INSTRUCTION, INSTRUCTION)
        assert q.audio_end == q.audio_start + 10.0


def test_the_published_instruction_file_rebuilds_line_for_line(tmp_path):
    """All 923 lines of the published ``CMI_Guzheng_Tech.jsonl`` (training, validation and test), where
    ../shared/data holds it: label files written back from every recording's references rebuild the
    94 test lines, ids included (the line numbers count the real training and validation clips)."""
    published = SHARED / "cmi-bench" / "instructions" / "CMI_Guzheng_Tech.jsonl"
    if not published.is_file():
        pytest.skip(f"{published} not here (set MUSICEVAL_SHARED_DATA to the folder holding cmi-bench/)")
    rows = [json.loads(line) for line in published.read_text("utf-8").splitlines()]
    tracks: dict[str, list[dict]] = {}
    for row in rows:
        tracks.setdefault(row["audio_path"][0], []).append(row)
    for audio, recs in tracks.items():
        refs = [r["output"] for r in recs]
        lines = [(s, e, LABEL_OF[t], 60) for ref in refs if ref != NO_TECHNIQUE for s, e, t in ast.literal_eval(ref)]
        if refs[-1] == NO_TECHNIQUE:
            lines.append((10.0 * (len(refs) - 1) + 5, 10.0 * len(refs) - 4, "boxian", 60))
        _write(tmp_path, Path(audio).stem, lines, Path(audio).parent.name)
    qs = questions_from_files(files_in_folder(get_benchmark("cmi-bench/Guzheng_Tech"), tmp_path))
    test = [(no, r) for no, r in enumerate(rows) if r["split"] == ["test"]]
    assert len(rows) == 923 and len(qs) == len(test) == 94
    assert [(q.id, q.reference, q.prompt, q.audio_start, q.audio_end) for q in qs] == [
        (f"{no}|{r['audio_path'][0]}", r["output"], r["instruction"], r["audio_start"], r["audio_end"]) for no, r in test]


def test_the_instruction_commit_and_techniques_are_the_generators():
    assert GENERATOR_COMMIT == "5a071fa6ccdee2b305728e8f74e6bae30d62330b"
    assert INSTRUCTION.startswith("Detect the timestep occurrences of Guzheng (Chinese zither) playing techniques")
    assert NO_TECHNIQUE == "[('0.0', '10.0', 'No Tech')]"
    assert sorted({n for n in TECHNIQUES.values() if n}) == sorted(
        ["Vibrato", "Point Note", "Upward Portamento", "Downward Portamento", "Plucks", "Glissando", "Tremolo"])


@pytest.mark.parametrize("text, message", [
    ("0.5,1.0,chanyin,60\n1.5,2.0,chanyin,60\n", "the first row is not a header"),
    (f"{HEADER}\n", "a header and no note"),
    ("", "the first row is not a header"),
    (f"{HEADER}\n0.5,1.0,chanyin,60\n1.5,2.0,vibrato,60\n", "row 3 '1.5,2.0,vibrato,60' is not onset,offset,technique"),
    (f"{HEADER}\n0.5,1.0,chanyin,60\n1.5,2.0, chanyin,60\n", "row 3 '1.5,2.0, chanyin,60' is not onset"),
    (f"{HEADER}\n0.5,abc,chanyin,60\n", "row 2 '0.5,abc,chanyin,60' is not onset"),
    (f"{HEADER}\nnan,1.0,chanyin,60\n", "row 2 'nan,1.0,chanyin,60' is not onset"),
    (f"{HEADER}\n0.5,1.0,chanyin\n", "row 2 '0.5,1.0,chanyin' is not onset"),
    (f"{HEADER}\n0.5,1.0,chanyin,60,7\n", "row 2 '0.5,1.0,chanyin,60,7' is not onset"),
])
def test_a_malformed_label_file_is_refused_with_its_file_and_row(tmp_path, text, message):
    path = tmp_path / label_file("86")
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as err:
        clips(path)
    assert str(path) in str(err.value)


def test_a_label_file_that_is_not_utf8_is_refused_with_its_name(tmp_path):
    path = tmp_path / label_file("86")
    path.parent.mkdir(parents=True)
    path.write_bytes(f"{HEADER}\n0.5,1.0,chanyin,60\n".encode() + b"\xff\xfe,1,2\n")
    with pytest.raises(ValueError, match="not UTF-8 text") as err:
        clips(path)
    assert str(path) in str(err.value)


def test_line_ends_and_comments_are_read_as_the_generator_reads_them(tmp_path):
    path = tmp_path / label_file("86")
    path.parent.mkdir(parents=True)
    path.write_bytes(f"{HEADER}\r\n0.5,1.0,chanyin,60 # a note\r\n\r\n12.25,13.0,yaozhi,61\r\n".encode())
    assert clips(path) == _generator_clips(path) == [
        (0.0, "[('0.5000', '1.0000', 'Vibrato')]"), (10.0, "[('12.2500', '13.0000', 'Tremolo')]")]


def _dataset(tmp_path: Path) -> Path:
    folder = tmp_path / "Guzheng_Tech99"
    _from_published(folder)
    seconds = {t: 10.0 * n for t, n in zip(TEST_TRACKS, (15, 9, 12, 5, 10, 6, 5, 8, 7, 17))}
    for track in TEST_TRACKS[1:]:  # the first track's recording is missing
        tone(folder / "data" / "audio" / "test" / f"{track}.flac", seconds=seconds[track], rate=8000, fmt="FLAC")
    return folder


def test_data_prepare_builds_the_manifest_and_data_check_reads_the_folder_again(mirror, tmp_path, capsys):
    bench = get_benchmark("cmi-bench/Guzheng_Tech")
    assert bench.source.kind == "local" and bench.task == "Guzheng_Tech" and bench.items == 94
    with pytest.raises(FetchError, match="pass --questions FILE"):
        prepare(bench, mirror["data"], progress=False, log=lambda _: None)
    folder = _dataset(tmp_path)
    with pytest.raises(FetchError, match="reads 12 files \\(data/label/train/\\*.csv, ...\\); pass the folder"):
        prepare(bench, mirror["data"], questions=folder / label_file("74"), audio_dir=folder, progress=False,
                log=lambda _: None)
    validation = folder / label_file("1", "validation")
    validation.rename(validation.with_suffix(".bak"))
    with pytest.raises(FetchError, match="1 of the 12 files .* \\(first: data/label/validation/\\*.csv\\)"):
        prepare(bench, mirror["data"], questions=folder, audio_dir=folder, progress=False, log=lambda _: None)
    validation.with_suffix(".bak").rename(validation)
    assert main(["data", "prepare", bench.name, "--data-root", str(mirror["data"]), "--questions", str(folder),
                 "--audio-dir", str(folder), "--no-progress"]) == 0
    rows = [json.loads(line) for line in (prepared_dir(mirror["data"], bench) / MANIFEST_NAME).read_text().splitlines()]
    built = [q for q in questions_from_files(files_in_folder(bench, folder)) if q.meta["track"] != TEST_TRACKS[0]]
    assert len(rows) == 94 - 15 and [r["id"] for r in rows] == [q.id for q in built] and rows[0]["id"].startswith("844|")
    for row, q in zip(rows, built):
        assert (row["question"], row["reference"], row["audio_start"], row["audio_end"]) == (
            INSTRUCTION, q.reference, q.audio_start, q.audio_end)
        assert row["audio"] == f"data/audio/test/{q.meta['track']}.flac" and row["group"] == q.group
    lock = json.loads((prepared_dir(mirror["data"], bench) / "musiceval.lock.json").read_text())
    assert sorted(lock["question_files"]) == sorted(["data/label/train/1.csv", "data/label/validation/1.csv",
                                                     *(label_file(t) for t in TEST_TRACKS)])
    capsys.readouterr()
    assert main(["data", "check", bench.name, "--data-root", str(mirror["data"]), "--no-progress"]) == 0
    with open(folder / label_file("1", "train"), "a") as fh:  # a note more: another version of the dataset
        fh.write("7465.5,7466.0,chanyin,60\n")
    capsys.readouterr()
    assert main(["data", "check", bench.name, "--data-root", str(mirror["data"]), "--no-progress"]) == 1
    assert "question file data/label/train/1.csv changed" in capsys.readouterr().out


def test_cmi_bench_alone_leaves_guzheng_to_be_named():
    assert "cmi-bench/Guzheng_Tech" not in {b.name for b in benchmark_names("cmi-bench")}
    assert [b.name for b in benchmark_names("cmi-bench/Guzheng_Tech")] == ["cmi-bench/Guzheng_Tech"]


def test_a_built_reference_answered_with_itself_scores_full_marks_in_the_guzheng_family(tmp_path):
    from musiceval.data.cmibench import OutputRecord
    from musiceval.protocols.mir.metrics.tasks import score_task

    path = _write(tmp_path, "66", _notes(5, 38.0))
    built = clips(path)
    recs = [OutputRecord(item_id=f"{k}|x", index=k, question=INSTRUCTION, response=ref, correct_answer=ref,
                         audioid="x", group="x") for k, (_, ref) in enumerate(built)]
    assert len(recs) == 4
    res = score_task("Guzheng_Tech", recs)
    assert list(res.per_item["item_f1"].values) == pytest.approx([1.0] * 4) and not res.failures


@pytest.mark.slow
def test_musiceval_run_asks_the_tiny_model_and_scores_guzheng(tiny_qwen, mirror, tmp_path):
    folder = _dataset(tmp_path)
    results, _ = tiny_run_of_own_files("cmi-bench/Guzheng_Tech", tiny_qwen, mirror, tmp_path, folder, folder)
    text = json.dumps(results)
    assert "Guzheng_Tech" in text and "macro_f1" in text and "covers 79 of 94 items" in text
    assert len(results["meta"]["provenance"]["scorer"]["datasets"]["cmi-bench/Guzheng_Tech"]["questions_sha256"]) == 12


@pytest.mark.parametrize("under", ["", "data/", "data/Guzheng/", "data/Guzheng/Guzheng_Tech99/",
                                   "data/Guzheng/Guzheng_Tech99/data/"])
def test_the_clip_is_found_in_cmi_benchs_tree_or_guzheng_tech99s_folder(tmp_path, under):
    from musiceval.catalogue.guzheng import locate
    from musiceval.catalogue.spec import AudioIndex

    clip = clip_of("17")
    tone(tmp_path / "data/Guzheng/Guzheng_Tech99/data/audio/test/17.flac", rate=8000, fmt="FLAC")
    root = tmp_path / under
    q = questions_from_files({**{label_file(t): _write(tmp_path / "labels", t, _notes(1, 12.0)) for t in TEST_TRACKS},
                              label_file("1", "train"): _write(tmp_path / "labels", "1", _notes(2, 5.0), "train")})[2]
    assert q.audio_key == clip and q.meta["track"] == "17"
    assert (root / locate(q, AudioIndex(root))).resolve() == (tmp_path / clip).resolve()
