"""``cmi-bench/MTT``: CMI-Bench's MagnaTagATune task prepared from the user's ``annotations_final.csv``
with the rule of the toolkit's ``data/MTT/preprocess.py`` and ``sft_mtt.py`` (musiceval/catalogue/mtt.py).
The annotations here are written in MagnaTagATune's layout (tab-separated, quoted, clip_id, 188 tags,
mp3_path); the split is checked against the toolkit's own ``data/MTT/test.tsv`` (``../shared/data``)."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from musiceval.catalogue import get_benchmark
from musiceval.catalogue.spec import benchmark_names
from musiceval.catalogue.mtt import FILE, INSTRUCTION, N_TAGS, questions_from_annotations, split_of
from musiceval.catalogue.fetch import FetchError
from musiceval.catalogue.prepare import prepare
from musiceval.data.benchmarks import CMI_BENCH_TEST_ITEMS
from musiceval.vocab.cmibench import MTT_TOP50_TAGS
from tests.catalogue.mirror import tiny_run_of_own_files, tone

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
if not SHARED.is_dir():
    SHARED = Path("/work/shared/data")

FILLERS = [f"other tag {k}" for k in range(N_TAGS - 50)]
#: the 188 columns in a shuffled order (the real file's is not tags.npy's)
TAGS = [t for pair in zip(FILLERS, MTT_TOP50_TAGS) for t in pair] + FILLERS[50:]
CLIPS = [  # (mp3_path, top-50 tags, filler tags)
    ("f/american_bach_soloists-j_s__bach_solo_cantatas-01-bwv54__i_aria-30-59.mp3", ["classical", "violin", "opera"], []),
    ("0/a-train-clip-0-29.mp3", ["rock", "guitar"], ["other tag 3"]),
    ("c/a-valid-clip-0-29.mp3", ["piano"], []),
    ("d/a-test-clip-0-29.mp3", ["guitar", "slow", "no vocals"], ["other tag 1"]),
    ("e/no-tag-clip-0-29.mp3", [], []),
]


def _write(path: Path, clips=CLIPS, tags=TAGS) -> Path:
    rows = [["clip_id", *tags, "mp3_path"]]
    for k, (mp3, top, fill) in enumerate(clips):
        rows.append([str(k + 2), *("1" if t in top or t in fill else "0" for t in tags), mp3])
    # every top-50 tag on more clips than any other tag: one clip per top-50 tag, in folder 1 (training)
    for k, tag in enumerate(MTT_TOP50_TAGS):
        rows.append([str(100 + k), *("1" if t == tag else "0" for t in tags), f"1/filler-{k}-0-29.mp3"])
    with open(path, "w", encoding="utf-8", newline="") as fh:
        csv.writer(fh, delimiter="\t", quoting=csv.QUOTE_ALL).writerows(rows)
    return path


def test_the_test_split_is_asked_with_the_toolkit_instruction_and_tags_npy_order(tmp_path):
    qs = questions_from_annotations(_write(tmp_path / FILE))
    assert [q.meta["mp3_path"] for q in qs] == [CLIPS[0][0], CLIPS[3][0], CLIPS[4][0]]  # folders d, e, f; file order
    first = qs[0]
    assert first.prompt == INSTRUCTION and first.audio_key == f"data/MTT/mp3/{CLIPS[0][0]}"
    assert first.reference == "classical, violin, opera" and (first.audio_start, first.audio_end) == (0.0, 30.0)
    assert qs[1].reference == "guitar, slow, no vocals"  # tags.npy order, fillers never
    assert qs[2].reference == ""  # a clip without a top-50 tag is an item, as upstream
    # CMI_MTT.jsonl lines: 52 training rows (1 + 50 fillers + "0/"), 1 validation row, then the test rows
    assert [q.meta["line"] for q in qs] == [52, 53, 54] and first.id == f"52|data/MTT/mp3/{CLIPS[0][0]}"


@pytest.mark.parametrize("damage, message", [
    (lambda rows: rows[:1] + [rows[1][:-3]] + rows[2:], "row 2 has"),
    (lambda rows: rows[:1] + [rows[1][:5] + ["2"] + rows[1][6:]] + rows[2:], "row 2: tag values must be 0 or 1"),
    (lambda rows: [rows[0][:-1] + ["path"]] + rows[1:], "expected a header"),
])
def test_a_file_that_is_not_the_annotations_is_refused_with_the_row(tmp_path, damage, message):
    path = _write(tmp_path / FILE)
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))
    with open(path, "w", encoding="utf-8", newline="") as fh:
        csv.writer(fh, delimiter="\t").writerows(damage(rows))
    with pytest.raises(ValueError, match=message):
        questions_from_annotations(path)


def test_annotations_whose_top_50_differ_are_refused(tmp_path):
    busy = [(f"2/busy-{k}-0-29.mp3", [], ["other tag 7"]) for k in range(3)]
    with pytest.raises(ValueError, match="other tag 7 have more clips than a top-50 tag"):
        questions_from_annotations(_write(tmp_path / FILE, CLIPS + busy))


def test_prepared_from_the_users_annotations_and_clips(mirror, tmp_path):
    bench = get_benchmark("cmi-bench/MTT")
    assert bench.source.kind == "local" and bench.task == "MTT" and bench.items == CMI_BENCH_TEST_ITEMS["MTT"] == 5329
    with pytest.raises(FetchError, match="pass --questions FILE \\(annotations_final.csv\\)"):
        prepare(bench, mirror["data"], progress=False, log=lambda _: None)
    for mp3, _, _ in CLIPS[:4]:
        tone(tmp_path / "mtt" / mp3, fmt="WAV")
    report = prepare(bench, mirror["data"], questions=_write(tmp_path / FILE), audio_dir=tmp_path / "mtt", progress=False,
                     log=lambda _: None)
    lock = report.lock
    assert lock.questions == 3 and lock.with_audio == 2 and len(lock.missing) == 1  # e/no-tag-clip has no clip
    assert any("5,329" in w for w in report.warnings)  # a partial copy is said, coverage counts against 5,329


def test_cmi_bench_alone_names_every_fetched_task_but_not_mtt():
    names = {b.name for b in benchmark_names("cmi-bench")}
    assert "cmi-bench/MTT" not in names and {"cmi-bench/GTZAN", "cmi-bench/SongFormBench", "cmi-bench/Lyra_dance"} <= names


@pytest.mark.skipif(not (SHARED / "cmi-bench" / "labels" / "test.tsv").is_file(), reason="../shared/data is not here")
def test_the_split_rule_gives_the_toolkits_test_tsv():
    """The toolkit's ``data/MTT/test.tsv`` (nicolaus625/CMI-bench @ 4c15f41): 5,329 clips, every one in
    folders d, e or f, indexed by its data row, increasing."""
    rows = [line.split("\t") for line in (SHARED / "cmi-bench" / "labels" / "test.tsv").read_text().splitlines()]
    assert len(rows) == CMI_BENCH_TEST_ITEMS["MTT"]
    assert {split_of(path) for _, path in rows} == {"test"}
    indices = [int(i) for i, _ in rows]
    assert indices == sorted(indices) and len(set(indices)) == len(indices)


@pytest.mark.slow
def test_musiceval_run_asks_the_tiny_model_and_scores_mtt(tiny_qwen, mirror, tmp_path):
    import json

    for mp3, _, _ in CLIPS[:4]:
        tone(tmp_path / "mtt" / mp3, fmt="WAV")
    results, _ = tiny_run_of_own_files("cmi-bench/MTT", tiny_qwen, mirror, tmp_path, _write(tmp_path / FILE),
                                       tmp_path / "mtt")
    text = json.dumps(results)
    assert "MTT" in text and "roc_auc" in text and "covers 2 of 5,329 items" in text
