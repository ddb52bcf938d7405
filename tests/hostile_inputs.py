"""A small generator of hostile input files, one per input class, for every reader of user files.

:func:`make_input` writes the input of ``klass`` for a reader whose valid record is ``template``
(a JSON-lines reader) or whose header and row are given (a CSV reader) and returns
``(path, n_records)``: ``n_records`` is how many records the input holds (each must come back as
a scored item or a counted failure), or ``None`` where the notion does not apply (a FIFO, a
directory, a missing file: the command must refuse with exit 2).

The classes (>= 30) cover encodings (BOM, non-UTF-8, NUL, lone surrogates, mixed encodings, CRLF),
structure (empty, whitespace, deep nesting, truncated JSON, a JSON array of scalars, one
pretty-printed object, trailing garbage), values (huge integers, NaN/Infinity, wrong types, nulls,
numbers as ids, very long strings, zero-width and RTL/emoji text, duplicate ids, missing and
extra fields), paths (traversal, absolute, symlinks out) and file kinds (FIFO, directory,
unreadable, missing).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

FILE_KINDS = ("fifo", "directory", "unreadable", "missing", "symlink_out")

JSONL_CLASSES = (
    "valid", "empty", "whitespace", "bom", "non_utf8", "nul_bytes", "lone_surrogate", "lone_surrogate_in_text",
    "deep_nesting", "huge_int",
    "huge_line", "json_array_of_scalars", "json_scalar", "wrong_types", "nan_infinity", "duplicate_ids",
    "missing_fields", "extra_fields", "very_long_strings", "zero_width", "rtl_emoji", "path_traversal",
    "absolute_path", "truncated_json", "crlf", "mixed_encodings", "number_as_id", "null_values", "binary_garbage",
    "pretty_printed", "trailing_garbage", "control_chars", "empty_strings", "nested_objects_as_values",
    "negative_numbers", "many_records",
) + FILE_KINDS

CSV_CLASSES = (
    "valid", "empty", "whitespace", "bom", "non_utf8", "nul_bytes", "unterminated_quote", "crlf", "header_only",
    "missing_columns", "extra_columns", "huge_line", "zero_width", "rtl_emoji", "mixed_encodings", "binary_garbage",
    "duplicate_rows", "empty_cells", "quoted_newlines", "semicolon_delimited", "json_instead", "very_long_strings",
    "control_chars", "deep_nesting", "lone_surrogate", "huge_int", "nan_infinity", "number_cells",
    "trailing_delimiters", "only_delimiters",
) + FILE_KINDS


def _lines(records: list[Any]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")


def _set_text(rec: dict, value: Any) -> dict:
    """``rec`` with every string field (not lists) replaced by ``value``."""
    return {k: (value if isinstance(v, str) else v) for k, v in rec.items()}


def _file_kind(klass: str, path: Path, valid: bytes, n: int) -> tuple[Path, int | None]:
    if klass == "fifo":
        os.mkfifo(path)
        return path, None
    if klass == "directory":
        path.mkdir()
        return path, None
    if klass == "unreadable":
        path.write_bytes(valid)
        path.chmod(0)
        return path, None
    if klass == "missing":
        return path, None
    if klass == "symlink_out":  # a link to a file outside the input's folder: read like any file
        outside = path.parent.parent / f"outside-{path.name}"
        outside.write_bytes(valid)
        path.symlink_to(outside)
        return path, n
    raise KeyError(klass)


def make_jsonl(klass: str, path: Path, template: dict[str, Any], *, id_field: str | None = "id",
               text_field: str, path_field: str | None = None, n: int = 3) -> tuple[Path, int | None]:
    """Write the hostile JSON-lines input ``klass`` at ``path``; ``(path, n_records)``.

    ``template(k)``-like records are ``template`` with ``id_field`` (when given) = ``item{k}`` and
    ``text_field`` suffixed by ``k`` so records differ.
    """
    def rec(k: int) -> dict[str, Any]:
        r = dict(template)
        if id_field:
            r[id_field] = f"item{k}"
        r[text_field] = f"{template[text_field]} {k}" if isinstance(template[text_field], str) else template[text_field]
        return r

    good = [rec(k) for k in range(n)]
    valid = _lines(good)
    if klass in FILE_KINDS:
        return _file_kind(klass, path, valid, n)
    bad_line: bytes | None = None  # one extra hostile line after the good ones
    data: bytes
    count = n
    if klass == "valid":
        data = valid
    elif klass == "empty":
        data, count = b"", 0
    elif klass == "whitespace":
        data, count = b"  \n\t\n \r\n", 0
    elif klass == "bom":
        data = b"\xef\xbb\xbf" + valid
    elif klass == "non_utf8":
        bad_line = json.dumps(rec(n)).encode("utf-8").replace(b" " + str(n).encode(), b" caf\xe9 \xff")
    elif klass == "nul_bytes":
        bad_line = b'{"a": "\x00\x00"}\x00'
    elif klass == "lone_surrogate":
        bad_line = json.dumps(_set_text(rec(n), "bad \ud800 text")).encode("utf-8")
    elif klass == "lone_surrogate_in_text":  # only the question/prompt: it reaches encoders and cache keys
        bad_line = json.dumps({**rec(n), text_field: "bad \ud800 text"}).encode("utf-8")
    elif klass == "deep_nesting":
        bad_line = b"[" * 20_000 + b"]" * 20_000
    elif klass == "huge_int":
        r = rec(n)
        bad_line = json.dumps(r).encode()[:-1] + b', "big": ' + b"9" * 5000 + b"}"
    elif klass == "huge_line":
        bad_line = json.dumps(_set_text(rec(n), "x" * 300_000)).encode()
    elif klass == "json_array_of_scalars":
        data, count = b"[1, 2, 3]\n", 1
    elif klass == "json_scalar":
        data, count = b"42\n", 1
    elif klass == "wrong_types":
        bad_line = json.dumps({k: ([1, 2] if isinstance(v, str) else "str") for k, v in rec(n).items()}).encode()
    elif klass == "nan_infinity":
        bad_line = json.dumps({k: (float("nan") if isinstance(v, str) else float("inf")) for k, v in rec(n).items()}).encode()
    elif klass == "duplicate_ids":
        dup = [dict(rec(0)) for _ in range(12)]
        if path_field:
            for r in dup:
                r[path_field] = good[0].get(path_field, r.get(path_field))
        data, count = _lines(dup), 12
    elif klass == "missing_fields":
        bad_line = b"{}"
    elif klass == "extra_fields":
        data = _lines([{**r, "unexpected": {"x": [1, 2]}, "zzz": None} for r in good])
    elif klass == "very_long_strings":
        bad_line = json.dumps({**rec(n), text_field: "long " * 20_000}).encode()
    elif klass == "zero_width":
        bad_line = json.dumps(_set_text(rec(n), "\u200b\u200c\u200d\ufeff")).encode()
    elif klass == "rtl_emoji":
        bad_line = json.dumps(_set_text(rec(n), "\u202eموسيقى \U0001F3B5\U0001F9D1\u200d\U0001F3A4"), ensure_ascii=False).encode()
    elif klass == "path_traversal":
        bad_line = json.dumps({**rec(n), (path_field or "audio"): "../../../../etc/passwd"}).encode()
    elif klass == "absolute_path":
        bad_line = json.dumps({**rec(n), (path_field or "audio"): "/etc/passwd"}).encode()
    elif klass == "truncated_json":
        bad_line = json.dumps(rec(n)).encode()[:-7]
    elif klass == "crlf":
        data = valid.replace(b"\n", b"\r\n")
    elif klass == "mixed_encodings":
        latin = json.dumps(_set_text(rec(n), "caf\u00e9 na\u00efve"), ensure_ascii=False).encode("latin-1")
        utf16 = json.dumps(rec(n + 1)).encode("utf-16")
        data, count = valid + latin + b"\n" + utf16 + b"\n", n + 2
    elif klass == "number_as_id":
        data = _lines([{**r, **({id_field: 1000 + k} if id_field else {})} for k, r in enumerate(good)])
    elif klass == "null_values":
        bad_line = json.dumps({k: None for k in rec(n)}).encode()
    elif klass == "binary_garbage":
        data, count = bytes(b for b in bytes(range(256)) * 4 if b not in (10, 13)) + b"\n", 1
    elif klass == "pretty_printed":
        data, count = json.dumps(rec(0), indent=2).encode() + b"\n", None  # one object over many lines
    elif klass == "trailing_garbage":
        bad_line = json.dumps(rec(n)).encode() + b" trailing }{"
    elif klass == "control_chars":
        bad_line = json.dumps(_set_text(rec(n), "bell\x07 esc\x1b[31m tab\t cr\r")).encode()
    elif klass == "empty_strings":
        bad_line = json.dumps(_set_text(rec(n), "")).encode()
    elif klass == "nested_objects_as_values":
        bad_line = json.dumps({k: {"nested": v} for k, v in rec(n).items()}).encode()
    elif klass == "negative_numbers":
        bad_line = json.dumps({k: (-1 if isinstance(v, str) else v) for k, v in rec(n).items()}).encode()
    elif klass == "many_records":
        data, count = _lines([rec(k) for k in range(100)]), 100
    else:
        raise KeyError(klass)
    if bad_line is not None:
        data, count = valid + bad_line + b"\n", n + 1
    path.write_bytes(data)
    return path, count


def make_csv(klass: str, path: Path, header: list[str], row: Callable[[int], list[str]], n: int = 4) -> tuple[Path, int | None]:
    """Write the hostile CSV input ``klass``; ``(path, n_data_rows)`` (``None``: refuse the file)."""
    def line(cells: list[str]) -> str:
        return ",".join(f'"{c}"' if ("," in c or '"' in c or "\n" in c) else c for c in cells) + "\n"

    body = line(header) + "".join(line(row(k)) for k in range(n))
    valid = body.encode()
    if klass in FILE_KINDS:
        return _file_kind(klass, path, valid, n)
    count: int | None = n
    extra: str | None = None
    if klass == "valid":
        data = valid
    elif klass == "empty":
        data, count = b"", 0
    elif klass == "whitespace":
        data, count = b" \n\n\t\n", 0
    elif klass == "bom":
        data = b"\xef\xbb\xbf" + valid
    elif klass == "non_utf8":
        data, count = valid + ",".join(row(n)).encode()[:-1] + b"\xff\xfe\n", n + 1
    elif klass == "nul_bytes":
        extra = ",".join(["a\x00b"] * len(header))
    elif klass == "unterminated_quote":
        data, count = (line(header) + line(row(0)) + ",".join(['"unterminated'] + row(1)[1:]) + "\n"
                       + "".join(line(row(k)) for k in range(2, n))).encode(), n
    elif klass == "crlf":
        data = valid.replace(b"\n", b"\r\n")
    elif klass == "header_only":
        data, count = line(header).encode(), 0
    elif klass == "missing_columns":
        extra = row(n)[0]
    elif klass == "extra_columns":
        extra = ",".join(row(n) + ["surplus", "more"])
    elif klass == "huge_line":
        extra = ",".join(["x" * 200_000] * len(header))
    elif klass == "zero_width":
        extra = ",".join(["\u200b"] * len(header))
    elif klass == "rtl_emoji":
        extra = ",".join(["\u202eموسيقى \U0001F3B5"] * len(header))
    elif klass == "mixed_encodings":
        data, count = valid + ",".join(["caf\u00e9"] * len(header)).encode("latin-1") + b"\n", n + 1
    elif klass == "binary_garbage":
        data, count = bytes(b for b in bytes(range(256)) * 3 if b not in (10, 13)) + b"\n", None
    elif klass == "duplicate_rows":
        data, count = (line(header) + line(row(0)) * 10).encode(), 10
    elif klass == "empty_cells":
        extra = ",".join([""] * len(header))
    elif klass == "quoted_newlines":
        # one quoted record over 4 lines: labels never hold line breaks, so each line is a counted failure
        data, count = valid + line([c + "\nsecond line" for c in row(n)]).encode(), n + 4
    elif klass == "semicolon_delimited":
        data, count = (";".join(header) + "\n" + "".join(";".join(row(k)) + "\n" for k in range(n))).encode(), None
    elif klass == "json_instead":
        data, count = b'[{"anchor": "Rock"}]\n', None
    elif klass == "very_long_strings":
        extra = ",".join(["long " * 5000] * len(header))
    elif klass == "control_chars":
        extra = ",".join(["bell\x07esc\x1b"] * len(header))
    elif klass == "deep_nesting":
        extra = ",".join(["[" * 5000 + "]" * 5000] * len(header))
    elif klass == "lone_surrogate":
        data, count = valid + ",".join(["bad \ud800"] * len(header)).encode("utf-8", "surrogatepass") + b"\n", n + 1
    elif klass == "huge_int":
        extra = ",".join(["9" * 5000] * len(header))
    elif klass == "nan_infinity":
        extra = ",".join(["NaN", "Infinity", "-Infinity"][: len(header)] + ["nan"] * max(0, len(header) - 3))
    elif klass == "number_cells":
        extra = ",".join(str(k) for k in range(len(header)))
    elif klass == "trailing_delimiters":
        extra = ",".join(row(n)) + ",,,"
    elif klass == "only_delimiters":
        extra = "," * (len(header) - 1)
    else:
        raise KeyError(klass)
    if extra is not None:
        data, count = valid + extra.encode("utf-8") + b"\n", n + 1
    path.write_bytes(data)
    return path, count
