"""The builtin answer formats (registered in :data:`musiceval.data.formats.FORMATS`).

Each wraps the protocol's own loader (its parsing rules) and converts what it returns to an
:class:`~musiceval.data.answers.AnswerSet`. Detection looks at the first record's keys, most
specific first:

=====================  =====================  ==================================================
format                 protocols              recognised by
=====================  =====================  ==================================================
``muchomusic-eval``    choice                 ``answer_orders`` (MuChoMusic's evaluate.py input)
``cmi-bench``          mir, factual           ``response`` + ``correct_answer`` (CMI-Bench outputs)
``dasheng-choice``     choice                 ``choices`` + ``answer`` + ``model_output``
``dasheng-factual``    factual                ``label`` + ``model_output``
``dasheng-musicqa``    freeform               ``question`` + ``answer`` + ``model_output``, no
                                              ``choices`` / ``label``
``musiceval-choice``   choice                 ``item_id`` + ``choices`` + ``answer`` + ``text``
``musiceval-factual``  factual                ``item_id`` + ``text``, no ``choices``
``musiceval-freeform`` freeform               ``id`` + ``question`` + ``reference`` + ``response``
=====================  =====================  ==================================================

``SHORT_NAMES`` maps the short ``--format`` names of ``musiceval score`` (``musiceval``, ``dasheng``,
``muchomusic``, ``cmi-bench``: one word for "the layout of this protocol from that source") per
protocol to these.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from musiceval.data.answers import AnswerSet
from musiceval.data.formats import keys_of, register_format
from musiceval.records import Item, Response

SHORT_NAMES = {
    "choice": {"musiceval": "musiceval-choice", "dasheng": "dasheng-choice", "muchomusic": "muchomusic-eval"},
    "factual": {"musiceval": "musiceval-factual", "dasheng": "dasheng-factual", "cmi-bench": "cmi-bench"},
    "freeform": {"musiceval": "musiceval-freeform", "dasheng": "dasheng-musicqa"},
    "mir": {"cmi-bench": "cmi-bench"},
}


# ------------------------------------------------------------------------------ conversions


def choice_answer_set(loaded, path: Path | str = "", fmt: str = "") -> AnswerSet:
    """``LoadedChoices`` -> AnswerSet (items aligned with responses; ``meta["run"]``)."""
    items = [r.item for r in loaded.records]
    responses = [dataclasses.replace(r.response, meta={**dict(r.response.meta or {}), "run": r.run}) for r in loaded.records]
    return AnswerSet(items, responses, list(loaded.failures), source=str(path), format=fmt)


def factual_answer_set(data, path: Path | str = "", fmt: str = "") -> AnswerSet:
    """``FactualSet`` -> AnswerSet (chunked answers: one response per chunk, ``meta["chunk"]``)."""
    items, responses = [], []

    def add(item_id: str, condition: str, prompt: str, text) -> None:
        chunks = (text,) if isinstance(text, str) else tuple(text)
        for k, t in enumerate(chunks):
            meta = {"chunk": k, "n_chunks": len(chunks)} if len(chunks) > 1 else {}
            responses.append(Response(item_id=item_id, condition=condition, model="", prompt=prompt, text=t, meta=meta))

    for i, prompt, text, truth, group in zip(data.ids, data.prompts, data.texts, data.truths, data.groups):
        items.append(Item(id=i, question=prompt, labels=tuple(truth), group=group))
        add(i, "correct", prompt, text)
    prompt_of = dict(zip(data.ids, data.prompts))
    for i, text in (data.random_texts or {}).items():
        add(i, "random", prompt_of.get(i, ""), text)
    return AnswerSet(items, responses, list(data.failures), source=str(path), format=fmt)


def cmi_bench_answer_set(out) -> AnswerSet:
    """A CMI-Bench ``OutputFile`` -> AnswerSet (``extra["task"]``; labels split on commas)."""
    from musiceval.data.factual_files import split_labels

    items = [Item(id=r.item_id, question=r.question, reference=r.correct_answer, labels=split_labels(r.correct_answer),
                  group=r.group, meta={"index": r.index, "audioid": r.audioid, "other": r.other}) for r in out.records]
    responses = [Response(item_id=r.item_id, condition="correct", model=out.model, prompt=r.question, text=r.response)
                 for r in out.records]
    return AnswerSet(items, responses, list(out.failures), model=out.model, source=str(out.path), format="cmi-bench",
                     extra={"task": out.task})


def load_cmi_bench(path: Path | str, task: str | None = None) -> AnswerSet:
    """CMI-Bench outputs ``<model>_<task>.jsonl`` (the task from the file name unless given)."""
    from musiceval.data.cmibench import load_outputs

    return cmi_bench_answer_set(load_outputs(path, task=task))


def load_factual_file(path: Path | str, fmt: str, labels_field: str | None = None, manifest=None) -> AnswerSet:
    """Today's factual reader (``musiceval.data.factual_files.load_factual``) as an AnswerSet."""
    from musiceval.data.factual_files import load_factual

    name = {"musiceval": "musiceval-factual", "dasheng": "dasheng-factual"}.get(fmt, fmt)
    answers = factual_answer_set(load_factual(path, fmt, labels_field, manifest=manifest), path, name)
    if fmt == "dasheng":  # keep the model name the dasheng loader reads
        from musiceval.data.dasheng import load_dasheng_jsonl

        models = {r.model for r in load_dasheng_jsonl(path, labels_field=labels_field or "label").responses if r.model}
        answers.model = "+".join(sorted(models))
    return answers


