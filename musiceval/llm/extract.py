"""The LLM label extractor: docs/protocols/factual.md's eight rules as a versioned prompt, structured output.

One chat-completions call per distinct answer (temperature 0, non-streaming) asks for
``{"labels": [...]}`` under a JSON schema whose items are an ``enum`` of the vocabulary, so a
conforming server cannot return anything else. The reply is still validated, because not every
OpenAI-compatible server enforces schemas:

- not JSON, not an object with a ``labels`` list of strings, empty, or a refusal -> a per-item
  failure with the reason;
- a label outside the vocabulary (after the instrument normalisation and synonyms) -> dropped and
  counted in ``oov``;
- duplicates removed, order kept (rule 4).

Results are cached by ``(model, PROMPT_VERSION, vocabulary hash, answer)``
(:mod:`musiceval.llm.cache`): a rerun makes no calls. Failures are not cached. Calls go through
:func:`musiceval.llm.client.call_with_retries` (bounded retries on 429/5xx/timeouts); a call
that still fails is a per-item failure, never a crash. A cassette miss is not a per-item
failure: it raises, naming the cassette problem.

Changing the prompt text means a new file ``prompts/extract_v2.txt`` and a new
``PROMPT_VERSION``, so cached and recorded results of the old prompt are never reused.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from musiceval.extraction.vocabulary import Vocabulary
from musiceval.llm.cache import JSONCache, cache_key
from musiceval.llm.cassettes import CassetteMissing, is_cassette_miss
from musiceval.llm.client import LLMCallFailed, RetryPolicy, call_with_retries, describe_error

PROMPT_VERSION = "extract_v1"
DEFAULT_MODEL = "gpt-4.1-mini"
PROMPT_FILE = Path(__file__).parent / "prompts" / f"{PROMPT_VERSION}.txt"
QUESTIONS = {
    "instrument": "Which instruments are used in this piece of music?",
    "genre": "What genre does this piece of music fall under?",
    "composer": "Which classical composer's style does this piece resemble the most?",
}


class CassetteMissError(CassetteMissing):
    """The extractor asked for a call that the active cassette does not hold."""


@dataclass(frozen=True)
class LLMExtraction:
    """Labels for one answer, or ``failure`` (the reason) when it could not be extracted."""

    labels: tuple[str, ...] = ()
    oov: tuple[str, ...] = ()
    failure: str | None = None
    cached: bool = False


def system_prompt(vocab: Vocabulary, question: str | None = None) -> str:
    """The versioned extraction prompt filled in for one vocabulary and question."""
    kind = f"{vocab.kind} " if vocab.kind in QUESTIONS else ""
    return PROMPT_FILE.read_text("utf-8").format(kind=kind, question=question or QUESTIONS.get(vocab.kind, "the question"),
                                                 vocabulary=", ".join(vocab.labels))


def response_format(vocab: Vocabulary) -> dict[str, Any]:
    """The JSON schema of the reply: an object with a ``labels`` array of vocabulary labels."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "extracted_labels",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {"labels": {"type": "array", "items": {"type": "string", "enum": list(vocab.labels)}}},
                "required": ["labels"],
                "additionalProperties": False,
            },
        },
    }


def parse_reply(content: str | None, vocab: Vocabulary) -> LLMExtraction:
    """Validate a reply's text against the schema and the vocabulary."""
    if content is None or not content.strip():
        return LLMExtraction(failure="empty reply from the extractor")
    try:
        data = json.loads(content)
    except json.JSONDecodeError as exc:
        return LLMExtraction(failure=f"extractor reply is not JSON ({exc.msg} at char {exc.pos}): {content[:80]!r}")
    if not isinstance(data, dict) or not isinstance(data.get("labels"), list):
        return LLMExtraction(failure=f"extractor reply lacks a 'labels' list: {content[:80]!r}")
    labels: list[str] = []
    oov: list[str] = []
    for term in data["labels"]:
        if not isinstance(term, str):
            oov.append(repr(term))
            continue
        canon = vocab.canonical(term)
        if canon is None:
            oov.append(term)
        else:
            labels.append(canon)
    return LLMExtraction(labels=tuple(dict.fromkeys(labels)), oov=tuple(oov))


@dataclass
class LLMExtractor:
    """Extract vocabulary labels from answers with an OpenAI-compatible chat model.

    ``client`` is an ``openai.OpenAI`` (see :func:`musiceval.llm.client.make_client`);
    ``n_calls`` counts the HTTP calls actually made (cache hits make none).
    """

    client: Any
    vocab: Vocabulary
    model: str = DEFAULT_MODEL
    question: str | None = None
    cache: JSONCache | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    n_calls: int = 0

    def _key(self, answer: str) -> str:
        return cache_key(model=self.model, prompt_version=PROMPT_VERSION, vocabulary_hash=self.vocab.hash, answer=answer)

    def _call(self, answer: str) -> str | None:
        def once():
            self.n_calls += 1
            return self.client.chat.completions.create(
                model=self.model,
                temperature=0,
                stream=False,
                messages=[{"role": "system", "content": system_prompt(self.vocab, self.question)},
                          {"role": "user", "content": answer}],
                response_format=response_format(self.vocab),
            )

        completion = call_with_retries(once, self.retry)
        if not completion.choices:
            return None
        message = completion.choices[0].message
        if getattr(message, "refusal", None):
            raise LLMCallFailed(f"extractor refused: {message.refusal[:80]!r}")
        return message.content

    def extract(self, answer: str) -> LLMExtraction:
        if not isinstance(answer, str):
            return LLMExtraction(failure=f"answer is not text ({type(answer).__name__})")
        key = self._key(answer)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return LLMExtraction(labels=tuple(hit["labels"]), oov=tuple(hit["oov"]), cached=True)
        try:
            content = self._call(answer)
        except LLMCallFailed as exc:
            return LLMExtraction(failure=str(exc))
        except Exception as exc:
            if is_cassette_miss(exc):
                raise CassetteMissError(
                    "the LLM extractor made a request that the cassette does not hold (answers, model or prompt "
                    "changed); re-record the cassette: in a test with MUSICEVAL_RECORD=1 OPENAI_API_KEY=... pytest <test>, "
                    "from `musiceval score factual` by running it without --llm-replay, with OPENAI_API_KEY set"
                ) from exc
            import openai

            if isinstance(exc, openai.APIError):
                return LLMExtraction(failure=f"extractor call failed: {describe_error(exc)}")
            raise
        result = parse_reply(content, self.vocab)
        if self.cache is not None and result.failure is None:
            self.cache.put(key, {"labels": list(result.labels), "oov": list(result.oov)})
        return result

    def extract_many(self, answers: Sequence[str]) -> list[LLMExtraction]:
        """Extract every answer; each distinct answer is sent once."""
        done: dict[str, LLMExtraction] = {}
        out = []
        for answer in answers:
            if answer not in done:
                done[answer] = self.extract(answer)
            out.append(done[answer])
        return out
