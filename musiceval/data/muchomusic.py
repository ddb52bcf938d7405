"""Loaders for MuChoMusic multiple-choice questions and recorded answers.

Four layouts (the release CSV in :mod:`musiceval.data.muchomusic_csv`):

- :func:`musiceval.data.muchomusic_csv.load_muchomusic_csv`: the official release ``muchomusic.csv`` (Zenodo 12709974,
  huggingface.co/datasets/mulab-mir/muchomusic): columns ``question``, ``correct_answer``,
  ``distractor_1_answer`` (incorrect but related), ``distractor_2_answer`` (correct but
  unrelated), ``distractor_3_answer`` (incorrect and unrelated), ``music_knowledge`` and
  ``music_reasoning`` (Python list literals, empty when untagged), ``genre``, ``dataset``
  (``sdd`` or ``musiccaps``), ``dataset_identifier`` (``<track>.json`` for SDD,
  ``<ytid>_<n>.json`` for MusicCaps), plus bookkeeping columns that are kept in ``meta``.
  Items carry the options in canonical order (answer first, ``answer == "A"``) with
  ``meta["distractor_types"]`` (the types :mod:`musiceval.vocab.choice_prompts` names); prompts shuffle
  them there.
- :func:`load_dasheng_jsonl`: MiDashengLM's recorded answers (xiaomi-research/dasheng-lm
  ``evaluate/jsonl``): ``question``, ``choices``, ``answer`` letter, ``prompt``,
  ``model_output``, ``audio``.
- :func:`load_muchomusic_eval_json`: the official evaluation input that ``prepare_prompts.py``
  writes and ``evaluate.py`` reads (a JSON array; JSON lines also accepted): ``id`` (the audio
  id), ``prompt``, ``answers`` (shuffled options), ``answer_orders`` (``answers[j]`` is the
  canonical option ``answer_orders[j]``; 0 is correct), ``knowledge``, ``reasoning``,
  ``genre``, ``dataset``, ``audio_path``, ``model_output``.
- :func:`load_musiceval_jsonl`: musiceval's own layout, one object per line: a
  :class:`~musiceval.records.Response` row (``item_id``, ``text``; ``response`` is accepted for
  ``text``) plus the question as prompted: ``question``, ``choices`` (prompt order), ``answer``
  (letter); optional ``condition`` (default ``correct``), ``run`` (default 0), ``model``,
  ``prompt``, ``knowledge``, ``reasoning``, ``distractor_types`` (aligned with ``choices``,
  ``"answer"`` for the correct one; required when there are fewer than four choices),
  ``group``, ``audio``, ``permutation``, ``task`` (the benchmark's task of the item, for a
  per-task breakdown of accuracy).

:func:`load_choice_manifest` reads the questions to ask a live model (the musiceval layout without
answers).

Every answers loader returns the :class:`~musiceval.data.answers.AnswerSet` the protocol scores
(``items[k]`` is the question as ``responses[k]`` saw it; the shuffle index in
``responses[k].meta["run"]``; :func:`musiceval.protocols.choice.engine.choice_records` turns it into the
engine's records) and one
:class:`~musiceval.records.ItemFailure` per bad record (malformed JSON, invalid UTF-8, wrong number of choices, duplicate choices, a
missing or out-of-range answer letter, a duplicate id): never a crash, never a silent drop.
File-level problems (missing file, missing CSV columns) raise :class:`ChoiceDataError`.
"""
from __future__ import annotations

import ast
import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from musiceval.data.answers import AnswerSet, count_model, repeated_row
from musiceval.data.jsonl import NotARegularFile, check_regular_file, read_json_objects
from musiceval.vocab.choice_prompts import ANSWER_TYPE, DISTRACTOR_TYPES, distractor_setting
from musiceval.schemas import LETTERS, validate_options
from musiceval.records import Item, ItemFailure, Response


class ChoiceDataError(ValueError):
    """A whole file cannot be read (missing, not UTF-8, missing columns); names the fix."""


@dataclass(frozen=True)
class ChoiceRecord:
    """One recorded answer: the question as prompted (options in prompt order) and the output.

    ``item.answer`` is the letter of the correct option in ``item.choices``;
    ``item.meta`` holds ``knowledge``, ``reasoning`` (tuples of dimension names) and, where
    known, ``distractor_types`` (aligned with ``item.choices``).
    """

    item: Item
    response: Response
    run: int = 0

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.item.id, self.response.condition, self.run, distractor_setting(self.item))


