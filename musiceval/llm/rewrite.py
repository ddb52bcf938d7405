"""The suite's LLM rewriter: Skyline paraphrases and Adversarial rewrites of reference answers.

One chat-completions call per (kind, distinct reference): temperature 0, non-streaming, through
an ``openai.OpenAI`` client passed in (:func:`musiceval.llm.client.make_client` builds one);
429/5xx/timeouts are retried a bounded number of times (:func:`musiceval.llm.client.call_with_retries`),
after which the item is a failure with the reason. Calls are recorded and replayed with one vcrpy
cassette per test (:mod:`musiceval.llm.cassettes`: record mode ``none`` in CI, credentials
filtered).

Prompts are versioned: ``prompts/rewrite_v1.txt`` holds the ``skyline`` and ``adversarial``
prompts; changing a prompt means ``rewrite_v2.txt`` and a new :data:`PROMPT_VERSION`. Results are
cached on disk, content-addressed by sha256 of ``(model, prompt version, kind, question,
reference)``, so a stale rewrite is never served. Every output record carries
``source = "llm:<model>:<prompt version>"``: rewrites by the LLM and by hand are never blurred.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from musiceval.conditions import Rewrite
from musiceval.llm.cache import JSONCache
from musiceval.llm.cassettes import CassetteMissing, is_cassette_miss
from musiceval.llm.client import LLMCallFailed, RetryPolicy, call_with_retries, describe_error
from musiceval.records import Item, ItemFailure

PROMPT_VERSION = "rewrite_v1"
PROMPT_FILE = Path(__file__).parent / "prompts" / f"{PROMPT_VERSION}.txt"
KINDS = ("skyline", "adversarial")


def load_prompts(path: Path = PROMPT_FILE) -> dict[str, str]:
    """The ``### <kind>`` sections of a rewrite prompt file."""
    parts = re.split(r"^### (\w+)\n", path.read_text("utf-8"), flags=re.M)
    prompts = {parts[k]: parts[k + 1].strip() + "\n" for k in range(1, len(parts) - 1, 2)}
    if set(prompts) != set(KINDS):
        raise ValueError(f"{path}: expected sections {KINDS}, found {sorted(prompts)}")
    return prompts


def rewrite_key(*, model: str, kind: str, question: str, reference: str) -> str:
    payload = json.dumps([model, PROMPT_VERSION, kind, question, reference], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass
class LLMRewriter:
    """Skyline/Adversarial rewrites through an OpenAI-compatible chat model."""

    client: Any
    model: str
    cache: JSONCache | None = None
    retry: RetryPolicy = RetryPolicy()
    max_tokens: int = 512

    def __post_init__(self) -> None:
        self.prompts = load_prompts()
        self.n_calls = 0

    def _call(self, kind: str, question: str, reference: str) -> str:
        content = self.prompts[kind].format(question=question, reference=reference)

        def once():
            self.n_calls += 1
            return self.client.chat.completions.create(
                model=self.model, messages=[{"role": "user", "content": content}],
                temperature=0, stream=False, max_tokens=self.max_tokens,
            )

        reply = call_with_retries(once, self.retry)
        text = (reply.choices[0].message.content or "").strip().strip('"').strip()
        if not text:
            raise LLMCallFailed(f"{kind}: empty reply from {self.model}")
        if text == reference.strip():
            raise LLMCallFailed(f"{kind}: the reply repeats the reference unchanged")
        return text

    def rewrite(self, kind: str, question: str, reference: str) -> str:
        """One rewrite (cached). Raises :class:`LLMCallFailed` with the reason on failure."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        key = rewrite_key(model=self.model, kind=kind, question=question, reference=reference)
        if self.cache is not None:
            hit = self.cache.get(key)
            if isinstance(hit, str) and hit.strip():
                return hit
        text = self._call(kind, question, reference)
        if self.cache is not None:
            self.cache.put(key, text)
        return text

    def rewrite_items(self, items: Sequence[Item]) -> tuple[dict[str, Rewrite], list[ItemFailure]]:
        """Skyline and Adversarial for every item with a reference; failures are per item."""
        import openai

        out: dict[str, Rewrite] = {}
        failures: list[ItemFailure] = []
        for item in items:
            if not item.reference or not item.reference.strip():
                failures.append(ItemFailure(item.id, "no reference to rewrite"))
                continue
            try:
                texts = {kind: self.rewrite(kind, item.question, item.reference) for kind in KINDS}
            except Exception as exc:
                if is_cassette_miss(exc):
                    raise CassetteMissing(
                        f"item {item.id!r}: the rewriter made a request that the cassette does not hold (references, "
                        "model or prompt changed); record it again: run without --replay, with OPENAI_API_KEY set") from exc
                if not isinstance(exc, (LLMCallFailed, openai.APIError)):
                    raise
                failures.append(ItemFailure(item.id, f"rewrite failed: {describe_error(exc) if isinstance(exc, openai.APIError) else exc}"))
                continue
            out[item.id] = Rewrite(item_id=item.id, question=item.question, reference=item.reference,
                                   skyline=texts["skyline"], adversarial=texts["adversarial"],
                                   source=f"llm:{self.model}:{PROMPT_VERSION}")
        return out, failures


def write_rewrites(path: str | Path, rewrites: dict[str, Rewrite]) -> None:
    """Write rewrites in the JSONL layout :func:`musiceval.conditions.load_rewrites` reads."""
    with Path(path).open("w", encoding="utf-8") as fh:
        for rw in rewrites.values():
            fh.write(json.dumps({"id": rw.item_id, "question": rw.question, "reference": rw.reference,
                                 "skyline": rw.skyline, "adversarial": rw.adversarial, "source": rw.source},
                                ensure_ascii=False) + "\n")
