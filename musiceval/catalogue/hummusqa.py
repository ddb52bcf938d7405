"""HumMusQA (Weck et al. 2025): 320 hand-written multiple-choice questions on 108 Creative
Commons tracks, audio included.

Source: huggingface.co/datasets/mtg-upf/HumMusQA @ ca7bad071bde0b27e55eca050f2e88b49ae01f56 (the
commit of the dataset card's last update), ``data/test-*.parquet``, licence CC BY 4.0 (the card).
Features (the card's ``dataset_info``): ``identifier, audio (Audio: bytes + path), question,
answer, distractor_1, distractor_2, distractor_3, main_category, secondary_categories,
difficulty, excerpt_start_time, excerpt_end_time, song_link, jamendo_id, song_name, artist_name,
album_name, song_license_url``; one split, ``test``, 320 rows. The embedded audio is written to
``<prepared>/audio/<identifier>.<ext>`` (needs ``pyarrow``: ``pip install 'musiceval[catalogue]'``).

Prompt: MuChoMusic's zero-shot format (the same authors' benchmark), options shuffled by a seed
from the identifier. Parser: the ``muchomusic`` matcher.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from musiceval.catalogue.common import muchomusic_prompt, shuffled_options
from musiceval.catalogue.spec import ALL_CONTROLS, AudioIndex, Question, Source, register_benchmark

REVISION = "ca7bad071bde0b27e55eca050f2e88b49ae01f56"
TEXT_COLUMNS = ("identifier", "question", "answer", "distractor_1", "distractor_2", "distractor_3", "main_category",
                "secondary_categories", "difficulty", "jamendo_id", "song_license_url")


def _tables(files: Mapping[str, Path]):
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError("reading HumMusQA's parquet files needs pyarrow; pip install 'musiceval[catalogue]'") from None
    for name in sorted(n for n in files if n.startswith("data/test-") and n.endswith(".parquet")):
        yield pq.read_table(files[name])


def _extension(path: str, data: bytes) -> str:
    """The container the bytes are in (their magic number first: a path's suffix can be wrong)."""
    magic = {b"RIFF": ".wav", b"fLaC": ".flac", b"OggS": ".ogg"}.get(data[:4])
    suffix = Path(path or "").suffix.lower()
    return magic or (suffix if suffix in (".mp3", ".wav", ".flac", ".ogg") else ".mp3")


def unpack(files: Mapping[str, Path], directory: Path, progress: bool) -> dict[str, Path]:
    out_dir = directory / "audio"
    out_dir.mkdir(parents=True, exist_ok=True)
    for table in _tables(files):
        for ident, audio in zip(table.column("identifier").to_pylist(), table.column("audio").to_pylist()):
            data = (audio or {}).get("bytes") or b""
            if data:
                target = out_dir / f"{ident}{_extension((audio or {}).get('path') or '', data)}"
                if not target.is_file() or target.stat().st_size != len(data):
                    target.write_bytes(data)
    return dict(files)


def locate(q: Question, index: AudioIndex) -> str | None:
    for ext in (".mp3", ".wav", ".flac", ".ogg"):
        found = index.by_basename(f"{q.audio_key}{ext}")
        if found:
            return found
    return None


@register_benchmark(
    name="hummusqa", title="HumMusQA (multiple choice, CC-licensed audio)",
    source=Source("hub", repo_id="mtg-upf/HumMusQA", files=("data/test-*.parquet",), revision=REVISION,
                  size_bytes=476_401_140),
    licence="CC BY 4.0 (dataset); tracks under their own CC licences (song_license_url)", items=320, audio="shipped",
    protocol="choice", answer_format="musiceval-choice", prompt="MuChoMusic zero-shot format",
    parser="muchomusic matcher", controls=ALL_CONTROLS, question_files=("data/test-*.parquet",), locate_audio=locate, unpack=unpack,
    version=REVISION[:7], options={"matcher": "muchomusic"},
    verified="features, split size and licence from the dataset card @ ca7bad0; no row of the parquet could be read here",
)
def questions(files: Mapping[str, Path]) -> list[Question]:
    out = []
    for table in _tables(files):
        columns = {c: table.column(c).to_pylist() for c in TEXT_COLUMNS if c in table.column_names}
        for k, ident in enumerate(columns["identifier"]):
            distractors = [columns[f"distractor_{j}"][k] for j in (1, 2, 3)]
            options, letter, types = shuffled_options(f"hummusqa:{ident}", columns["answer"][k], distractors)
            out.append(Question(id=str(ident), prompt=muchomusic_prompt(columns["question"][k], options),
                                question=columns["question"][k], audio_key=str(ident), choices=options, answer=letter,
                                group=str(columns.get("jamendo_id", columns["identifier"])[k]),
                                meta={"category": columns.get("main_category", [None] * (k + 1))[k],
                                      "difficulty": columns.get("difficulty", [None] * (k + 1))[k],
                                      "distractor_types": list(types)}))
    return out
