"""vcrpy cassettes for the suite's LLM calls: record once, replay byte for byte, never leak a key.

Policy (one cassette per test):

- tests: record mode ``none`` unless ``MUSICEVAL_RECORD=1`` (then ``once``: record a cassette that does
  not exist yet). CI (``CI=true``) never records: ``MUSICEVAL_RECORD`` is refused there.
- In ``none`` mode a missing cassette raises :class:`CassetteMissing` before any request, naming
  the file and the command that records it; a request absent from an existing cassette raises
  vcrpy's ``CannotOverwriteExistingCassetteException``: no network call is ever made.
- Requests match on method, path and body (not host or port), so a cassette recorded against
  any OpenAI-compatible endpoint replays against any base URL.
- ``authorization``, ``api-key``, ``openai-organization``, ``openai-project``, ``cookie`` and every
  ``x-stainless-*`` header are removed from recorded requests, and cookies and organisation
  headers from responses; compressed bodies are stored decoded. Secret-looking query parameters
  (``key``, ``token``, ``api_key``, ``sig`` ...) and URL userinfo are replaced by ``***`` in the
  recorded ``uri`` (vcrpy ``filter_query_parameters`` plus :func:`musiceval.redact.redact`), and
  in recorded response bodies (servers that echo the request URL in an error).
- commands (:func:`command_mode`): replay plus recording of new requests, or replay only with
  ``--replay`` and always on CI.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from musiceval.redact import SECRET_QUERY_NAMES, redact

FILTERED_REQUEST_HEADERS = ("authorization", "api-key", "openai-organization", "openai-project", "cookie")
FILTERED_RESPONSE_HEADERS = ("set-cookie", "openai-organization", "openai-project")
#: query parameters replaced by ``***`` in recorded URIs (an API key in OPENAI_BASE_URL's query)
FILTERED_QUERY_PARAMETERS = tuple(n for n in SECRET_QUERY_NAMES) + ("api-version-key", "subscription-key")
MATCH_ON = ("method", "path", "body")


class CassetteMissing(FileNotFoundError):
    """A cassette that replay needs does not exist."""


def record_mode(explicit: str | None = None) -> str:
    """``none`` by default and always in CI; ``once`` when ``MUSICEVAL_RECORD=1`` outside CI."""
    if explicit is not None:
        if explicit not in ("none", "once", "new_episodes", "all"):
            raise ValueError(f"unknown vcrpy record mode {explicit!r}")
        return explicit
    recording = os.environ.get("MUSICEVAL_RECORD", "") not in ("", "0")
    if recording and os.environ.get("CI", "").lower() in ("true", "1"):
        raise RuntimeError("MUSICEVAL_RECORD is set on CI: CI replays cassettes and must never record; unset it")
    return "once" if recording else "none"


def command_mode(replay: bool) -> str:
    """Record mode of the ``musiceval`` commands that call an LLM (``rewrite``, ``score factual
    --extractor llm``): ``none`` (replay only) with ``--replay`` or on CI, else ``new_episodes``
    (replay what the cassette holds, record new requests: the user asked for live calls)."""
    on_ci = os.environ.get("CI", "").lower() in ("true", "1")
    return "none" if replay or on_ci else "new_episodes"


def _strip_request(request):
    request.uri = redact(request.uri)  # userinfo and any secret-looking query value, whatever its name
    for name in list(request.headers):
        if name.lower().startswith("x-stainless") or name.lower() in FILTERED_REQUEST_HEADERS:
            del request.headers[name]
    return request


def _strip_response(response):
    headers = response.get("headers", {})
    for name in list(headers):
        if name.lower() in FILTERED_RESPONSE_HEADERS:
            del headers[name]
    body = response.get("body") or {}
    raw = body.get("string")
    if isinstance(raw, bytes):  # a server that echoes the request URL (an error page) echoes its key
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return response
        if redact(text) != text:
            body["string"] = redact(text).encode("utf-8")
    elif isinstance(raw, str):
        body["string"] = redact(raw)
    return response


def _raw_body(r1, r2) -> None:
    """vcrpy matcher: the request bodies byte for byte. vcrpy's own ``body`` matcher decodes a JSON
    body again for every recorded interaction it compares with, which dominates replay when one
    cassette holds thousands of calls."""
    assert r1.body == r2.body


def make_vcr(mode: str, match_on: tuple[str, ...] = MATCH_ON):
    import vcr

    recorder = vcr.VCR(
        record_mode=mode,
        match_on=match_on,
        filter_headers=FILTERED_REQUEST_HEADERS,
        filter_query_parameters=[(name, "***") for name in FILTERED_QUERY_PARAMETERS],
        before_record_request=_strip_request,
        before_record_response=_strip_response,
        decode_compressed_response=True,
    )
    recorder.register_matcher("raw_body", _raw_body)
    return recorder


def record_command(cassette: Path, test_id: str | None = None) -> str:
    target = test_id or "<the test that uses it>"
    return f"MUSICEVAL_RECORD=1 OPENAI_API_KEY=... pytest {target}  (writes {cassette})"


COMMAND_RECORDING = "run the command again without the replay flag, outside CI, with OPENAI_API_KEY set"


@contextmanager
def use_cassette(path: str | Path, *, mode: str | None = None, test_id: str | None = None,
                 how_to_record: str | None = None, match_on: tuple[str, ...] = MATCH_ON) -> Iterator[object]:
    """Context manager: all HTTP inside goes through the cassette ``path`` under the policy above.

    ``how_to_record`` replaces the pytest recording command in the missing-cassette error (the
    commands pass :data:`COMMAND_RECORDING`); ``match_on`` names vcrpy's matchers (``raw_body``:
    the body byte for byte, for cassettes of many calls)."""
    path = Path(path)
    mode = record_mode(mode)
    if mode == "none" and not path.is_file():
        raise CassetteMissing(f"LLM cassette {path} is missing and recording is off; record it: "
                              f"{how_to_record or record_command(path, test_id)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    with make_vcr(mode, match_on).use_cassette(str(path)) as cassette:
        yield cassette


def is_cassette_miss(exc: BaseException) -> bool:
    """True when ``exc`` (or an exception it wraps) is vcrpy refusing an unrecorded request."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if type(exc).__name__ == "CannotOverwriteExistingCassetteException":
            return True
        exc = exc.__cause__ or exc.__context__
    return False
