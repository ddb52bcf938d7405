"""The published benchmarks an answer file can belong to: their size and the defaults they bring.

The coverage gate compares the items an answer file answers with the benchmark's known size
(``covers 200 of 1,187 items``), and a one-file run takes the benchmark's protocol options (the
NSynth vocabulary for a dasheng NSynth file) without being told. A file is matched to a benchmark
by what it says about itself: the ``dataset_name`` of dasheng-lm records, the format
(MuChoMusic's evaluation JSON), or the CMI-Bench task in a ``<model>_<task>.jsonl`` file name.
A file of another dataset has no known size: its coverage is not applicable unless its answers
entry sets ``expected_items``.

Sizes (test splits as the peers score them; the benchmark catalogue, :mod:`musiceval.catalogue`,
declares its entries with these counts and cites each source):

- MuChoMusic: 1,187 questions (Weck et al., ISMIR 2024; dasheng-lm ``evaluate/jsonl``);
- NSynth test: 4,096 notes (Engel et al. 2017; ``nsynth-test``);
- MusicQA, MTG-Jamendo evaluation split: 5,040 question/answer pairs (docs/protocols/freeform.md);
- CMI-Bench tasks: the ``split == "test"`` records of ``CMI_<task>.jsonl`` at nicolaus625/CMI-bench
  4c15f41 where the instruction file ships, and the record count of the published outputs of both
  MU-LLaMA and LTU (identical) for GS_key, MTG_*, MTT and Nsynth_pitch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class KnownBenchmark:
    name: str
    items: int
    #: protocol options a file of this benchmark is scored with unless the config says otherwise
    defaults: Mapping[str, Any] = field(default_factory=dict)


#: MuChoMusic's questions (the published sizes, one source of truth: the catalogue's entries read them here)
MUCHOMUSIC_ITEMS = 1187
#: notes of the NSynth test split
NSYNTH_TEST_ITEMS = 4096
#: question/answer pairs of MusicQA's evaluation split
MUSICQA_EVAL_ITEMS = 5040
#: the test split per task: the ``split == "test"`` records of ``CMI_<task>.jsonl`` at
#: nicolaus625/CMI-bench 4c15f41 where the instruction file ships, and the record count of the
#: published outputs of both MU-LLaMA and LTU (identical) for GS_key, MTG_*, MTT and Nsynth_pitch
CMI_BENCH_TEST_ITEMS = {
    "DSing": 482, "EMO_arousal": 125, "EMO_valence": 125, "GS_key": 2406, "GTZAN": 290, "Guzheng_Tech": 94,
    "MTG_emotion": 4231, "MTG_genre": 11479, "MTG_instrument": 5115, "MTT": 5329, "MusicCaps": 2813,
    "Nsynth_instrument": 4096, "Nsynth_pitch": 4096, "SDD": 1106, "VocalSet_tech": 1140, "ballroom_beat": 685,
    "ballroom_downbeat": 685, "gtzan_beat": 290, "gtzan_downbeat": 290,
}
#: the factual vocabulary of the CMI-Bench classification tasks scored as factual QA
CMI_BENCH_DEFAULTS = {"GTZAN": {"vocab": "gtzan"}, "Nsynth_instrument": {"vocab": "nsynth"}}


#: benchmark by the ``dataset_name`` (lowercased) or format of an answer file
BENCHMARKS: dict[str, KnownBenchmark] = {
    "muchomusic": KnownBenchmark("MuChoMusic", MUCHOMUSIC_ITEMS),
    "nsynth": KnownBenchmark("NSynth test", NSYNTH_TEST_ITEMS, {"vocab": "nsynth"}),
    "musicqa": KnownBenchmark("MusicQA (MTG-Jamendo evaluation split)", MUSICQA_EVAL_ITEMS),
    **{f"cmi-bench/{task}": KnownBenchmark(f"CMI-Bench {task} (test split)", n, CMI_BENCH_DEFAULTS.get(task, {}))
       for task, n in CMI_BENCH_TEST_ITEMS.items()},
}
#: formats that always hold one benchmark
FORMAT_BENCHMARKS = {"muchomusic-eval": "muchomusic", "dasheng-musicqa": "musicqa"}


def benchmark_of(extra: Mapping[str, Any], fmt: str = "") -> KnownBenchmark | None:
    """The benchmark an answer set belongs to, from its ``extra`` (``task``, ``dataset``) and format."""
    task = extra.get("task")
    if task and f"cmi-bench/{task}" in BENCHMARKS:
        return BENCHMARKS[f"cmi-bench/{task}"]
    dataset = str(extra.get("dataset") or "").strip().lower()
    if dataset in BENCHMARKS:
        return BENCHMARKS[dataset]
    return BENCHMARKS.get(FORMAT_BENCHMARKS.get(fmt, ""))
