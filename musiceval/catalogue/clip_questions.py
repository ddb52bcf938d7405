"""The questions of a CMI-Bench generator that cuts each recording into 10 s clips (MedleyDB,
Guzheng_Tech): one per clip, in the generator's order, each identified by the line it has in the
instruction file the generator writes (``<line>|<clip>``, as the other CMI-Bench entries' are), the
clips of a recording sharing its group."""
from __future__ import annotations

from typing import Iterable

from musiceval.catalogue.spec import Question


def clip_questions(task: str, instruction: str, recordings: Iterable[tuple[str, str, list[tuple[float, str]]]], *,
                   first_line: int = 0, seconds: float = 10.0) -> list[Question]:
    """``recordings``: ``(track, clip path, [(offset, reference), ...])`` in the generator's order;
    ``first_line``: the lines the instruction file holds before them (other splits' clips)."""
    out, line = [], first_line
    for track, audio, clips in recordings:
        for offset, reference in clips:
            out.append(Question(id=f"{line}|{audio}", prompt=instruction, question=instruction, audio_key=audio,
                                reference=reference, group=audio, audio_start=offset, audio_end=offset + seconds,
                                meta={"task": task, "line": line, "track": track}))
            line += 1
    return out
