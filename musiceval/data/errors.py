"""Errors of the data layer that callers above it catch by type."""
from __future__ import annotations


class InputError(Exception):
    """A file-level input error: the message names the file, line and field and the fix
    (``musiceval score`` exits with code 2 and prints it as one line)."""
