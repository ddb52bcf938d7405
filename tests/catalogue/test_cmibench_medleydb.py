"""``cmi-bench/MedleyDB``: CMI-Bench's MedleyDB melody task prepared from the user's MedleyDB-Melody
``melody2`` CSVs with the rule of the toolkit's ``data/MedleyDB/sft_medleydb.py``
(musiceval/catalogue/medleydb.py). The CSVs here are written in MedleyDB-Melody's layout (``time,Hz``
rows at the 256/44100 s hop, 0 Hz unvoiced); the rule's float32 arithmetic is checked against torch
doing the same steps (read as ``np.genfromtxt`` then ``torch.Tensor``, ``torch.arange`` offsets,
float32 comparisons)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from musiceval.catalogue import get_benchmark
from musiceval.catalogue.fetch import FetchError
from musiceval.catalogue.medleydb import (GENERATOR_COMMIT, INSTRUCTION, TEST_TRACKS, clip_offsets, clips, csv_name,
                                          hz_to_midi, questions_from_files)
from musiceval.catalogue.prepare import MANIFEST_NAME, prepare, prepared_dir
from musiceval.catalogue.spec import benchmark_names
from musiceval.cli import main
from tests.catalogue.mirror import tiny_run_of_own_files, tone

HOP = 256 / 44100


def _melody(seed: int, seconds: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    times = np.arange(int(seconds / HOP)) * HOP
    freqs = 440 * 2 ** ((rng.integers(40, 90, times.size) + rng.uniform(-0.6, 0.6, times.size) - 69) / 12)
    freqs[rng.random(times.size) < 0.3] = 0.0
    return np.stack([times, freqs], axis=1)


def _write(folder, track, data, fmt="%.10f"):
    path = folder / csv_name(track)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savetxt(path, data, delimiter=",", fmt=fmt)
    return path


def _torch_clips(path):
    """The generator's steps in torch: ``(offset, start, end, reference)`` of each clip of one CSV."""
    torch = pytest.importorskip("torch")
    table = torch.Tensor(np.genfromtxt(path, delimiter=","))
    freqs = table[:, 1]
    notes = torch.zeros_like(freqs, dtype=torch.float32)
    voiced = torch.nonzero(freqs)
    notes[voiced] = 12 * torch.log2(freqs[voiced] / 440) + 69
    table = torch.hstack((table, torch.round(notes).view(-1, 1)))
    offsets = torch.arange(0, table[-1, 0] + 10.0, 10.0)
    bounds = torch.vstack((offsets[:-1], offsets[1:]))
    masks = torch.logical_and(table[:, :1] > bounds[0], table[:, :1] < bounds[1]).T
    out = []
    for offset, mask in zip(offsets, masks):
        rows = table[mask]
        ref = str([(f"{t:.4f}", int(m)) for t, m in zip(rows[:, 0].tolist(), rows[:, -1].tolist())])
        out.append((float(offset), ref))
    return out


@pytest.mark.parametrize("seconds", [3.0, 10.0, 25.0, 47.3, 130.0])
def test_each_clip_is_what_the_generator_arithmetic_writes(tmp_path, seconds):
    path = _write(tmp_path, TEST_TRACKS[0], _melody(int(seconds * 10), seconds))
    ours = clips(path)
    assert ours == _torch_clips(path) and len(ours) >= 1
    assert [o for o, _ in ours] == [10.0 * k for k in range(len(ours))]


def test_edges_are_strict_and_the_last_offset_is_no_clip(tmp_path):
    data = np.array([[0.0, 0.0], [0.0058, 440.0], [9.9999, 466.1638], [10.0, 220.0], [10.0001, 0.0],
                     [19.9999999, 261.6256], [20.0, 523.2511]])
    path = _write(tmp_path, TEST_TRACKS[0], data, fmt="%.7f")
    # 20.0 + 10 = 30: offsets 0, 10, 20; two clips; the frames at 0, 10 and 20 belong to none, and so does
    # 19.9999999, which float32 reads as 20.0 (float64 would keep it in the second clip)
    assert clips(path) == _torch_clips(path) == [
        (0.0, "[('0.0058', 69), ('9.9999', 70)]"), (10.0, "[('10.0001', 0)]")]