# --------------------------------------------------------------------------------- formats


@register_format("muchomusic-eval", protocols=("choice",),
                 detect=lambda path, recs: "answer_orders" in keys_of(recs),
                 description="MuChoMusic evaluation answers (answer_orders)")
def load_muchomusic_eval(path: Path) -> AnswerSet:
    """MuChoMusic's ``evaluate.py`` input (JSON array with ``answers``/``answer_orders``)."""
    from musiceval.data.muchomusic import load_muchomusic_eval_json

    return choice_answer_set(load_muchomusic_eval_json(str(path)), path, "muchomusic-eval")


@register_format("cmi-bench", protocols=("mir", "factual"),
                 detect=lambda path, recs: {"response", "correct_answer"} <= keys_of(recs),
                 description="CMI-Bench model outputs")
def _load_cmi_bench(path: Path) -> AnswerSet:
    """CMI-Bench outputs: ``{question, response, correct_answer, audioid}`` records."""
    return load_cmi_bench(path)


@register_format("dasheng-choice", protocols=("choice",),
                 detect=lambda path, recs: {"choices", "answer", "model_output"} <= keys_of(recs),
                 description="dasheng multiple-choice answers")
def load_dasheng_choice(path: Path) -> AnswerSet:
    """dasheng-lm MuChoMusic answers (``choices``, ``answer`` letter, ``model_output``)."""
    from musiceval.data.muchomusic import load_dasheng_jsonl

    return choice_answer_set(load_dasheng_jsonl(str(path)), path, "dasheng-choice")


@register_format("dasheng-factual", protocols=("factual",),
                 detect=lambda path, recs: {"label", "model_output"} <= keys_of(recs),
                 description="dasheng factual answers")
def load_dasheng_factual(path: Path) -> AnswerSet:
    """dasheng-lm factual answers (``label``, ``model_output``)."""
    return load_factual_file(path, "dasheng")


def _is_musicqa(path: Path, recs: list) -> bool:
    keys = keys_of(recs)
    return {"question", "answer", "model_output"} <= keys and not keys & {"choices", "label"}


@register_format("dasheng-musicqa", protocols=("freeform",), detect=_is_musicqa,
                 description="dasheng free-form (MusicQA) answers")
def load_dasheng_freeform(path: Path) -> AnswerSet:
    """dasheng-lm MusicQA answers (``question``, ``answer`` reference, ``model_output``)."""
    from musiceval.data.musicqa import load_dasheng_musicqa

    data = load_dasheng_musicqa(path)
    return AnswerSet(list(data.items), list(data.responses), list(data.failures), source=str(path), format="dasheng-musicqa",
                     excluded=list(data.excluded))


@register_format("musiceval-choice", protocols=("choice",),
                 detect=lambda path, recs: {"item_id", "choices", "answer"} <= keys_of(recs)
                 and bool(keys_of(recs) & {"text", "response"}),
                 description="musiceval multiple-choice answers")
def load_musiceval_choice(path: Path) -> AnswerSet:
    """musiceval's multiple-choice answers (``item_id``, ``choices``, ``answer``, ``text``)."""
    from musiceval.data.muchomusic import load_musiceval_jsonl

    return choice_answer_set(load_musiceval_jsonl(str(path)), path, "musiceval-choice")


@register_format("musiceval-factual", protocols=("factual",),
                 detect=lambda path, recs: {"item_id", "text"} <= keys_of(recs) and "choices" not in keys_of(recs),
                 description="musiceval factual answers")
def load_musiceval_factual(path: Path) -> AnswerSet:
    """musiceval's factual answers (``item_id``, ``prompt``, ``text``, ``labels``; chunks, Random rows)."""
    answers = load_factual_file(path, "musiceval")
    from musiceval.data.jsonl import read_json_objects

    models = set()
    for _, rec in read_json_objects(path, what="an answers file"):
        if isinstance(rec, dict) and isinstance(rec.get("model"), str):
            models.add(rec["model"])
        if len(models) > 3:
            break
    answers.model = "+".join(sorted(models))
    return answers


@register_format("musiceval-freeform", protocols=("freeform",),
                 detect=lambda path, recs: {"id", "question", "reference", "response"} <= keys_of(recs),
                 description="musiceval free-form answers")
def load_musiceval_freeform(path: Path) -> AnswerSet:
    """musiceval's free-form answers (``id``, ``question``, ``reference``, ``response``, ``condition``)."""
    from musiceval.data.musicqa import load_freeform_jsonl

    data = load_freeform_jsonl(path)
    return AnswerSet(list(data.items), list(data.responses), list(data.failures), source=str(path), format="musiceval-freeform")


