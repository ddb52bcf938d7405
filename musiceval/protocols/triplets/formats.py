"""Triplets (anchor, positive, negative) for probing the musical knowledge of text encoders.

Two sources (docs/protocols/text-encoders.md):

- :func:`generate_triplets` forms every triplet of one AudioSet music subtree with
  ``0 < d(anchor, positive) < d(anchor, negative)`` where ``anchor`` and ``positive`` share an
  ancestor below the subtree's top class (pairs related only through the root ``Music`` are
  excluded; see :mod:`musiceval.vocab.audioset` for the distance on the DAG). The result is the
  complete, unfiltered set (genre 17,450, instrument 74,497 triplets for ontology @ d417d32; the
  published study kept 13,633 and 37,640 after manual filtering). ``max_triplets`` takes a seeded
  uniform sample without replacement, kept in enumeration order.
  :func:`negation_triplets` forms, for every valid anchor-positive pair, the two negation
  triplets whose negative is the negated anchor and the negated positive ("no <label>").
- :func:`load_triplet_csv` reads a published file with header ``anchor,positive,negative``. A
  negative written ``no <label>`` (any case) marks a negation triplet. Each malformed row is a
  counted :class:`~musiceval.records.ItemFailure` naming its line, never a crash.
"""
from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from musiceval.vocab.audioset import Subtree
from musiceval.data.jsonl import NotARegularFile, check_regular_file
from musiceval.records import ItemFailure

HEADER = ("anchor", "positive", "negative")
#: Longest label accepted from a file (the longest AudioSet class name has 36 characters).
MAX_LABEL_CHARS = 500
#: Rows beyond which a file is refused rather than read into memory.
MAX_ROWS = 5_000_000
NEGATION_MARK = "no "


class TripletFileError(ValueError):
    """A triplet file that cannot be read at all (missing, no header); names the file and fix."""


@dataclass(frozen=True)
class Triplet:
    """One triplet of label names. ``negated``: the negative is "no <negative>"."""

    id: str
    anchor: str
    positive: str
    negative: str
    negated: bool = False


@dataclass(frozen=True)
class TripletSet:
    triplets: tuple[Triplet, ...]
    failures: tuple[ItemFailure, ...] = ()
    source: str = ""

    def __len__(self) -> int:
        return len(self.triplets)


def _valid_pairs(subtree: Subtree) -> list[tuple[int, int]]:
    d, branch = subtree.distances, subtree.branch
    n = len(subtree.labels)
    return [(a, p) for a in range(n) for p in range(n) if d[a, p] > 0 and branch[a, p]]


def _sample(items: list, max_items: int | None, seed: int) -> list:
    if max_items is not None and max_items < 0:
        raise ValueError(f"max_triplets must be >= 0, got {max_items}")
    if max_items is None or max_items >= len(items):
        return items
    keep = np.sort(np.random.default_rng(seed).choice(len(items), size=max_items, replace=False))
    return [items[i] for i in keep]


def sample_triplets(triplets: TripletSet, max_triplets: int | None, *, seed: int = 0) -> TripletSet:
    """A seeded uniform sample of at most ``max_triplets`` triplets, in their original order."""
    return TripletSet(tuple(_sample(list(triplets.triplets), max_triplets, seed)), triplets.failures, triplets.source)


def generate_triplets(subtree: Subtree, *, seed: int = 0, max_triplets: int | None = None, name: str = "") -> TripletSet:
    """All triplets of ``subtree`` by tree distance, or a seeded sample of ``max_triplets``.

    Enumeration order is anchor, then positive, then negative, each in ontology file order, so
    the output depends only on the ontology, ``seed`` and ``max_triplets``. Ids are
    ``"<anchor id>|<positive id>|<negative id>"`` and stay the same in any sample.
    """
    d = subtree.distances
    ids, names = subtree.labels, subtree.names
    out: list[Triplet] = []
    for a, p in _valid_pairs(subtree):
        for n in np.flatnonzero(d[a] > d[a, p]):
            out.append(Triplet(f"{ids[a]}|{ids[p]}|{ids[n]}", names[a], names[p], names[n]))
    return TripletSet(tuple(_sample(out, max_triplets, seed)), source=name or subtree.root)


def negation_triplets(subtree: Subtree, *, seed: int = 0, max_triplets: int | None = None, name: str = "") -> TripletSet:
    """For each valid anchor-positive pair, ``(a, p, no a)`` and ``(a, p, no p)`` (docs/protocols/text-encoders.md)."""
    ids, names = subtree.labels, subtree.names
    out: list[Triplet] = []
    for a, p in _valid_pairs(subtree):
        for neg in (a, p):
            out.append(Triplet(f"{ids[a]}|{ids[p]}|no {ids[neg]}", names[a], names[p], names[neg], True))
    return TripletSet(tuple(_sample(out, max_triplets, seed)), source=name or subtree.root)


