"""The one error of a results directory's readers (re-exported by :mod:`musiceval.results.files` and
:mod:`musiceval.results`)."""
from __future__ import annotations


class ResultsError(ValueError):
    """A results file that is not what a musiceval run writes; the message names the file, the
    line or gate, and the field."""
