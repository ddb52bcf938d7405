"""Answer formats: recognise an answer file from its content and load it into an AnswerSet.

Every layout of recorded answers (musiceval's own, the dasheng-lm ``evaluate/jsonl`` files,
MuChoMusic's evaluation JSON, CMI-Bench outputs, or one a user registers) is an
:class:`AnswerFormat` in :data:`FORMATS`: a name, the protocols it feeds, ``detect(path,
records)`` (a look at the first parsed records) and ``load(path) -> AnswerSet``.

:func:`detect_format` reads at most the first 64 KiB of a file (a JSON array, JSON lines or a
CSV header with its first rows) and returns the first registered format whose ``detect``
accepts it (builtins first, in registration order); :func:`load_answers` loads with it. When
nothing matches, or the match feeds another protocol, :class:`FormatError` says in one line
which file, what was seen (its keys) and the fix.

Add a format::

    from musiceval.data.formats import register_format

    @register_format("my-csv", protocols=("choice",),
                     detect=lambda path, records: bool(records) and {"qid", "options"} <= set(records[0]))
    def load_my_csv(path) -> AnswerSet:
        ...

(see docs/extending.md). A package outside musiceval registers its module under the entry-point
group ``musiceval.formats``.
"""
from __future__ import annotations

import csv
import io
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from musiceval.data.answers import AnswerSet
from musiceval.data.benchmarks import benchmark_of
from musiceval.registry import Registry

#: bytes :func:`detect_format` reads
HEAD_BYTES = 1 << 16


class FormatError(ValueError):
    """A file no registered format reads, or one given to the wrong protocol (one line: the
    file, what was seen, the fix)."""


@dataclass(frozen=True)
class AnswerFormat:
    name: str
    #: the protocols whose ``from_answers`` read this format's AnswerSet
    protocols: tuple[str, ...]
    #: ``detect(path, records)``: whether the file is in this format; ``records`` are the first
    #: parsed records (dicts for JSON objects and CSV rows; any JSON value otherwise)
    detect: Callable[[Path, list], bool]
    load: Callable[[Path], AnswerSet]
    description: str = ""


FORMATS: Registry[AnswerFormat] = Registry(
    "answer format",
    builtin_modules=("musiceval.data.formats_builtin", "musiceval.data.mmau", "musiceval.data.rul"),
    entry_point_group="musiceval.formats",
)


def register_format(name: str, *, protocols: Sequence[str], detect: Callable[[Path, list], bool],
                    description: str = "", replace: bool = False) -> Callable:
    """Decorator on ``load(path) -> AnswerSet``: register it as the answer format ``name``."""
    if isinstance(protocols, str):
        protocols = (protocols,)

    def wrap(load: Callable[[Path], AnswerSet]) -> Callable[[Path], AnswerSet]:
        FORMATS.register(name, AnswerFormat(name, tuple(protocols), detect, load, description or (load.__doc__ or "").strip().split("\n")[0]),
                         replace=replace)
        return load

    return wrap


# ---------------------------------------------------------------------------------- sniffing


def _json_array_head(text: str) -> list:
    """The complete values at the start of a (possibly truncated) JSON array."""
    decoder = json.JSONDecoder()
    pos, out = text.index("[") + 1, []
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            return out
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return out
        except RecursionError:  # one record nested too deeply: step over it, read the next ones
            pos = _end_of_value(text, pos)
            if pos < 0:
                return out
            continue
        out.append(value)


def _end_of_value(text: str, pos: int) -> int:
    """The index after the JSON array/object starting at ``pos`` (brackets counted outside
    strings), or -1 when it does not end in ``text``."""
    depth, in_string, escaped = 0, False, False
    for k in range(pos, len(text)):
        ch = text[k]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return k + 1
    return -1


#: how far :func:`sniff` reads when the first record alone is longer than :data:`HEAD_BYTES`
MAX_FIRST_RECORD_BYTES = 16 << 20


def sniff(path: str | Path) -> tuple[str, list]:
    """``(kind, records)`` of a file's first :data:`HEAD_BYTES`: kind is ``"json-array"``,
    ``"json-lines"``, ``"csv"``, ``"empty"`` or ``"unknown"``; records the values parsed. When not
    even one record is complete in the head (a looping model output), it reads on up to
    :data:`MAX_FIRST_RECORD_BYTES` once."""
    kind, records, truncated = _sniff(Path(path), HEAD_BYTES)
    if truncated and not records and kind in ("json-array", "json-lines"):
        kind, records, _ = _sniff(Path(path), MAX_FIRST_RECORD_BYTES)
    return kind, records