def test_midi_rounds_half_to_even_in_float32():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    freqs = np.concatenate([[0.0], 440 * 2 ** ((np.arange(20, 110) + 0.5 - 69) / 12),
                            rng.uniform(20, 4000, 5000)]).astype(np.float32)
    t = torch.from_numpy(freqs.copy())
    expect = torch.zeros_like(t)
    nz = torch.nonzero(t)
    expect[nz] = 12 * torch.log2(t[nz] / 440) + 69
    assert np.array_equal(hz_to_midi(freqs), torch.round(expect).numpy())


def test_offsets_follow_arange_on_the_float32_sum():
    torch = pytest.importorskip("torch")
    for last in (0.0, 0.004, 9.9999, 10.0, 19.99999, 20.0, 29.999999, 100.00001, 313.47):
        end = torch.tensor([last], dtype=torch.float32)[0] + 10.0
        assert clip_offsets(np.float32(last)) == torch.arange(0, end, 10.0).tolist()[:-1], last


def _folder(tmp_path, tracks=TEST_TRACKS):
    folder = tmp_path / "MedleyDB-Melody"
    for k, track in enumerate(tracks):
        _write(folder, track, _melody(k, 12.0 + k))
    return folder


def test_the_26_test_tracks_in_order_give_the_lines_and_ids(tmp_path):
    folder = _folder(tmp_path)
    qs = questions_from_files({csv_name(t): folder / csv_name(t) for t in TEST_TRACKS})
    assert len(TEST_TRACKS) == 26 and "MatthewEntwistle_DontYouEver" not in TEST_TRACKS
    lasts = [(int((12.0 + k) / HOP) - 1) * HOP for k in range(len(TEST_TRACKS))]  # no last time is a multiple of 10
    expected = [(t, 10.0 * j) for t, last in zip(TEST_TRACKS, lasts) for j in range(int(last // 10) + 1)]
    assert [(q.meta["track"], q.audio_start) for q in qs] == expected
    for line, q in enumerate(qs):
        audio = f"data/MedleyDB/MedleyDB-Melody/audio/{q.meta['track']}_MIX.wav"
        assert q.id == f"{line}|{audio}" and q.audio_key == audio == q.group and q.meta["line"] == line
        assert q.prompt == q.question == INSTRUCTION and q.audio_end == q.audio_start + 10.0
        assert q.reference.startswith("[(") and q.reference.endswith(")]")


def test_the_instruction_and_commit_are_the_generators():
    assert GENERATOR_COMMIT == "4c7d14c5a7866291bcf3d3b47fe73c6d1c9bb936"
    assert INSTRUCTION.startswith("please estimate the pitch sequnnce in MIDI number") and INSTRUCTION.endswith(
        "list of (float:time (second), int:MIDI number) tuples.")


@pytest.mark.parametrize("text, message", [
    ("0.0,0.0\n0.1,abc\n", "row 2 '0.1,abc' is not time,Hz"),
    ("0.0,0.0\n0.1,440.0,1\n", "row 2 '0.1,440.0,1' is not time,Hz"),
    ("0.0,0.0\n0.1,-440.0\n", "row 2 '0.1,-440.0' is not time,Hz"),
    ("0.0,0.0\n0.1,nan\n", "row 2 '0.1,nan' is not time,Hz"),
    ("time,hz\n0.0,0.0\n", "row 1 'time,hz' is not time,Hz"),
    ("0.0,0.0\n", "1 rows"),
    ("", "0 rows"),
])
def test_a_malformed_csv_is_refused_with_its_file_and_row(tmp_path, text, message):
    path = tmp_path / csv_name(TEST_TRACKS[3])
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as err:
        clips(path)
    assert str(path) in str(err.value)


def test_data_prepare_builds_the_manifest_from_the_folder_and_mixes(mirror, tmp_path, capsys):
    bench = get_benchmark("cmi-bench/MedleyDB")
    assert bench.source.kind == "local" and bench.task == "MedleyDB" and bench.items is None
    with pytest.raises(FetchError, match="pass --questions FILE"):
        prepare(bench, mirror["data"], progress=False, log=lambda _: None)
    folder = _folder(tmp_path)
    (folder / csv_name(TEST_TRACKS[5])).unlink()
    with pytest.raises(FetchError, match=f"1 of the 26 files .* \\(first: {csv_name(TEST_TRACKS[5])}\\)"):
        prepare(bench, mirror["data"], questions=folder, audio_dir=folder, progress=False, log=lambda _: None)
    _write(folder, TEST_TRACKS[5], _melody(5, 17.0))
    for track in TEST_TRACKS[1:]:  # the first track's mix is missing
        tone(folder / "audio" / f"{track}_MIX.wav", fmt="WAV")
    assert main(["data", "prepare", bench.name, "--data-root", str(mirror["data"]), "--questions", str(folder),
                 "--audio-dir", str(folder), "--no-progress"]) == 0
    capsys.readouterr()
    rows = [json.loads(line) for line in (prepared_dir(mirror["data"], bench) / MANIFEST_NAME).read_text().splitlines()]
    built = [q for q in questions_from_files({csv_name(t): folder / csv_name(t) for t in TEST_TRACKS})
             if q.meta["track"] != TEST_TRACKS[0]]
    assert [r["id"] for r in rows] == [q.id for q in built] and rows[0]["id"].startswith("2|")
    for row, q in zip(rows, built):
        assert (row["question"], row["reference"]) == (INSTRUCTION, q.reference)
        assert (row["audio_start"], row["audio_end"]) == (q.audio_start, q.audio_end)
        assert row["audio"].endswith(f"audio/{q.meta['track']}_MIX.wav") and row["group"] == q.group


def test_cmi_bench_alone_leaves_medleydb_to_be_named():
    assert "cmi-bench/MedleyDB" not in {b.name for b in benchmark_names("cmi-bench")}
    assert [b.name for b in benchmark_names("cmi-bench/MedleyDB")] == ["cmi-bench/MedleyDB"]


def test_a_built_reference_answered_with_itself_scores_full_marks_in_the_melody_family(tmp_path):
    from musiceval.data.cmibench import OutputRecord
    from musiceval.protocols.mir.metrics.tasks import score_task

    path = _write(tmp_path, TEST_TRACKS[0], _melody(3, 34.0))
    built = clips(path)
    recs = [OutputRecord(item_id=f"{k}|x", index=k, question=INSTRUCTION, response=ref, correct_answer=ref,
                         audioid="x", group="x") for k, (_, ref) in enumerate(built)]
    assert len(recs) == 4
    for compat in (None, "cmi-bench"):
        res = score_task("MedleyDB", recs, **({"compat": compat} if compat else {}))
        assert list(res.per_item["overall_accuracy"].values) == pytest.approx([1.0] * 4) and not res.failures


@pytest.mark.slow
def test_musiceval_run_asks_the_tiny_model_and_scores_medleydb(tiny_qwen, mirror, tmp_path):
    folder = _folder(tmp_path, TEST_TRACKS[:3])
    for k, track in enumerate(TEST_TRACKS[:3]):
        tone(folder / "audio" / f"{track}_MIX.wav", seconds=13.0 + k, rate=8000, fmt="WAV")
    for track in TEST_TRACKS[3:]:  # the other tracks' annotations, without their mixes
        _write(folder, track, _melody(7, 3.0))
    results, _ = tiny_run_of_own_files("cmi-bench/MedleyDB", tiny_qwen, mirror, tmp_path, folder, folder)
    text = json.dumps(results)
    assert "MedleyDB" in text and "overall_accuracy" in text and "covers 6 of 29 items" in text
    assert len(results["meta"]["provenance"]["scorer"]["datasets"]["cmi-bench/MedleyDB"]["questions_sha256"]) == 26


def test_a_csv_that_is_not_utf8_is_refused_with_its_name(tmp_path):
    path = tmp_path / csv_name(TEST_TRACKS[3])
    path.parent.mkdir(parents=True)
    path.write_bytes(b"0.0,0.0\n0.0058,440.0\n\xff\xfe,1\n")
    with pytest.raises(ValueError, match="not UTF-8 text") as err:
        clips(path)
    assert str(path) in str(err.value)
