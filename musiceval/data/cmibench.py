"""CMI-Bench files: instruction JSONL and model output files.

Layouts (nicolaus625/CMI-bench):

- Instructions ``CMI_<task>.jsonl``: one JSON object per line with ``instruction``, ``input``
  ("<|SOA|><AUDIO><|EOA|>"), ``output`` (ground truth), ``split`` (list), ``task_type``
  (``{"major": [...], "minor": [...]}``), ``audio_path`` (list), ``audio_start``, ``audio_end``,
  ``source``, ``other``.
- Outputs ``<model>_<task>.jsonl``: despite the extension, ONE JSON array of objects
  ``{question, response, correct_answer, audioid, other}``. Real JSON-lines files are read too.

The task and its variant come from the file name (:mod:`musiceval.data.cmibench_names`, whose
``TASKS``, ``TASK_VARIANTS``, ``parse_filename`` and ``task_from_filename`` are importable from here
too). One malformed record (not an object, a missing or
non-text ``response``, a missing ``correct_answer``, an empty one outside the tagging and label-set
tasks) is an :class:`~musiceval.records.ItemFailure`,
never a crash; a file that is not JSON at all raises :class:`CmiBenchFormatError` naming the file
and the fix.

Item ids are ``"<index>|<audio key>"`` where the audio key is ``audioid`` after its last
``data/`` or ``testdata/`` component, so the outputs of two models on the same file pair up.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from musiceval.data.answers import AnswerSet, split_labels
from musiceval.data.cmibench_names import TASKS, FileName, parse_filename
from musiceval.data.cmibench_names import TASK_VARIANTS as TASK_VARIANTS  # re-exported: the names' home
from musiceval.data.cmibench_names import task_from_filename as task_from_filename
from musiceval.data.jsonl import NotARegularFile, check_regular_file, has_lone_surrogate, parse_json_line
from musiceval.vocab.cmibench import LABEL_SET_VOCABULARIES, TAG_VOCABULARIES
from musiceval.records import Item, ItemFailure, Response
from musiceval.schemas import OutputRecord

#: Files larger than this are refused (the largest real output file is about 4 MB).
MAX_FILE_BYTES = 512 * 1024 * 1024


class CmiBenchFormatError(ValueError):
    """A whole file is unusable: the message names the file, the problem and the fix."""


@dataclass(frozen=True)
class OutputFile:
    task: str
    model: str
    path: str
    records: tuple[OutputRecord, ...]
    failures: tuple[ItemFailure, ...] = ()
    #: the task's variant the file name gives (``TASK_VARIANTS``), ``""`` for the task's own file
    variant: str = ""

    @property
    def n(self) -> int:
        return len(self.records) + len(self.failures)


@dataclass(frozen=True)
class Instruction:
    """One line of a ``CMI_<task>.jsonl`` instruction file."""

    line: int
    instruction: str
    output: str
    input: str = "<|SOA|><AUDIO><|EOA|>"
    split: tuple[str, ...] = ()
    task_major: tuple[str, ...] = ()
    task_minor: tuple[str, ...] = ()
    audio_path: tuple[str, ...] = ()
    audio_start: float | None = None
    audio_end: float | None = None
    source: str = ""
    other: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OutputsEntry:
    """One task file of a CMI-Bench outputs directory."""

    path: Path
    model: str
    task: str
    variant: str = ""

    @property
    def label(self) -> str:
        """The task as the file names it, the variant included (the source label of its gates)."""
        return FileName(self.model, self.task, self.variant).label


def outputs_dir(folder: str | os.PathLike[str]) -> list[OutputsEntry]:
    """The task files of ONE model's CMI-Bench outputs directory, ``*.jsonl`` then ``*.json``, sorted.

    Files whose name ends with no known task are not outputs and are left out (``notes.jsonl``).
    A gate is about one model, so a directory holding several models' files
    (``mullama_GTZAN.jsonl`` beside ``ltu_GTZAN.jsonl``) is refused, as are two files of one task
    (their gates would carry the same name); a task's file and its variant's
    (``Lyra_genre``, ``Lyra_genre_test_available``) are two sources. A file named by its task alone (``GTZAN.jsonl``)
    names no model and joins the directory's model.

    Raises
    ------
    CmiBenchFormatError
        Naming the directory, the models or files found, and the fix.
    """
    folder = Path(folder)
    entries = []
    for path in sorted(folder.glob("*.jsonl")) + sorted(folder.glob("*.json")):
        try:
            name = parse_filename(path)
        except ValueError:
            continue
        entries.append(OutputsEntry(path, name.model, name.task, name.variant))
    models = sorted({e.model for e in entries if e.model})
    if len(models) > 1:
        raise CmiBenchFormatError(
            f"{folder}: CMI-Bench outputs of {len(models)} models ({', '.join(models)}) in one directory; a gate is "
            "about one model: put each model's <model>_<task>.jsonl files in a directory of its own, or declare "
            "one [[model]] per model in musiceval.toml, each with its own [[model.answers]] dir")
    seen: dict[str, Path] = {}
    for e in entries:
        if e.label in seen:
            raise CmiBenchFormatError(f"{folder}: two files hold task {e.label} ({seen[e.label].name}, {e.path.name}); "
                                      "keep one file per task")
        seen[e.label] = e.path
    return entries


_DATA_DIR = re.compile(r"(?:^|/)(?:test)?data/")


def audio_key(audioid: str) -> str:
    """``audioid`` after its last ``data/`` or ``testdata/`` directory (model-independent)."""
    norm = audioid.replace("\\", "/")
    m = list(_DATA_DIR.finditer(norm)) if "data/" in norm else None
    return norm[m[-1].end():] if m else norm.lstrip("./")


def _read_text(path: Path) -> str:
    if not path.exists():
        raise CmiBenchFormatError(f"{path}: no such file; pass the path of a CMI-Bench output or instruction file")
    try:
        check_regular_file(path, what="a CMI-Bench output or instruction file")
    except NotARegularFile as exc:
        raise CmiBenchFormatError(str(exc)) from None
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise CmiBenchFormatError(f"{path}: {size} bytes exceeds the {MAX_FILE_BYTES} byte limit; split the file")
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # one JSON array, or a whole file in UTF-16/32 (a byte-order mark): the file as a whole is unreadable
        if raw.lstrip()[:1] == b"[" or raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise CmiBenchFormatError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start}); re-encode the file as UTF-8") from None
        # JSON lines: undecodable bytes stay visible (surrogateescape) so only the lines holding them fail,
        # unless no line decodes at all (the file is in another encoding)
        text = raw.decode("utf-8-sig", errors="surrogateescape")
        if not any(line.strip() and not _undecodable(line) for line in _lines(text)):
            raise CmiBenchFormatError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start}); re-encode the file as UTF-8") from None
        return text


def _undecodable(line: str) -> bool:
    """True when ``line`` holds bytes that were not UTF-8 (decoded with ``surrogateescape``)."""
    return any("\udc80" <= ch <= "\udcff" for ch in line)


def _lines(text: str) -> list[str]:
    """Lines split on ``\\n`` (``\\r\\n`` too) only: ``str.splitlines`` would also split inside a
    record at U+2028, U+0085 or a form feed that JSON allows unescaped in strings."""
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def _as_text(value: Any) -> str | None:
    """Text of a field: strings as is, numbers via ``str``, a list by its first element."""
    if type(value) is str:
        return value
    if isinstance(value, list):
        value = value[0] if value else None
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


#: a JSON escape of a UTF-16 surrogate (backslash-u D800 to DFFF); a strictly decoded text without one
#: parses to valid Unicode only, so the per-record check is skipped
_SURROGATE_ESCAPE = re.compile(r"\\[uU][dD][89abcdefABCDEF]")


def _parse_items(text: str, path: Path) -> list[tuple[int, Any]]:
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CmiBenchFormatError(
                f"{path}:{exc.lineno}: invalid JSON array ({exc.msg}); the file must be one JSON array "
                "of {question, response, correct_answer, audioid, other} objects"
            ) from None
        except (RecursionError, ValueError) as exc:  # nested too deeply, an over-long integer
            why = "nested too deeply to parse" if isinstance(exc, RecursionError) else str(exc).splitlines()[0][:200]
            raise CmiBenchFormatError(f"{path}: unusable JSON array ({why}); the file must be one JSON array "
                                      "of {question, response, correct_answer, audioid, other} objects") from None
        if not isinstance(data, list):
            raise CmiBenchFormatError(f"{path}: expected one JSON array of model outputs, got {type(data).__name__}")
        if not _SURROGATE_ESCAPE.search(text):  # no surrogate escape in the text: nothing to check
            return list(enumerate(data))
        return [(k, ItemFailure(f"record{k}", f"{path.name}[{k}]: text holds a lone UTF-16 surrogate; not valid Unicode"))
                if has_lone_surrogate(obj) is not None else (k, obj) for k, obj in enumerate(data)]
    items: list[tuple[int, Any]] = []
    for lineno, line in enumerate(_lines(text), start=1):
        if not line.strip():
            continue
        if _undecodable(line):
            items.append((lineno, ItemFailure(f"line{lineno}", f"{path.name}:{lineno}: line is not valid UTF-8; re-encode the file as UTF-8")))
            continue
        try:
            items.append((lineno, parse_json_line(line)))
        except ValueError as exc:  # malformed, too deep, over-long integer, lone surrogate
            items.append((lineno, ItemFailure(f"line{lineno}", f"invalid JSON on line {lineno} of {path.name}: {exc}")))
    if not items:
        raise CmiBenchFormatError(f"{path}: empty file; expected a JSON array of model outputs")
    return items


def load_outputs(path: str | os.PathLike[str], *, task: str | None = None) -> OutputFile:
    """Read a CMI-Bench output file into records and per-item failures."""
    p = Path(path)
    if task:  # the variant still comes from a name that gives this task
        try:
            named = parse_filename(p)
        except ValueError:
            named = None
        model, file_task, variant = "", task, named.variant if named and named.task == task else ""
    else:
        named = parse_filename(p)
        model, file_task, variant = named.model, named.task, named.variant
    if file_task not in TASKS:
        raise ValueError(f"unknown CMI-Bench task {file_task!r}; one of {', '.join(TASKS)}")
    records: list[OutputRecord] = []
    failures: list[ItemFailure] = []
    name = p.name
    for index, obj in _parse_items(_read_text(p), p):
        if isinstance(obj, ItemFailure):
            failures.append(obj)
            continue
        where = f"{name}[{index}]"
        if not isinstance(obj, dict):
            failures.append(ItemFailure(str(index), f"{where}: record is {type(obj).__name__}, not an object"))
            continue
        audioid = _as_text(obj.get("audioid")) or ""
        key = audio_key(audioid)
        item_id = f"{index}|{key}"
        response = _as_text(obj.get("response"))
        answer = _as_text(obj.get("correct_answer"))
        if response is None:
            failures.append(ItemFailure(item_id, f"{where}: field 'response' missing or not text"))
            continue
        if answer is None:
            failures.append(ItemFailure(item_id, f"{where}: field 'correct_answer' missing or not text"))
            continue
        if not answer.strip() and file_task not in TAG_VOCABULARIES and file_task not in LABEL_SET_VOCABULARIES:
            # nothing to score against; a tagging or label-set item with no true label (a Lyra track
            # with no place) is a legitimate all-negative row (the toolkit counts it)
            failures.append(ItemFailure(item_id, f"{where}: field 'correct_answer' is empty"))
            continue
        records.append(OutputRecord(
            item_id=item_id, index=index, question=_as_text(obj.get("question")) or "", response=response,
            correct_answer=answer, audioid=audioid, group=key or str(index), other=obj.get("other", ""),
        ))
    return OutputFile(task=file_task, model=model, path=str(p), records=tuple(records), failures=tuple(failures),
                      variant=variant)


def _tuple_of_str(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(str(v) for v in value)
    return ()


def _float_or_none(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def load_instructions(path: str | os.PathLike[str]) -> tuple[list[Instruction], list[ItemFailure]]:
    """Read a ``CMI_<task>.jsonl`` instruction file; malformed lines become failures."""
    p = Path(path)
    rows: list[Instruction] = []
    failures: list[ItemFailure] = []
    for lineno, line in enumerate(_lines(_read_text(p)), start=1):
        if not line.strip():
            continue
        if _undecodable(line):
            failures.append(ItemFailure(f"line{lineno}", f"{p.name}:{lineno}: line is not valid UTF-8; re-encode the file as UTF-8"))
            continue
        try:
            obj = parse_json_line(line)
        except ValueError as exc:  # malformed, too deep, over-long integer, lone surrogate
            failures.append(ItemFailure(f"line{lineno}", f"{p.name}:{lineno}: invalid JSON ({exc})"))
            continue
        if not isinstance(obj, dict):
            failures.append(ItemFailure(f"line{lineno}", f"{p.name}:{lineno}: not an object"))
            continue
        instruction, output = _as_text(obj.get("instruction")), _as_text(obj.get("output"))
        if instruction is None or output is None:
            missing = "instruction" if instruction is None else "output"
            failures.append(ItemFailure(f"line{lineno}", f"{p.name}:{lineno}: field '{missing}' missing or not text"))
            continue
        tt = obj.get("task_type") if isinstance(obj.get("task_type"), dict) else {}
        rows.append(Instruction(
            line=lineno, instruction=instruction, output=output, input=str(obj.get("input", "")),
            split=_tuple_of_str(obj.get("split")), task_major=_tuple_of_str(tt.get("major")),
            task_minor=_tuple_of_str(tt.get("minor")), audio_path=_tuple_of_str(obj.get("audio_path")),
            audio_start=_float_or_none(obj.get("audio_start")), audio_end=_float_or_none(obj.get("audio_end")),
            source=str(obj.get("source", "")), other=obj.get("other") if isinstance(obj.get("other"), dict) else {},
        ))
    return rows, failures


def answer_set(out: OutputFile) -> AnswerSet:
    """A CMI-Bench ``OutputFile`` -> AnswerSet (``extra["task"]``, ``extra["variant"]`` for a variant's
    file; labels split on commas)."""
    items = [Item(id=r.item_id, question=r.question, reference=r.correct_answer, labels=split_labels(r.correct_answer),
                  group=r.group, meta={"index": r.index, "audioid": r.audioid, "other": r.other}) for r in out.records]
    responses = [Response(item_id=r.item_id, condition="correct", model=out.model, prompt=r.question, text=r.response)
                 for r in out.records]
    return AnswerSet(items, responses, list(out.failures), model=out.model, source=str(out.path), format="cmi-bench",
                     extra={"task": out.task, **({"variant": out.variant} if out.variant else {})})
