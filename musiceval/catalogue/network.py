"""Which network failures are worth waiting for, and waiting for them out loud.

:func:`classify` sorts an exception from ``urllib``, ``httpx`` or ``huggingface_hub``:

- ``UNREACHABLE``: the server cannot be reached at all (connection refused, a name that does not
  resolve, no route, a proxy that refuses). Waiting does not help: :func:`with_retries` tries once
  more after half a second, then gives up, so an air-gapped machine hears why in about a second;
- ``TRANSIENT``: the server is there but slow or busy (a timeout, HTTP 429 or 5xx, a connection
  reset mid-transfer). :func:`with_retries` retries with a doubling wait and says so on stderr;
- ``None``: anything else (404, 401, a bad file): no retry, the caller names the fix.
"""
from __future__ import annotations

import errno
import socket
import time
import urllib.error
from typing import Callable, Iterator, TypeVar

T = TypeVar("T")

UNREACHABLE = "unreachable"
TRANSIENT = "transient"
#: HTTP statuses worth another try (rate limit, server errors)
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: how :func:`with_retries` waits (a module attribute, so that tests need not wait)
_sleep = time.sleep
_UNREACHABLE_ERRNOS = frozenset({errno.ECONNREFUSED, errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL})


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, the reason a ``URLError`` wraps, and its causes (each once)."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        reason = getattr(e, "reason", None) if isinstance(e, urllib.error.URLError) else None
        todo.extend(x for x in (reason, e.__cause__, e.__context__) if isinstance(x, BaseException))


def status_code(exc: BaseException) -> int | None:
    """The HTTP status of an HTTP error (``urllib``'s ``HTTPError``, ``huggingface_hub``'s ``HfHubHTTPError``)."""
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code
    code = getattr(getattr(exc, "response", None), "status_code", None)
    return code if isinstance(code, int) else None


def classify(exc: BaseException) -> str | None:
    """``UNREACHABLE``, ``TRANSIENT`` or None (see the module docstring)."""
    for e in _chain(exc):
        status = status_code(e)
        if status is not None:
            return TRANSIENT if status in RETRY_STATUSES else None
        names = {cls.__name__ for cls in type(e).__mro__}
        if isinstance(e, TimeoutError) or names & {"TimeoutException", "Timeout"}:  # httpx's ConnectTimeout included
            return TRANSIENT
        if (isinstance(e, (ConnectionRefusedError, socket.gaierror)) or names & {"ConnectError", "ProxyError"}
                or (isinstance(e, OSError) and e.errno in _UNREACHABLE_ERRNOS)):
            return UNREACHABLE
        if isinstance(e, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)) or \
                names & {"NetworkError", "RemoteProtocolError", "IncompleteRead"}:
            return TRANSIENT
    return None


def describe(exc: BaseException) -> str:
    """A short reason: ``HTTP 503 Service Unavailable``, ``[Errno 111] Connection refused``, ``ReadTimeout: ...``."""
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}".strip()
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    status = status_code(exc)
    if status is not None:
        return f"HTTP {status}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def with_retries(call: Callable[[], T], *, what: str, log: Callable[[str], None], attempts: int = 4,
                 first_wait: float = 1.0, quick_wait: float = 0.5, sleep: Callable[[float], None] | None = None) -> T:
    """``call()``, retried: once quickly when the server is unreachable, up to ``attempts`` times in all
    (waits ``first_wait``, doubling) on a transient failure. Each retry is one line to ``log`` naming
    ``what`` and the reason; the last failure (or any other) is raised."""
    sleep = sleep or _sleep
    attempt, wait, quick_used = 1, first_wait, False
    while True:
        try:
            return call()
        except Exception as exc:
            kind = classify(exc)
            if kind == UNREACHABLE and not quick_used and attempt < attempts:
                quick_used, attempt = True, attempt + 1
                log(f"{what}: {describe(exc)}; trying once more in {quick_wait:g} s")
                sleep(quick_wait)
                continue
            if kind == TRANSIENT and attempt < attempts:
                attempt += 1
                log(f"{what}: {describe(exc)}; retrying in {wait:g} s (attempt {attempt} of {attempts})")
                sleep(wait)
                wait *= 2
                continue
            raise