def parse_dimension_list(value: Any, *, field_name: str) -> tuple[str, ...]:
    """Parse a dimension list: a list, a Python/JSON list literal, or empty/NaN -> ``()``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ()
    if isinstance(value, str):
        if not value.strip():
            return ()
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise ValueError(f"field {field_name!r}: {value!r} is not a list literal like \"['melody']\"") from None
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"field {field_name!r}: expected a list of strings, got {value!r}")
    return tuple(v.strip() for v in value)


def _check_distractor_types(types: Any, n_choices: int, answer_index: int) -> tuple[str, ...]:
    if not isinstance(types, (list, tuple)) or len(types) != n_choices:
        raise ValueError(f"field 'distractor_types' must list one type per choice ({n_choices}), got {types!r}")
    known = {ANSWER_TYPE, *DISTRACTOR_TYPES}
    if any(t not in known for t in types) or len(set(types)) != len(types):
        raise ValueError(f"field 'distractor_types' {list(types)!r}: each of {sorted(known)} at most once")
    if types[answer_index] != ANSWER_TYPE:
        raise ValueError(f"field 'distractor_types': the correct choice must be typed {ANSWER_TYPE!r}")
    return tuple(types)


def _validated_choices(choices: Any, answer: Any, *, allow_ablation: bool) -> tuple[tuple[str, ...], str]:
    """Validate options and answer letter; four options unless the record declares an ablation."""
    if not isinstance(choices, (list, tuple)):
        raise ValueError(f"field 'choices' must be a list of four strings, got {type(choices).__name__}")
    if not allow_ablation and len(choices) != 4:
        raise ValueError(
            f"expected exactly 4 choices, got {len(choices)} (distractor ablations with fewer "
            "options must declare 'distractor_types')"
        )
    if answer is None or answer == "":
        raise ValueError("missing answer letter (field 'answer')")
    if not isinstance(answer, str):
        raise ValueError(f"answer must be a letter A-D, got {answer!r}")
    answer = answer.strip()
    validate_options(choices, answer)
    return tuple(choices), answer


def _read_lines(path: Path) -> Iterator[tuple[int, Any | ItemFailure]]:
    """Yield ``(line_number, parsed object or failure)`` for each non-blank line."""
    try:
        yield from read_json_objects(path, what="a recorded-answers file")
    except FileNotFoundError as exc:
        raise ChoiceDataError(str(exc)) from None


def _output_text(obj: dict, key: str) -> str:
    if key not in obj:
        raise ValueError(f"missing field {key!r} (the model's output)")
    value = obj[key]
    if value is None:
        return ""  # no output at all: scored as unanswered, not dropped
    if not isinstance(value, str):
        raise ValueError(f"field {key!r} must be a string, got {type(value).__name__}")
    return value


def _add(answers: AnswerSet, seen: set, record: ChoiceRecord, where: str) -> None:
    count_model(answers, record.response.model)  # a duplicate's model too: two models' answers are refused
    if record.key in seen:
        answers.failures.append(ItemFailure(record.item.id, f"{where}: duplicate record for item {record.item.id!r} "
                                                          f"(condition {record.response.condition!r}, run {record.run})"))
        return
    seen.add(record.key)
    answers.items.append(record.item)
    answers.responses.append(dataclasses.replace(record.response, meta={**dict(record.response.meta or {}), "run": record.run}))


def load_dasheng_jsonl(path: str | Path) -> AnswerSet:
    """Load MiDashengLM-style recorded answers (one JSON object per line).

    The item id is the stem of ``audio`` (``test_0``), else ``line<N>``; each question has its
    own audio file in this layout, so the group (cluster) is the item itself.
    """
    path = Path(path)
    answers, seen = AnswerSet(source=str(path), format="dasheng-choice"), set()
    for number, obj in _read_lines(path):
        if isinstance(obj, ItemFailure):
            answers.failures.append(obj)
            continue
        audio = obj.get("audio")
        item_id = Path(audio).stem if isinstance(audio, str) and audio else f"line{number}"
        where = f"{path.name}:{number}"
        try:
            question = obj.get("question")
            if not isinstance(question, str) or not question.strip():
                raise ValueError("missing field 'question'")
            choices, answer = _validated_choices(obj.get("choices"), obj.get("answer"), allow_ablation=False)
            text = _output_text(obj, "model_output")
        except ValueError as exc:
            answers.failures.append(ItemFailure(item_id, f"{where}: {exc}"))
            continue
        item = Item(id=item_id, question=question, audio=audio, choices=choices, answer=answer, group=item_id,
                    meta={"knowledge": (), "reasoning": (), "dataset": obj.get("dataset_name")})
        response = Response(item_id=item_id, condition="correct", model=str(obj.get("model_name") or "unknown"),
                            prompt=str(obj.get("prompt") or ""), text=text)
        _add(answers, seen, ChoiceRecord(item, response), where)
    return answers


def _musiceval_item(obj: dict, item_id: str) -> Item:
    """An :class:`Item` from a musiceval-layout row (``ValueError`` names a bad field)."""
    question = obj.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("missing field 'question'")
    types = obj.get("distractor_types")
    choices, answer = _validated_choices(obj.get("choices"), obj.get("answer"), allow_ablation=types is not None)
    meta: dict[str, Any] = {
        "knowledge": parse_dimension_list(obj.get("knowledge"), field_name="knowledge"),
        "reasoning": parse_dimension_list(obj.get("reasoning"), field_name="reasoning"),
    }
    task = obj.get("task")
    if task is not None:
        if not isinstance(task, str) or not task.strip():
            raise ValueError(f"field 'task' must be a non-empty string (the benchmark's task of the item), got {task!r}")
        meta["task"] = task
    if types is not None:
        meta["distractor_types"] = _check_distractor_types(types, len(choices), LETTERS.index(answer))
    permutation = obj.get("permutation")
    if permutation is not None:
        if not isinstance(permutation, list) or sorted(map(repr, permutation)) != sorted(map(repr, range(len(choices)))):
            raise ValueError(f"field 'permutation' {permutation!r} is not a permutation of 0..{len(choices) - 1}")
        meta["permutation"] = tuple(permutation)
    for key in ("audio_start", "audio_end"):
        if obj.get(key) is not None:
            if type(obj[key]) not in (int, float):
                raise ValueError(f"field {key!r} must be a number of seconds, got {obj[key]!r}")
            meta[key] = float(obj[key])
    audio = obj.get("audio")
    if audio is not None and not isinstance(audio, str):
        raise ValueError(f"field 'audio' must be a path string, got {audio!r}")
    return Item(id=item_id, question=question, audio=audio, choices=choices, answer=answer,
                group=str(obj.get("group") or item_id), meta=meta)


def load_musiceval_jsonl(path: str | Path) -> AnswerSet:
    """Load recorded answers in musiceval's multiple-choice JSONL layout (module docstring)."""
    path = Path(path)
    answers, seen = AnswerSet(source=str(path), format="musiceval-choice"), set()
    for number, obj in _read_lines(path):
        if isinstance(obj, ItemFailure):
            answers.failures.append(obj)
            continue
        where = f"{path.name}:{number}"
        try:
            obj = repeated_row(obj, "item_id" if "item_id" in obj else "id", answers.repeat_of)
        except ValueError as exc:
            answers.failures.append(ItemFailure(f"line{number}", f"{where}: {exc}"))
            continue
        item_id = str(obj.get("item_id", obj.get("id", f"line{number}")))
        try:
            item = _musiceval_item(obj, item_id)
            text = _output_text(obj, "text" if "text" in obj or "response" not in obj else "response")
            run = obj.get("run", 0)
            if not isinstance(run, int) or isinstance(run, bool) or run < 0:
                raise ValueError(f"field 'run' must be a non-negative integer, got {run!r}")
            condition = obj.get("condition", "correct")
            if not isinstance(condition, str) or not condition:
                raise ValueError(f"field 'condition' must be a non-empty string, got {condition!r}")
        except ValueError as exc:
            answers.failures.append(ItemFailure(item_id, f"{where}: {exc}"))
            continue
        response = Response(item_id=item_id, condition=condition, model=str(obj.get("model") or "unknown"),
                            prompt=str(obj.get("prompt") or ""), text=text)
        _add(answers, seen, ChoiceRecord(item, response, run=run), where)
    return answers


