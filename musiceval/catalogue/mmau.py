"""MMAU test-mini, music subset (Sakshi et al. 2024), release MMAU-v05.15.25.

Source: github.com/Sakshi113/MMAU, ``mmau-test-mini.json``: a JSON array of ``id, audio_id
("./test-mini-audios/<id>.wav"), question, choices, answer, dataset, task (sound | music | speech),
split, category, sub-category, difficulty``; the music subset is ``task == "music"``. Licence: the
repository states none for the data (the README asks to respect each source's terms); treat as
research use. Audio: ``test-mini-audios`` from the README's Google Drive link (not scriptable):
pass its folder as ``--audio-dir``.

Unpinned: v05.15.25 revised about 25 % of the questions; two versions of the file were found in
the repository index here (commits 2dcf44d3de17567df794a38c549fe0ff74d31f04 and
6674fa13f953e4f8311f9fcfc2fff76a88937f8d), and which one is v05.15.25 could not be established,
so the URL follows ``main`` and the lock records the file's sha256: a later revision is named as a
different dataset version and runs on the two do not compare. Item count: not verified here (the
music share of the 1,000 test-mini questions); the file's own count is used and recorded.

Some v05.15.25 answers carry the option letter (``"(B) C major"`` for the choice ``"C major"``):
the letter prefix is dropped when the rest is one of the choices. Questions with more than four
choices (the choice protocol reads A-D) are listed as missing with that reason.
Prompt: MuChoMusic's zero-shot format, options shuffled by a seed from the id. Parser: the
``mmau`` matcher (the official evaluation's string match).

Human baseline: the paper (Sakshi et al., arXiv:2410.19168v1, Table 3, row "Human (test-mini)")
gives 78.22 % on the music questions of test-mini (no number of people stated). It was measured on
the test-mini of the paper, before v05.15.25 revised about a quarter of the questions: a reference
line, not a figure on exactly these items.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

from musiceval.catalogue.common import muchomusic_prompt, read_json, relative_or_basename, shuffled_options
from musiceval.catalogue.spec import ALL_CONTROLS, AudioIndex, Question, Source, register_benchmark
from musiceval.human_baselines import HumanBaseline

FILE = "mmau-test-mini.json"
#: Table 3 of the MMAU paper, row "Human (test-mini)", Music / Test-mini column
HUMAN_MUSIC = HumanBaseline(0.7822, "MMAU paper (Sakshi et al., arXiv:2410.19168v1), Table 3, row 'Human (test-mini)', "
                                    "Music test-mini column: 78.22 %, measured before the v05.15.25 revision")


def answer_text(answer: str, choices: list[str]) -> str | None:
    """The answer as one of ``choices`` (a leading ``(X) `` letter dropped), else None."""
    if answer in choices:
        return answer
    stripped = re.sub(r"^\(([A-Z])\)\s*", "", answer or "")
    return stripped if stripped in choices else None


def choice_questions(rows: list, name: str, keep) -> list[Question]:
    """MMAU-layout rows (``id, audio_id|audio_path, question, choices, answer``) as choice questions."""
    out = []
    for row in rows:
        if not isinstance(row, dict) or not keep(row):
            continue
        choices = [str(c) for c in row.get("choices") or []]
        answer = answer_text(str(row.get("answer", "")), choices)
        qid = str(row["id"])
        if answer is None or not 2 <= len(choices) <= 4 or len(set(choices)) != len(choices):
            out.append(Question(id=qid, prompt="", question=str(row.get("question", "")), audio_key=None,
                                meta={"unusable": f"{len(choices)} choices or an answer not among them"}))
            continue
        distractors = [c for c in choices if c != answer]
        options, letter, types = shuffled_options(f"{name}:{qid}", answer, distractors)
        meta = {k: row.get(k) for k in ("category", "sub-category", "difficulty", "dataset", "modality") if k in row}
        meta["distractor_types"] = list(types)
        out.append(Question(id=qid, prompt=muchomusic_prompt(str(row["question"]), options), question=str(row["question"]),
                            audio_key=str(row.get("audio_id") or row.get("audio_path") or ""), choices=options,
                            answer=letter, group=qid, meta=meta))
    return out


def locate(q: Question, index: AudioIndex) -> str | None:
    return relative_or_basename(index, q.audio_key) if q.audio_key else None


@register_benchmark(
    name="mmau-music", title="MMAU test-mini, music subset (v05.15.25)",
    source=Source("url", urls=("https://raw.githubusercontent.com/Sakshi113/MMAU/main/mmau-test-mini.json",),
                  unpinned="which repository commit is v05.15.25 could not be established here (two versions found); "
                           "the lock records the file's sha256"),
    licence="none stated for the data (research use; each source's terms apply)", items=None,
    audio="not shipped by a scriptable link: pass --audio-dir with test-mini-audios (README's Google Drive link)",
    protocol="choice", answer_format="musiceval-choice",
    prompt="MuChoMusic zero-shot format over the MMAU options", parser="mmau matcher (official string match)",
    controls=ALL_CONTROLS, question_files=(FILE,), locate_audio=locate, version="v05.15.25",
    options={"matcher": "mmau", "options_as_published": True}, human_baselines={"music": HUMAN_MUSIC},
    verified="fields and music rows quoted from Sakshi113/MMAU mmau-test-mini.json (two stored versions); count not verified",
)
def questions(files: Mapping[str, Path]) -> list[Question]:
    rows = read_json(files[FILE], "MMAU question file")
    if not isinstance(rows, list):
        raise ValueError(f"{files[FILE]}: expected a JSON array of questions")
    return choice_questions(rows, "mmau-music", lambda r: r.get("task") == "music")