def _check_row(row: list[str], columns: dict[str, int], line: int) -> Triplet:
    if len(row) < len(columns) or any(columns[c] >= len(row) for c in HEADER):
        raise ValueError(f"has {len(row)} fields; expected columns {','.join(HEADER)}")
    values = {}
    for col in HEADER:
        value = row[columns[col]].strip()
        if not value:
            raise ValueError(f"field {col!r} is empty")
        if len(value) > MAX_LABEL_CHARS:
            raise ValueError(f"field {col!r} has {len(value)} characters (max {MAX_LABEL_CHARS})")
        if any(0xDC80 <= ord(ch) <= 0xDCFF for ch in value):
            raise ValueError(f"field {col!r} is not valid UTF-8; re-save the file as UTF-8")
        if "\x00" in value:
            raise ValueError(f"field {col!r} contains a NUL byte")
        if "\n" in value or "\r" in value:
            raise ValueError(f"field {col!r} contains a line break")
        if '"' in value:
            raise ValueError(f"field {col!r} contains a stray quote (a label never does; a quote left open?)")
        values[col] = value
    negative, negated = values["negative"], False
    if negative.lower() == NEGATION_MARK.strip():
        raise ValueError("negation negative 'no' names no label")
    if negative.lower().startswith(NEGATION_MARK):
        negative, negated = negative[len(NEGATION_MARK):].strip(), True
    if values["anchor"] == values["positive"]:
        raise ValueError(f"anchor and positive are the same label {values['anchor']!r}")
    if not negated and negative in (values["anchor"], values["positive"]):
        raise ValueError(f"negative {negative!r} repeats the anchor or the positive")
    return Triplet(f"L{line}", values["anchor"], values["positive"], negative, negated)


def _csv_rows(text: str) -> Iterator[tuple[int, list[str] | str]]:
    """``(line number, row)`` of CSV text, or ``(line, reason)`` for a line that cannot be read.

    Labels never hold line breaks, so a quoted field spanning lines is a quote left open: in
    :mod:`csv` it would run on to the next quote (or the end of the file) and swallow every row in
    between into one field. Such a row's first line is a failure ("unterminated quote") and each
    line after it is read on its own (a line with an odd number of quotes fails too): every
    physical line is a row or a counted failure.
    """
    lines = text.split("\n")
    first = 1  # the reader below starts at this line
    while first <= len(lines):
        reader = csv.reader(io.StringIO("\n".join(lines[first - 1:]), newline=""))
        restart = None
        while restart is None:
            start = first + reader.line_num
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                yield start, str(exc)
                continue
            end = first + reader.line_num - 1
            if end == start:
                yield start, row
                continue
            yield start, f"unterminated quote: the quoted field opened here runs over lines {start}-{end}; close the quote"
            for number in range(start + 1, end + 1):
                line = lines[number - 1].rstrip("\r") if number - 1 < len(lines) else ""
                if not line.strip():
                    yield number, []
                elif line.count('"') % 2:
                    yield number, "unbalanced quote on this line (inside the unterminated quote above)"
                else:
                    try:
                        yield number, next(csv.reader([line]), [])
                    except csv.Error as exc:
                        yield number, str(exc)
            restart = end + 1  # a fresh reader after the span: the rest of line `end` was read above
        first = restart


def load_triplet_csv(path: str | os.PathLike[str]) -> TripletSet:
    """Read a triplet CSV with header ``anchor,positive,negative`` (extra columns are ignored).

    A negative starting with "no " is read as a negation ("no <label>"), as in the published
    files; a label that itself starts with "No " (e.g. the genre "No wave") cannot be told apart in
    this layout. Raises :class:`TripletFileError` when the file is missing or has no such header; every
    malformed row (wrong field count, empty or over-long field, invalid UTF-8, anchor equal to
    positive, negative repeating one of them) is an ``ItemFailure`` with id ``L<line>``.
    """
    path = Path(path)
    if not path.exists():
        raise TripletFileError(f"triplet file {str(path)!r} not found; pass a CSV with header anchor,positive,negative")
    try:
        check_regular_file(path, what="a CSV with header anchor,positive,negative")
    except NotARegularFile as exc:
        raise TripletFileError(str(exc)) from None
    # surrogateescape keeps undecodable bytes visible, so only the rows holding them fail
    text = path.read_bytes().decode("utf-8", errors="surrogateescape").lstrip("\ufeff")
    rows = _csv_rows(text)
    first = next(rows, None)
    if first is None or (isinstance(first[1], list) and not first[1]):
        raise TripletFileError(f"{path}: empty file; expected the header line anchor,positive,negative")
    if not isinstance(first[1], list):
        raise TripletFileError(f"{path}:1: unreadable header ({first[1]})")
    header = first[1]
    columns = {h.strip().lower(): i for i, h in enumerate(header)}
    if not all(c in columns for c in HEADER):
        raise TripletFileError(
            f"{path}:1: header {header[:5]!r} lacks columns {[c for c in HEADER if c not in columns]}; "
            "the first line must be anchor,positive,negative"
        )
    triplets: list[Triplet] = []
    failures: list[ItemFailure] = []
    for line, row in rows:
        if len(triplets) + len(failures) >= MAX_ROWS:
            raise TripletFileError(f"{path}: more than {MAX_ROWS} rows; split the file")
        if isinstance(row, str):
            failures.append(ItemFailure(f"L{line}", f"{path}:{line}: unreadable CSV row ({row})"))
            continue
        if not row:
            continue  # blank lines are layout, not rows
        try:
            triplets.append(_check_row(row, columns, line))
        except ValueError as exc:
            failures.append(ItemFailure(f"L{line}", f"{path}:{line}: {exc}"))
    return TripletSet(tuple(triplets), tuple(failures), source=str(path))
