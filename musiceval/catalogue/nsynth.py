"""NSynth test split (Engel et al. 2017) as factual QA: which instrument family plays the note?

Source: the release archive ``nsynth-test.jsonwav.tar.gz`` from download.magenta.tensorflow.org
(the NSynth page, magenta.tensorflow.org/datasets/nsynth; the versioned v2.2 file name is the pin;
no checksum is published there, the lock records the archive's). Licence CC BY 4.0.
Layout: ``nsynth-test/examples.json`` maps each note id to its attributes (``note_str``,
``instrument_family_str``, ``pitch``, ``velocity``, ``sample_rate``, ``instrument_source_str``,
``qualities_str`` ...) and ``nsynth-test/audio/<note_str>.wav`` holds 4 s, 16 kHz clips; 4,096
notes. The label is the instrument family (the first field of the note id,
:mod:`musiceval.catalogue.datasets.nsynth`), scored with the ``nsynth`` vocabulary.

Prompt: the paper's instrument question (:func:`musiceval.vocab.factual_prompts.phrasing`).
Verified here: the note-id layout against the 300 NSynth test ids of dasheng-lm
(``../shared/data/nsynth``); the family vocabulary. Not verified: the archive's hash.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from musiceval.data.benchmarks import NSYNTH_TEST_ITEMS
from musiceval.catalogue.common import read_json
from musiceval.catalogue.fetch import extract_members
from musiceval.catalogue.spec import AudioIndex, Question, Source, register_benchmark

EXAMPLES = "nsynth-test/examples.json"
URL = "http://download.magenta.tensorflow.org/datasets/nsynth/nsynth-test.jsonwav.tar.gz"


def unpack(files: Mapping[str, Path], directory: Path, progress: bool) -> dict[str, Path]:
    """examples.json to ``<prepared>/unpacked``, the clips to ``<prepared>/audio`` (flat)."""
    def wanted(name: str) -> str | None:
        if name == EXAMPLES:
            return f"unpacked/{EXAMPLES}"
        if name.startswith("nsynth-test/audio/") and name.endswith(".wav"):
            return f"audio/{Path(name).name}"
        return None

    extract_members(files["nsynth-test.jsonwav.tar.gz"], directory, wanted, progress=progress)
    return {**files, EXAMPLES: directory / "unpacked" / EXAMPLES}


def locate(q: Question, index: AudioIndex) -> str | None:
    return index.by_basename(f"{q.audio_key}.wav")


@register_benchmark(
    name="nsynth", title="NSynth test: instrument family (factual QA)",
    source=Source("url", urls=(URL,), pin="the versioned release file nsynth-test.jsonwav.tar.gz (NSynth v2.2)",
                  size_bytes=None),
    licence="CC BY 4.0", items=NSYNTH_TEST_ITEMS, audio="shipped", protocol="factual",
    answer_format="musiceval-factual",
    prompt="factual instrument question (musiceval.vocab.factual_prompts, paper phrasing)",
    parser="rule extractor with the nsynth vocabulary", controls=("random",), question_files=(EXAMPLES,),
    locate_audio=locate, version="v2.2 test split", options={"vocab": "nsynth"}, unpack=unpack,
    verified="note ids vs dasheng-lm's 300 NSynth test rows; no archive hash",
)
def questions(files: Mapping[str, Path]) -> list[Question]:
    from musiceval.catalogue.datasets.nsynth import parse_note_id
    from musiceval.vocab.factual_prompts import phrasing

    examples = read_json(files[EXAMPLES], "NSynth examples.json")
    if not isinstance(examples, dict):
        raise ValueError(f"{files[EXAMPLES]}: expected an object of note ids")
    prompt = phrasing("instrument", 0)
    out = []
    for note_id in sorted(examples):
        note = parse_note_id(note_id)
        family = str(examples[note_id].get("instrument_family_str", note.family))
        out.append(Question(id=note_id, prompt=prompt, question=prompt, audio_key=note_id,
                            labels=(family,),
                            group=f"instrument:{note.instrument:03d}:{note.source}",
                            meta={"pitch": note.pitch, "velocity": note.velocity}))
    return out
