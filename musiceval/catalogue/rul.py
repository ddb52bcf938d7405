"""RUL-MuchoMusic (Zang et al. 2025, "Are you really listening?"): MuChoMusic questions with five
options, asked leave-one-out (four passes per question, each without one distractor).

Source: github.com/yongyizang/AreYouReallyListening @ 8b348ec3e80346c759ff0abed6bc54633010f623,
``RUL-MuchoMusic.json``: an object ``{question_id: {question, caption, correct_answer,
distractors[4], PI}}``. Licence: the MuChoMusic questions' CC BY-SA 4.0. Audio: MuChoMusic's
clips named by question id, ``<audio_dir>/<question_id>.mp3`` (``format_leave_one_out_prompt`` in
ExampleAudioEval/qwen_2_audio.py at the same commit), not shipped.

Prompt: the repository's leave-one-out prompt ("Provide your best guess ... [[Letter]]",
:data:`musiceval.vocab.rul_prompts.PROMPT`), options shuffled per pass by a seed (upstream: unseeded
``random.shuffle``). Each pass is one item (``<question_id>#<pass>``, grouped by question).
Parser: the ``rul`` matcher (the repository's ``extract_answer``). Item count: four passes per
question of the file (not verified here; recorded).
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from musiceval.catalogue.common import PLACEHOLDER_TYPES, read_json
from musiceval.catalogue.spec import ALL_CONTROLS, AudioIndex, Question, Source, register_benchmark

COMMIT = "8b348ec3e80346c759ff0abed6bc54633010f623"
FILE = "RUL-MuchoMusic.json"


def locate(q: Question, index: AudioIndex) -> str | None:
    return index.by_basename(f"{q.audio_key}.mp3") or index.by_basename(f"{q.audio_key}.wav")


@register_benchmark(
    name="rul-muchomusic", title="RUL-MuchoMusic (leave-one-out multiple choice)",
    source=Source("url", urls=(f"https://raw.githubusercontent.com/yongyizang/AreYouReallyListening/{COMMIT}/{FILE}",),
                  revision=COMMIT),
    licence="CC BY-SA 4.0 (MuChoMusic questions)", items=None,
    audio="not shipped: pass --audio-dir with MuChoMusic's clips named <question_id>.mp3",
    protocol="choice", answer_format="musiceval-choice",
    prompt="RUListening leave-one-out prompt ([[Letter]] answers)", parser="rul matcher (upstream extract_answer)",
    controls=ALL_CONTROLS, question_files=(FILE,), locate_audio=locate, version=COMMIT[:7], options={"matcher": "rul"},
    verified="layout and rows quoted from RUL-MuchoMusic.json @ 8b348ec; count not verified",
)
def questions(files: Mapping[str, Path]) -> list[Question]:
    from musiceval.vocab.rul_prompts import leave_one_out_prompts

    data = read_json(files[FILE], "RUL-MuchoMusic.json")
    if not isinstance(data, dict):
        raise ValueError(f"{files[FILE]}: expected an object of question ids")
    out = []
    for qid, row in data.items():
        distractors = [str(d) for d in row["distractors"]]
        for k, (prompt, mapping) in enumerate(leave_one_out_prompts(qid, row["question"], row["correct_answer"], distractors)):
            letters = sorted(mapping)
            options = tuple(mapping[x] for x in letters)
            types = ["answer" if o == row["correct_answer"] else None for o in options]
            rest = iter(PLACEHOLDER_TYPES[1:])
            types = [t or next(rest) for t in types]
            out.append(Question(id=f"{qid}#{k}", prompt=prompt, question=row["question"], audio_key=str(qid), choices=options,
                                answer=letters[options.index(row["correct_answer"])], group=str(qid),
                                meta={"question_id": str(qid), "pass": k, "excluded_distractor": distractors[k],
                                      "distractor_types": types, "PI": row.get("PI")}))
    return out
