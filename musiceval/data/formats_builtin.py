"""The builtin answer formats (registered in :data:`musiceval.data.formats.FORMATS`).

Each names a loader of the protocol's data module (its parsing rules), which returns the
:class:`~musiceval.data.answers.AnswerSet` the protocol scores: a file is read once into the set
the protocol consumes, with no per-protocol container in between. Detection looks at the first record's keys, most
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

from pathlib import Path

from musiceval.data.answers import AnswerSet
from musiceval.data.formats import keys_of, register_format

SHORT_NAMES = {
    "choice": {"musiceval": "musiceval-choice", "dasheng": "dasheng-choice", "muchomusic": "muchomusic-eval"},
    "factual": {"musiceval": "musiceval-factual", "dasheng": "dasheng-factual", "cmi-bench": "cmi-bench"},
    "freeform": {"musiceval": "musiceval-freeform", "dasheng": "dasheng-musicqa"},
    "mir": {"cmi-bench": "cmi-bench"},
}


def load_cmi_bench(path: Path | str, task: str | None = None) -> AnswerSet:
    """CMI-Bench outputs ``<model>_<task>.jsonl`` (the task from the file name unless given)."""
    from musiceval.data.cmibench import answer_set, load_outputs

    return answer_set(load_outputs(path, task=task))


# --------------------------------------------------------------------------------- formats


@register_format("muchomusic-eval", protocols=("choice", "judge"),
                 detect=lambda path, recs: "answer_orders" in keys_of(recs),
                 description="MuChoMusic evaluation answers (answer_orders)")
def load_muchomusic_eval(path: Path) -> AnswerSet:
    """MuChoMusic's ``evaluate.py`` input (JSON array with ``answers``/``answer_orders``)."""
    from musiceval.data.muchomusic import load_muchomusic_eval_json

    return load_muchomusic_eval_json(path)


@register_format("cmi-bench", protocols=("mir", "factual"),
                 detect=lambda path, recs: {"response", "correct_answer"} <= keys_of(recs),
                 description="CMI-Bench model outputs")
def _load_cmi_bench(path: Path) -> AnswerSet:
    """CMI-Bench outputs: ``{question, response, correct_answer, audioid}`` records."""
    return load_cmi_bench(path)


@register_format("dasheng-choice", protocols=("choice", "judge"),
                 detect=lambda path, recs: {"choices", "answer", "model_output"} <= keys_of(recs),
                 description="dasheng multiple-choice answers")
def load_dasheng_choice(path: Path) -> AnswerSet:
    """dasheng-lm MuChoMusic answers (``choices``, ``answer`` letter, ``model_output``)."""
    from musiceval.data.muchomusic import load_dasheng_jsonl

    return load_dasheng_jsonl(path)


@register_format("dasheng-factual", protocols=("factual",),
                 detect=lambda path, recs: {"label", "model_output"} <= keys_of(recs),
                 description="dasheng factual answers")
def load_dasheng_factual(path: Path) -> AnswerSet:
    """dasheng-lm factual answers (``label``, ``model_output``)."""
    from musiceval.data.factual_files import load_factual

    return load_factual(path, "dasheng")


def _is_musicqa(path: Path, recs: list) -> bool:
    keys = keys_of(recs)
    return {"question", "answer", "model_output"} <= keys and not keys & {"choices", "label"}


@register_format("dasheng-musicqa", protocols=("freeform", "judge"), detect=_is_musicqa,
                 description="dasheng free-form (MusicQA) answers")
def load_dasheng_freeform(path: Path) -> AnswerSet:
    """dasheng-lm MusicQA answers (``question``, ``answer`` reference, ``model_output``)."""
    from musiceval.data.musicqa import load_dasheng_musicqa

    return load_dasheng_musicqa(path)


@register_format("musiceval-choice", protocols=("choice", "judge"),
                 detect=lambda path, recs: {"item_id", "choices", "answer"} <= keys_of(recs)
                 and bool(keys_of(recs) & {"text", "response"}),
                 description="musiceval multiple-choice answers")
def load_musiceval_choice(path: Path) -> AnswerSet:
    """musiceval's multiple-choice answers (``item_id``, ``choices``, ``answer``, ``text``)."""
    from musiceval.data.muchomusic import load_musiceval_jsonl

    return load_musiceval_jsonl(path)


@register_format("musiceval-factual", protocols=("factual",),
                 detect=lambda path, recs: {"item_id", "text"} <= keys_of(recs) and "choices" not in keys_of(recs),
                 description="musiceval factual answers")
def load_musiceval_factual(path: Path) -> AnswerSet:
    """musiceval's factual answers (``item_id``, ``prompt``, ``text``, ``labels``; chunks, Random rows)."""
    from musiceval.data.factual_files import load_factual

    return load_factual(path, "musiceval")


@register_format("musiceval-freeform", protocols=("freeform", "judge"),
                 detect=lambda path, recs: {"id", "question", "reference", "response"} <= keys_of(recs),
                 description="musiceval free-form answers")
def load_musiceval_freeform(path: Path) -> AnswerSet:
    """musiceval's free-form answers (``id``, ``question``, ``reference``, ``response``, ``condition``)."""
    from musiceval.data.musicqa import load_freeform_jsonl

    return load_freeform_jsonl(path)


