"""Parsers that turn a music LM's free-text response into the answer format of a MIR task.

One module per response family:

- :mod:`musiceval.parsers.labels`: text normalisation and single-label matching (classification).
- :mod:`musiceval.parsers.key`: musical keys ("F# minor", "Am", "in the key of C major").
- :mod:`musiceval.parsers.times`: beat / downbeat time lists ("0.54s, 1.0s", "1:05", prose).
- :mod:`musiceval.parsers.numbers`: ratings on a 1-9 scale (emotion regression) and MIDI pitches.
- :mod:`musiceval.parsers.lyrics`: lyrics cleaning for WER / CER.
- :mod:`musiceval.parsers.melody`: ``[(time, note), ...]`` melody tuples.
- :mod:`musiceval.parsers.guzheng`: ``[(start, end, technique), ...]`` events and frame matrices.

Conventions
-----------
Every module offers the corrected parser (the default) and, where the CMI-Bench toolkit's rule
differs, a ``*_cmi`` function reproducing the toolkit (``compat="cmi-bench"``). No parser ever
``eval()`` s model text: structured answers go through :func:`ast.literal_eval` or a regex.
A default parser that cannot read a response raises :class:`ParseError` with the reason; the
scorer records it as a per-item failure.
"""
from __future__ import annotations


class ParseError(ValueError):
    """A response that does not contain an answer in the task's format (a per-item failure)."""


__all__ = ["ParseError"]