def _sniff(path: Path, limit: int) -> tuple[str, list, bool]:
    with path.open("rb") as fh:
        raw = fh.read(limit)
        truncated = bool(fh.read(1))
    kind, records = _parse_head(raw, truncated)
    return kind, records, truncated


def _parse_head(raw: bytes, truncated: bool) -> tuple[str, list]:
    text = raw.decode("utf-8-sig", errors="replace")
    stripped = text.lstrip()
    if not stripped:
        return "empty", []
    if stripped.startswith("["):
        return "json-array", _json_array_head(stripped)
    lines = [ln for ln in stripped.splitlines() if ln.strip()]
    if truncated and lines and not stripped.endswith("\n"):
        lines = lines[:-1]  # the last line was cut at the 64 KiB mark
    if stripped.startswith("{"):
        records = []
        for ln in lines:
            try:
                records.append(json.loads(ln))
            except (ValueError, RecursionError):
                if not records:
                    return "unknown", []
                continue
        return "json-lines", records
    if lines and ("," in lines[0] or "\t" in lines[0]):
        dialect = "excel-tab" if "\t" in lines[0] and "," not in lines[0] else "excel"
        rows = list(csv.DictReader(io.StringIO("\n".join(lines)), dialect=dialect))
        if not rows:  # a header only: show its columns
            header = next(csv.reader(io.StringIO(lines[0]), dialect=dialect))
            return "csv", [dict.fromkeys(header)]
        return "csv", rows
    return "unknown", []


def _seen(kind: str, records: list) -> str:
    if kind == "empty":
        return "an empty file"
    if kind == "unknown":
        return "neither JSON lines, a JSON array nor a CSV with a header"
    what = {"json-array": "a JSON array", "json-lines": "JSON lines", "csv": "a CSV"}[kind]
    first = next((r for r in records if isinstance(r, dict)), None)
    if first is None:
        if not records:
            return f"{what} with no complete record"
        return f"{what} of {type(records[0]).__name__} values, not objects"
    return f"{what} with keys {', '.join(map(str, first))}"


def _matches(path: Path, records: list) -> list[AnswerFormat]:
    out = []
    for _, fmt in FORMATS.items():
        try:
            if fmt.detect(path, records):
                out.append(fmt)
        except Exception:  # a plugin's detect that chokes on another layout: not a match
            continue
    return out


