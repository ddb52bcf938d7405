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

from musiceval.models.base import Answer, GenerationSettings, ModelSpecError, Request, register_model

__all__ = ["RecordedModel", "read_recorded"]


def _norm_prompt(text: str | None) -> str | None:
    return " ".join(text.split()) if isinstance(text, str) else None


def _aliases(item_id: str) -> list[str]:
    p = PurePosixPath(str(item_id).replace("\\", "/"))
    return list(dict.fromkeys([str(item_id), p.name, p.stem]))


def _from_row(row: Any, where: str) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
    if "model_output" in row:  # dasheng
        item_id, prompt, text, condition = row.get("audio"), row.get("prompt"), row["model_output"], "correct"
    elif "response" in row and "audioid" in row:  # cmi-bench
        item_id, prompt, text, condition = row["audioid"], row.get("question"), row["response"], "correct"
    elif "text" in row and "item_id" in row:  # musiceval
        item_id, prompt, text = row["item_id"], row.get("prompt"), row["text"]
        condition = row.get("condition") or "correct"
    else:
        raise ValueError(
            f"{where}: unknown layout (keys {sorted(row)[:8]}); expected musiceval "
            "(item_id, text), dasheng (audio, model_output) or cmi-bench (audioid, response)"
        )
    if item_id is None or not isinstance(text, str):
        raise ValueError(f"{where}: missing item id or non-string response text")
    return {"item_id": str(item_id), "condition": str(condition), "prompt": prompt, "text": text}


def read_recorded(path: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Read a recorded-responses file into rows ``{item_id, condition, prompt, text}``.

    Returns the rows and a list of per-line problems (``"FILE:LINE: reason"``); a bad line is
    reported, not fatal. A missing or undecodable file raises ``ModelSpecError``.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelSpecError(
            f"recorded responses file '{path}' not found; pass --model recorded:<existing file>"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ModelSpecError(f"recorded responses file '{path}' is not UTF-8 ({exc})") from exc
    rows, problems = [], []
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ModelSpecError(f"{path}: not a valid JSON array ({exc})") from exc
        entries = [(f"{path}:[{i}]", row) for i, row in enumerate(data)]
    else:
        entries = []
        for no, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                entries.append((f"{path}:{no}", json.loads(line)))
            except json.JSONDecodeError as exc:
                problems.append(f"{path}:{no}: not JSON ({exc.msg})")
    for where, row in entries:
        try:
            rows.append(_from_row(row, where))
        except ValueError as exc:
            problems.append(str(exc))
    return rows, problems


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
            for alias in _aliases(row["item_id"]):
                self._index.setdefault((alias, row["condition"]), []).append(row)

    def _lookup(self, request: Request) -> Answer:
        want = _norm_prompt(request.prompt)
        for alias in _aliases(request.item_id):
            rows = self._index.get((alias, request.condition))
            if not rows:
                continue
            matched = [r for r in rows if _norm_prompt(r["prompt"]) == want]
            if not matched and len(rows) == 1 and rows[0]["prompt"] is None:
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

    def close(self) -> None:
        pass
