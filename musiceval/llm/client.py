"""The suite's shared OpenAI-compatible client factory and its retry policy.

Configuration comes from arguments or the environment: ``OPENAI_API_KEY`` and
``OPENAI_BASE_URL`` (any OpenAI-compatible endpoint: OpenAI, vLLM, a local server). The key is
never logged or put in a repr or an error message.

Retries are done here, not inside the openai package (its ``max_retries`` is 0), so that the
policy is explicit and testable: a 429, a 5xx or a timeout is retried at most
``RetryPolicy.max_retries`` times with exponential backoff (``base_delay * 2**k``, capped at
``max_delay``); after that the call raises :class:`LLMCallFailed`, which callers turn into a
per-item failure. Other errors (a 400, a connection error, a cassette miss) are not retried.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 60.0


class LLMCallFailed(Exception):
    """A call that still failed after the bounded retries; the message is the per-item reason."""


class MissingAPIKey(RuntimeError):
    """No API key for a live call."""


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff on 429 / 5xx / timeouts."""

    max_retries: int = 3
    base_delay: float = 1.0
    max_delay: float = 30.0

    def __post_init__(self) -> None:
        if not 0 <= self.max_retries <= 10 or self.base_delay < 0 or self.max_delay < 0:
            raise ValueError(f"RetryPolicy needs 0 <= max_retries <= 10 and non-negative delays, got {self}")

    def delay(self, attempt: int) -> float:
        return min(self.max_delay, self.base_delay * (2**attempt))


def make_client(api_key: str | None = None, base_url: str | None = None, *, timeout: float = DEFAULT_TIMEOUT_S,
                max_retries: int = 0, require_key: bool = True):
    """An ``openai.OpenAI`` client for the suite's calls.

    Parameters
    ----------
    api_key, base_url : str, optional
        Default to ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``.
    timeout : float
        Per-request timeout in seconds.
    max_retries : int
        The openai package's own retries; keep 0 (retries are :func:`call_with_retries`' job, and
        a cassette miss must fail at once).
    require_key : bool
        When False (replaying cassettes) a placeholder key is used if none is set; the recorded
        requests carry no key because cassettes filter the authorization headers.
    """
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("the LLM extractor needs the openai package: pip install 'musiceval[llm]'") from exc
    if not 0 <= max_retries <= 10:
        raise ValueError(f"max_retries must be between 0 and 10, got {max_retries}")
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        if require_key:
            raise MissingAPIKey(
                "OPENAI_API_KEY is not set: set it (and OPENAI_BASE_URL for a non-OpenAI endpoint) to make live "
                "LLM calls, or replay recorded cassettes (see musiceval.llm.cassettes)"
            )
        key = "replay-without-key"
    return openai.OpenAI(api_key=key, base_url=base_url or os.environ.get("OPENAI_BASE_URL") or None,
                         timeout=timeout, max_retries=max_retries)


def _retryable(exc: BaseException) -> bool:
    import openai

    return isinstance(exc, (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError)) or (
        isinstance(exc, openai.APIStatusError) and exc.status_code >= 500
    )


def describe_error(exc: BaseException) -> str:
    """A short reason for a failed call (status code and type; never headers or keys)."""
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "")


def call_with_retries(fn: Callable[[], T], policy: RetryPolicy = RetryPolicy(), *, sleep: Callable[[float], None] = time.sleep) -> T:
    """Run ``fn`` with the bounded retry policy; raise :class:`LLMCallFailed` when retries run out."""
    for attempt in range(policy.max_retries + 1):
        try:
            return fn()
        except Exception as exc:
            if not _retryable(exc):
                raise
            if attempt == policy.max_retries:
                raise LLMCallFailed(f"{describe_error(exc)} after {attempt + 1} attempt(s)") from exc
            sleep(policy.delay(attempt))
    raise AssertionError("unreachable")  # pragma: no cover