def load_choice_manifest(path: str | Path) -> tuple[list[Item], list[ItemFailure]]:
    """Load questions to ask a live model: musiceval's layout without answers.

    One object per line: ``id`` (or ``item_id``), ``question``, ``choices`` (canonical order),
    ``answer`` (letter), ``audio`` (a path relative to the data directory); optional
    ``knowledge``, ``reasoning``, ``distractor_types``, ``group``, ``audio_start``, ``audio_end``.
    """
    path = Path(path)
    items: list[Item] = []
    failures: list[ItemFailure] = []
    seen: set[str] = set()
    for number, obj in _read_lines(path):
        if isinstance(obj, ItemFailure):
            failures.append(obj)
            continue
        item_id = str(obj.get("id", obj.get("item_id", f"line{number}")))
        try:
            if item_id in seen:
                raise ValueError(f"duplicate id {item_id!r}")
            item = _musiceval_item(obj, item_id)
        except ValueError as exc:
            failures.append(ItemFailure(item_id, f"{path.name}:{number}: {exc}"))
            continue
        seen.add(item_id)
        items.append(item)
    return items, failures


def load_muchomusic_eval_json(path: str | Path) -> AnswerSet:
    """Load the official MuChoMusic evaluation input (``prepare_prompts.py`` output + outputs).

    Upstream ``id`` is the audio id, shared by every question on a track, so the item id is the
    record's position (``q<N>``) and ``id`` becomes the group (cluster).
    """
    path = Path(path)
    try:
        check_regular_file(path, what="the JSON file evaluate.py reads")  # a FIFO would block read_bytes
        head = path.read_bytes().lstrip()[:1]
    except FileNotFoundError:
        raise ChoiceDataError(f"{path}: file not found; pass the JSON file evaluate.py reads") from None
    except NotARegularFile as exc:
        raise ChoiceDataError(str(exc)) from None
    if head not in (b"[", b"{"):
        raise ChoiceDataError(
            f"{path}: not JSON; --format muchomusic reads the evaluation file of MuChoMusic's evaluate.py "
            "(prepare_prompts.py output with model_output filled in); muchomusic.csv holds questions only"
        )
    out, seen = AnswerSet(source=str(path), format="muchomusic-eval"), set()
    if head == b"[":
        try:
            array = json.loads(path.read_bytes().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise ChoiceDataError(f"{path}: not a valid UTF-8 JSON array ({exc!r:.200}); fix the file or write JSON lines") from None
        entries: Iterator = ((i + 1, obj if isinstance(obj, dict) else
                              ItemFailure(f"{path.name}[{i}]", f"expected a JSON object, got {type(obj).__name__}"))
                             for i, obj in enumerate(array))
    else:
        entries = _read_lines(path)
    for position, (number, obj) in enumerate(entries):
        if isinstance(obj, ItemFailure):
            out.failures.append(obj)
            continue
        item_id, where = f"q{position}", f"{path.name}:{number}"
        try:
            question = obj.get("question") or obj.get("prompt")
            if not isinstance(question, str) or not question.strip():
                raise ValueError("missing field 'prompt'")
            orders = obj.get("answer_orders")
            answers = obj.get("answers")
            if not isinstance(orders, list) or not isinstance(answers, list) or len(orders) != len(answers):
                raise ValueError("fields 'answers' and 'answer_orders' must be lists of equal length")
            if not orders or not all(type(o) is int for o in orders) or sorted(orders) != list(range(len(orders))):
                raise ValueError(f"field 'answer_orders' {orders!r} is not a permutation of 0..{len(orders) - 1}")
            declared = obj.get("distractors")
            if declared is not None and not (isinstance(declared, list) and all(isinstance(d, str) for d in declared)):
                raise ValueError(f"field 'distractors' must be a list of distractor types, got {declared!r}")
            answer = LETTERS[orders.index(0)] if orders.index(0) < len(LETTERS) else None
            choices, answer = _validated_choices(answers, answer, allow_ablation=declared is not None)
            meta: dict[str, Any] = {
                "knowledge": parse_dimension_list(obj.get("knowledge"), field_name="knowledge"),
                "reasoning": parse_dimension_list(obj.get("reasoning"), field_name="reasoning"),
                "permutation": tuple(orders), "genre": obj.get("genre"), "dataset": obj.get("dataset"),
            }
            canonical = ((ANSWER_TYPE, *declared) if declared is not None
                         else (ANSWER_TYPE, *DISTRACTOR_TYPES) if len(choices) == 4 else None)
            if canonical is not None:
                if len(canonical) != len(choices):
                    raise ValueError(f"field 'distractors' names {len(canonical) - 1} distractors for {len(choices)} answers")
                meta["distractor_types"] = _check_distractor_types([canonical[j] for j in orders], len(choices),
                                                                   LETTERS.index(answer))
            text = _output_text(obj, "model_output")
        except ValueError as exc:
            out.failures.append(ItemFailure(item_id, f"{where}: {exc}"))
            continue
        group = str(obj.get("id", item_id))
        item = Item(id=item_id, question=question, audio=obj.get("audio_path"), choices=choices, answer=answer,
                    group=group, meta=meta)
        response = Response(item_id=item_id, condition="correct", model=str(obj.get("model") or "unknown"),
                            prompt=str(obj.get("prompt") or ""), text=text)
        _add(out, seen, ChoiceRecord(item, response), where)
    return out
