"""``recorded:<file>``: a Music LM that answers from responses recorded earlier.

Three layouts are read (detected from the content, not the file name):

- **musiceval JSONL**: one :class:`~musiceval.records.Response` per line
  (``item_id``, ``condition``, ``prompt``, ``text``; what ``musiceval generate`` exports);
- **dasheng JSONL** (xiaomi-research/dasheng-lm ``evaluate/jsonl``): ``audio``, ``prompt``,
  ``model_output``;
- **cmi-bench outputs**: ONE JSON array (despite the ``.jsonl`` name) of
  ``{question, response, correct_answer, audioid, other}`` objects, or the same objects one per line.

A request is answered by the record with the same item id (the id as written, its file name, or
its file name without extension), the same condition (dasheng and cmi-bench files hold the
``correct`` condition only) and the same prompt (whitespace-normalised). Several records under one
(id, condition) need the prompt to match; a lone record is used for any prompt only when the
file holds no prompt for it. A request with no recorded answer is an ``Answer`` with an error that
names the file: never a made-up text.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePosixPath
from typing import Any, Sequence

from musiceval.models.base import Answer, GenerationSettings, ModelSpecError, Request, adapter_repr, register_model

__all__ = ["RecordedModel", "read_recorded"]


def _norm_prompt(text: str | None) -> str | None:
    return " ".join(text.split()) if isinstance(text, str) else None


def _aliases(item_id: str) -> list[str]:
    p = PurePosixPath(str(item_id).replace("\\", "/"))
    return list(dict.fromkeys([str(item_id), p.name, p.stem]))


def _sniff(text: str) -> str:
    if text.lstrip().startswith("["):
        return "cmi-bench"
    for line in text.splitlines():
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                return "musiceval"  # reported line by line below
            if isinstance(row, dict) and "model_output" in row:
                return "dasheng"
            if isinstance(row, dict) and "response" in row and "audioid" in row:
                return "cmi-bench"
            return "musiceval"
    return "musiceval"


def _read_musiceval(path: Path, text: str) -> tuple[list[dict[str, Any]], list[str]]:
    rows, problems = [], []
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict) or not isinstance(row.get("text"), str) or row.get("item_id") is None:
                raise ValueError("expected an object with 'item_id' and string 'text' (musiceval layout)")
        except ValueError as exc:
            problems.append(f"{path}:{no}: {exc}")
            continue
        rows.append({"ids": [str(row["item_id"])], "condition": str(row.get("condition") or "correct"),
                     "prompt": row.get("prompt"), "text": row["text"]})
    return rows, problems


def read_recorded(path: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Read a recorded-responses file into rows ``{ids, condition, prompt, text}``.

    dasheng files go through :func:`musiceval.data.dasheng.load_dasheng_jsonl`, cmi-bench files
    through :func:`musiceval.data.cmibench.load_outputs`. Returns the rows and the per-line
    problems (``"FILE:LINE: reason"``); a bad line is reported, not fatal. A missing or
    undecodable file raises ``ModelSpecError``.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelSpecError(f"recorded responses file '{path}' not found; pass --model recorded:<existing file>")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ModelSpecError(f"recorded responses file '{path}' is not UTF-8 ({exc})") from exc
    layout = _sniff(text)
    if layout == "dasheng":
        from musiceval.data.dasheng import load_dasheng_jsonl

        loaded = load_dasheng_jsonl(path, labels_field=None)
        rows = [{"ids": [item.group or item.id, item.id], "condition": r.condition, "prompt": r.prompt, "text": r.text}
                for item, r in zip(loaded.items, loaded.responses)]
        return rows, [f"{path}: {f.item_id}: {f.reason}" for f in loaded.failures]
    if layout == "cmi-bench":
        from musiceval.data.cmibench import TASKS, CmiBenchFormatError, audio_key, load_outputs, task_from_filename

        try:
            task = task_from_filename(path)[1]
        except ValueError:
            task = next(iter(TASKS))  # the task only labels the file; reading is the same for all
        try:
            loaded = load_outputs(path, task=task)
        except CmiBenchFormatError as exc:
            raise ModelSpecError(str(exc)) from exc
        rows = [{"ids": [r.audioid, audio_key(r.audioid), r.item_id], "condition": "correct", "prompt": r.question,
                 "text": r.response} for r in loaded.records]
        return rows, [f"{path}: {f.item_id}: {f.reason}" for f in loaded.failures]
    return _read_musiceval(path, text)


@register_model("recorded")
class RecordedModel:
    """Answers from a file of recorded responses (see the module docstring for the layouts)."""

    sample_rate = 16_000
    needs_audio = False  # answers are looked up by item; generate never decodes audio for it
    max_audio_seconds: float | None = None
    chunk_seconds: float | None = None

    def __init__(self, rest: str, **_: Any) -> None:
        if not rest:
            raise ModelSpecError(
                "--model recorded needs a file here: use recorded:<responses.jsonl> (musiceval, "
                "dasheng or cmi-bench layout); the evals' embedded default reads fixtures/ directly"
            )
        self.path = Path(rest)
        self.spec = f"recorded:{rest}"
        rows, self.problems = read_recorded(self.path)
        self.revision = hashlib.sha256(self.path.read_bytes()).hexdigest()[:16]
        self._index: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in rows:
            aliases = dict.fromkeys(a for item_id in row["ids"] for a in _aliases(item_id))
            for alias in aliases:
                self._index.setdefault((alias, row["condition"]), []).append(row)

    def _lookup(self, request: Request) -> Answer:
        want = _norm_prompt(request.prompt)
        for alias in _aliases(request.item_id):
            rows = self._index.get((alias, request.condition))
            if not rows:
                continue
            matched = [r for r in rows if _norm_prompt(r["prompt"]) == want]
            if not matched and len(rows) == 1 and not rows[0]["prompt"]:
                matched = rows
            if matched:
                return Answer(text=matched[0]["text"], meta={"recorded_from": str(self.path)})
            return Answer(
                error=f"{self.path}: {len(rows)} recorded response(s) for item "
                f"{request.item_id!r} ({request.condition}) but none for this prompt"
            )
        return Answer(
            error=f"{self.path}: no recorded response for item {request.item_id!r} under condition "
            f"{request.condition!r}; record it with `musiceval generate` on a live model"
        )

    def generate(self, requests: Sequence[Request], settings: GenerationSettings) -> list[Answer]:
        return [self._lookup(r) for r in requests]

    __repr__ = adapter_repr  # never the spec's credentials

    def close(self) -> None:
        pass