def detect_format(path: str | Path, protocol: str | None = None) -> AnswerFormat:
    """The registered format of ``path`` (feeding ``protocol`` when given); see the module docstring.

    Raises
    ------
    FormatError
        No format matches, or the matching format feeds other protocols.
    FileNotFoundError
        ``path`` does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: file not found; pass an existing answer file")
    if protocol is not None and not format_names(protocol):
        raise FormatError(f"{path}: {no_format_for(protocol)}")
    kind, records = sniff(path)
    found = _matches(path, records) if records else []
    if protocol is not None:
        fitting = [f for f in found if protocol in f.protocols]
        if fitting:
            return fitting[0]
    elif found:
        return found[0]
    seen = _seen(kind, records)
    if found:
        feeds = _listed(found[0].protocols)
        raise FormatError(f"{path}: looks like {found[0].description or found[0].name} ({seen}), which feed{'s' if len(found[0].protocols) == 1 else ''} "
                          f"{feeds}, not {protocol!r}; give it to the {found[0].protocols[0]} protocol or pass "
                          f"{_want(protocol)}")
    names = [n for n, f in FORMATS.items() if protocol is None or protocol in f.protocols]
    raise FormatError(f"{path}: no answer format recognises it ({seen}); pass a file in one of the formats "
                      f"{', '.join(names)} (see docs/extending.md to register another)")


def no_format_for(protocol: str) -> str:
    """Why no file can feed ``protocol``, and the fix: no registered answer format names it
    (docs/extending.md, "An answer format")."""
    return (f"no answer format is registered for the {protocol!r} protocol; register one with "
            f"@register_format(NAME, protocols=({protocol!r},), detect=...) and expose its module under the "
            "musiceval.formats entry point (docs/extending.md, \"An answer format\")")


def _want(protocol: str) -> str:
    """What to pass instead: a file in a format that feeds ``protocol`` (read from the registry,
    so a plugin's format and protocol are named like the builtin ones; a protocol no format feeds
    is refused before, by :func:`no_format_for`)."""
    return f"a {protocol} answer file (format {' or '.join(format_names(protocol))})"


def get_format(name: str) -> AnswerFormat:
    """The format registered as ``name`` (``KeyError`` naming the registered ones)."""
    return FORMATS.get(name)


def load_answers(path: str | Path, fmt: str | AnswerFormat | None = None, protocol: str | None = None) -> AnswerSet:
    """Load ``path`` with format ``fmt`` (a name or an :class:`AnswerFormat`), or the detected one.

    File-level problems of the loader (unreadable, not UTF-8, missing columns) are re-raised as
    :class:`FormatError` naming the file; bad records are the AnswerSet's ``failures``. The set
    names its ``benchmark`` (:func:`musiceval.data.benchmarks.benchmark_of`).
    """
    path = Path(path)
    if fmt is None:
        chosen = detect_format(path, protocol)
    elif isinstance(fmt, AnswerFormat):
        chosen = fmt
    else:
        try:
            chosen = FORMATS.get(fmt)
        except KeyError as exc:
            raise FormatError(f"{path}: {exc.args[0]}") from None
    if protocol is not None and not format_names(protocol):
        raise FormatError(f"{path}: {no_format_for(protocol)}")
    if protocol is not None and protocol not in chosen.protocols:
        raise FormatError(f"{path}: format {chosen.name!r} feeds {_listed(chosen.protocols)}, not {protocol!r}; "
                          f"pass {_want(protocol)} or drop --format to detect it")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: file not found; pass an existing answer file")
    try:
        answers = chosen.load(path)
    except FormatError:
        raise
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except Exception as exc:
        if not isinstance(exc, ValueError) and type(exc).__name__ != "InputError":
            raise
        msg = str(exc)
        raise FormatError(msg if str(path.name) in msg else f"{path}: {msg}") from exc
    refuse_unreadable(answers, path, chosen)
    refuse_mixed_answers(answers, path)
    answers.format = answers.format or chosen.name
    answers.source = answers.source or str(path)
    if "dataset" not in answers.extra:
        answers.extra["dataset"] = dataset_name(path)
    answers.benchmark = benchmark_of(answers.extra, answers.format)
    return answers


def refuse_unreadable(answers: AnswerSet, path: Path, fmt: AnswerFormat) -> None:
    """:class:`FormatError` when the loader read no line of the file (every record is a failure):
    nothing to score, so one line naming the file, how many lines failed and the first reason
    instead of a protocol's error about a condition with no answers (docs/hardening.md, "No traceback:
    one line naming the input and the fix")."""
    if answers.responses or answers.excluded or not answers.failures:
        return
    first = answers.failures[0]
    read_as = f"{fmt.name}, {fmt.description}" if fmt.description else fmt.name
    raise FormatError(f"{path}: no line could be read ({len(answers.failures):,} unreadable; first: {first.item_id}: "
                      f"{first.reason}); read as {read_as}: fix its lines, or name its real format (--format, or "
                      "format in its answers entry)")


def refuse_mixed_answers(answers: AnswerSet, path: Path) -> None:
    """:class:`FormatError` naming the models and their record counts when one file holds several
    models' answers (every format's loader, a plugin's included; a second answer to an item, which
    the builtin loaders count as that line's failure, names its model in ``answers.models``); a
    single record naming another model is that record's failure (:func:`~musiceval.data.answers.one_model`):
    docs/hardening.md, "One model, one run per answer file"."""
    from musiceval.data.answers import drop_strays, one_model

    try:
        model, strays = one_model(Counter(answers.models).elements() if answers.models else
                                  (r.model for r in answers.responses))
    except ValueError as exc:
        raise FormatError(f"{path}: {exc}") from None
    drop_strays(answers, model, strays)  # a single record naming another model: one bad record, counted


def dataset_name(path: str | Path) -> str:
    """The ``dataset_name`` the first records of a file declare (dasheng-lm records carry one), or ""."""
    try:
        _, records = sniff(path)
    except OSError:
        return ""
    names = {r.get("dataset_name") for r in records if isinstance(r, dict) and isinstance(r.get("dataset_name"), str)}
    return names.pop() if len(names) == 1 else ""


def keys_of(records: list) -> set[str]:
    """Keys of the first object among ``records`` (empty when none): a helper for ``detect``."""
    first = next((r for r in records if isinstance(r, dict)), None)
    return set(first) if first else set()


def format_names(protocol: str | None = None) -> list[str]:
    return [n for n, f in FORMATS.items() if protocol is None or protocol in f.protocols]


def _listed(protocols: Sequence[str]) -> str:
    """``'choice'``, ``'choice' and 'judge'``, ``'mir', 'factual' and 'judge'``: protocols in a message."""
    names = [repr(p) for p in protocols]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
