"""MusicQA evaluation split (Liu et al. 2024, MU-LLaMA): free-form questions on MTG-Jamendo clips.

Source: huggingface.co/datasets/mu-llama/MusicQA, files ``EvalMusicQA.json`` (1.96 MB) and
``audios.zip`` (36.5 GB, every MusicQA clip; the eval clips are extracted by file name, as the
dataset's own ``MusicQA.py`` matches ``path.split("/")[-1]`` against ``audio_name``). Licence MIT
(the dataset card); the clips keep MTG-Jamendo's CC licences. Layout of EvalMusicQA.json: a JSON
array of ``{"audio_name": "<clip>.wav", "conversation": [{"from": "human", "value": question},
{"from": "gpt", "value": answer}]}`` (:func:`musiceval.data.musicqa.load_musicqa_release`).

Unpinned: the hub page shows main at commit 115b805 (short form only); no full commit hash could
be read here, so ``prepare`` warns and the lock records the commit it fetched.
Prompt: the question as written. Metrics: the free-form protocol (CLAPText and the NLP metrics).

``musicqa-judged``: the same questions and clips (it reads ``musicqa``'s prepared folder), each
answer judged CORRECT or INCORRECT against MusicQA's reference answer by the LLM judge (the
``judge`` protocol, pointwise mode; docs/judge.md) instead of BLEU-style overlap. MusicQA publishes
no judge prompt: the judge reads musiceval's ``pointwise_v1`` template.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from musiceval.data.benchmarks import MUSICQA_EVAL_ITEMS
from musiceval.catalogue.fetch import extract_members
from musiceval.catalogue.spec import ALL_CONTROLS, AudioIndex, Question, Source, register_benchmark

EVAL = "EvalMusicQA.json"


def unpack(files: Mapping[str, Path], directory: Path, progress: bool) -> dict[str, Path]:
    """Extract only the clips the evaluation split names from ``audios.zip``."""
    from musiceval.catalogue.common import read_json

    names = {str(r.get("audio_name")) for r in read_json(files[EVAL], "EvalMusicQA.json") if isinstance(r, dict)}
    if "audios.zip" in files:
        extract_members(files["audios.zip"], directory,
                        lambda n: f"audio/{Path(n).name}" if Path(n).name in names else None, progress=progress)
    return dict(files)


def locate(q: Question, index: AudioIndex) -> str | None:
    return index.by_basename(q.audio_key or "")


SOURCE = Source("hub", repo_id="mu-llama/MusicQA", files=(EVAL, "audios.zip"),
                unpinned="the hub shows main at 115b805 (short form); no full commit hash could be read here",
                size_bytes=36_500_000_000)
COMMON = dict(source=SOURCE, licence="MIT (dataset card); clips: MTG-Jamendo CC licences", items=MUSICQA_EVAL_ITEMS,
              audio="shipped", answer_format="musiceval-freeform", prompt="the question as written",
              controls=ALL_CONTROLS, question_files=(EVAL,), locate_audio=locate, unpack=unpack,
              verified="layout vs the loader of the released JSON and dasheng-lm's 400 MusicQA rows; revision unpinned")


@register_benchmark(
    name="musicqa-judged", title="MusicQA evaluation split, judged against the reference (LLM judge)",
    protocol="judge", parser="none: the [judge] says CORRECT or INCORRECT against the reference answer (mode "
                             "pointwise; MusicQA publishes no judge prompt: musiceval's pointwise_v1)",
    options={"judge": {"mode": "pointwise"}}, prepared_as="musicqa", **COMMON,
)
@register_benchmark(
    name="musicqa", title="MusicQA evaluation split (MTG-Jamendo, free-form)", protocol="freeform",
    parser="none (free-form metrics: CLAPText, BLEU, METEOR, ROUGE-L, BERTScore, CIDEr)", **COMMON,
)
def questions(files: Mapping[str, Path]) -> list[Question]:
    from musiceval.data.musicqa import load_musicqa_release

    data = load_musicqa_release(files[EVAL])
    return [Question(id=item.id, prompt=item.question, question=item.question, audio_key=item.audio,
                     reference=item.reference, group=item.group) for item in data.items]
