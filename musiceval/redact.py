"""One redaction function for every model spec, URL or message the suite writes.

:func:`redact` removes credentials a user may have put in a model spec or an endpoint URL:

- URL userinfo: ``https://user:SECRET@host`` -> ``https://user:***@host`` and
  ``https://SECRET@host`` -> ``https://***@host`` (a lone userinfo is usually a token);
- secret-looking query parameters (``token``, ``key``, ``api_key``, ``apikey``, ``api-key``,
  ``secret``, ``password``, ``passwd``, ``sig``, ``signature``, ``access_token``, ``auth``,
  ``client_secret`` ... or any name ending in ``_``/``-``/``.`` + one of these) -> ``name=***``;
- bearer tokens (``Bearer abc...``) and API-key-looking words (``sk-...``, ``hf_...``, ``ghp_...``
  followed by 16+ key characters) -> ``***``.

:func:`redact_meta` applies it deeply to the strings of dicts/lists/tuples (and their keys' values
only, never the keys), :func:`relative_path` writes a path relative to a root (or ``~``-relative,
never an absolute home path) for run metadata.

The function is idempotent (``redact(redact(s)) == redact(s)``) and leaves text without
credentials unchanged.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

__all__ = ["MASK", "redact", "redact_meta", "redacted_repr", "relative_path", "SECRET_QUERY_NAMES"]

MASK = "***"
SECRET_QUERY_NAMES = ("token", "key", "api_key", "apikey", "api-key", "secret", "password", "passwd", "pwd",
                      "sig", "signature", "access_token", "auth", "client_secret", "credential", "credentials",
                      "session", "x-amz-signature", "x-amz-credential", "x-amz-security-token", "code")

# scheme://[user[:password]@]host -- userinfo may hold anything but '/', '?', '#', whitespace and '@' ends it
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<info>[^/?#\s@]+)@")
_QUERY = re.compile(
    r"(?P<sep>[?&;])(?P<name>(?:[A-Za-z0-9_.\-]*[_.\-])?(?:" + "|".join(re.escape(n) for n in sorted(SECRET_QUERY_NAMES, key=len, reverse=True))
    + r"))=(?P<value>[^&#\s\"'<>]*)",
    re.IGNORECASE,
)
_BEARER = re.compile(r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=\-]{8,}")
_KEYLIKE = re.compile(r"\b(?:sk-|rk-|hf_|ghp_|gho_|ghs_|github_pat_|xox[abp]-)[A-Za-z0-9_\-]{16,}")
#: what every pattern above needs somewhere in the text (``://``, ``=``, ``bearer``, a key prefix):
#: text without any of it is returned as it is after one search instead of four substitutions
#: (a run writes tens of thousands of per-sample rows, each redacted)
_MAYBE_SECRET = re.compile(r"://|=|(?i:bearer)|sk-|rk-|hf_|gh[pos]_|github_pat_|xox[abp]-")


def _userinfo(m: re.Match[str]) -> str:
    info = m.group("info")
    if info == MASK or info.endswith(":" + MASK):
        return m.group(0)
    user, colon, _ = info.partition(":")
    return f"{m.group('scheme')}{user}:{MASK}@" if colon else f"{m.group('scheme')}{MASK}@"


def redact(text: str) -> str:
    """``text`` (a model spec, URL, error message or log line) with credentials replaced by ``***``.

    Parameters
    ----------
    text : str
        Anything that may hold a URL. Non-strings are returned unchanged.

    Returns
    -------
    str
        The same text with URL userinfo passwords, secret-looking query values, bearer tokens and
        API-key-looking words masked; everything else byte for byte.
    """
    if not isinstance(text, str) or not _MAYBE_SECRET.search(text):
        return text
    return _substitute(text)


def _substitute(text: str) -> str:
    """The four substitutions of :func:`redact`, on any text (no quick return)."""
    out = _USERINFO.sub(_userinfo, text)
    out = _QUERY.sub(lambda m: f"{m.group('sep')}{m.group('name')}={MASK}" if m.group("value") else m.group(0), out)
    out = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", out)
    return _KEYLIKE.sub(MASK, out)


def redact_meta(obj: Any) -> Any:
    """Deep copy of ``obj`` with :func:`redact` applied to every string value (dict keys kept)."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {k: redact_meta(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact_meta(v) for v in obj) if isinstance(obj, list) else tuple(redact_meta(v) for v in obj)
    return obj


def redacted_repr(obj: Any) -> str:
    """``Class(field=value, ...)`` of a dataclass instance with every credential masked: the
    ``__repr__`` of objects that hold a model spec (pytest prints a failing test's fixture values)."""
    import dataclasses

    fields = ", ".join(f"{f.name}={getattr(obj, f.name)!r}" for f in dataclasses.fields(obj) if f.repr)
    return redact(f"{type(obj).__name__}({fields})")


def relative_path(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> str:
    """``path`` for run metadata: relative to ``root`` (default: the working directory) when
    inside it, else ``~/...`` when under the home directory, else as given (e.g. ``/data/x``).

    Never returns an absolute path under the user's home directory.
    """
    p = Path(os.path.abspath(os.fspath(path)))
    base = Path(os.path.abspath(os.fspath(root) if root is not None else os.getcwd()))
    try:
        return p.relative_to(base).as_posix() or "."
    except ValueError:
        pass
    home = Path(os.path.abspath(os.path.expanduser("~")))
    if home != Path(home.anchor):
        try:
            return "~/" + p.relative_to(home).as_posix()
        except ValueError:
            pass
    return p.as_posix()
