"""Which version of the CMI-Bench toolkit (nicolaus625/CMI-bench, ``evaluate.py``) each ``compat``
mode of :mod:`musiceval.protocols.mir.metrics.tasks` follows.

- ``"cmi-bench"``: the toolkit as its default branch scores (docs/cmi-bench.md). Ratings are read as
  ``extract_int`` reads them at commits 2cafca5 and 39a9c9b (the *first* of several numbers); every
  other rule is ``evaluate.py`` at commit 35235cb. The default branch's head itself is not in the
  stored history these rules were read from, so that it scores this way is a measurement (its cells on
  the outputs of 9 models equal these rules: docs/cmi-bench.md), not a reading of its code.
- ``"cmi-bench@35235cb"``: ``evaluate.py`` at commit 35235cb as a whole, a development-branch commit
  (its README: "This branch extends the original ISMIR release"), whose ``extract_int`` reads the
  *last* of several numbers.
- ``"cmi-bench@2cafca5"``: ``evaluate.py`` at commit 2cafca5 as a whole (Guzheng from the first "["
  to the last "]" with ``end % 10``, tagging with BGE cosine, R^2 raising on a zero std).

docs/cmi-bench.md ("Toolkit version per compat rule") names the commit and function of every rule.
"""
from __future__ import annotations

#: development-branch commit: GTE/BERTScore tagging, first-tuple Guzheng, last-number ratings
CMI_BENCH_35235CB = "35235cb0394c492c39eb3ae6adbb504c7fd4b34c"
#: older ``evaluate.py``: BGE tagging, Guzheng first "[" to last "]", first-number ratings
CMI_BENCH_2CAFCA5 = "2cafca5d1b12ae5099e7deeb2d893f1a857c5f83"
#: another stored ``evaluate.py`` whose ``extract_int`` reads the first of several numbers, as 2cafca5's
CMI_BENCH_39A9C9B = "39a9c9bd84cc06c094fa7e3c3389d6347897399c"

CMI = "cmi-bench"
CMI_35235CB = "cmi-bench@35235cb"
CMI_2CAFCA5 = "cmi-bench@2cafca5"
#: every accepted ``compat`` value; None is the corrected default
COMPAT_MODES = (None, CMI, CMI_35235CB, CMI_2CAFCA5)
#: pinned compat mode -> the toolkit commit whose ``evaluate.py`` it follows as a whole
TOOLKIT_VERSIONS = {CMI_35235CB: CMI_BENCH_35235CB, CMI_2CAFCA5: CMI_BENCH_2CAFCA5}


def check_compat(compat: str | None) -> None:
    """Raise ``ValueError`` naming the valid modes when ``compat`` is not one of them."""
    if compat not in COMPAT_MODES:
        valid = ", ".join(m for m in COMPAT_MODES if m)
        raise ValueError(f"unknown compat mode {compat!r}: use one of {valid} (or none for the corrected rules)")


def is_old(compat: str | None) -> bool:
    """Whether ``compat`` follows ``evaluate.py`` at commit 2cafca5 (Guzheng, tagging, R^2 on a zero
    std, MedleyDB errors)."""
    return compat == CMI_2CAFCA5


def rating_reads_last(compat: str | None) -> bool:
    """Whether ``compat`` reads the *last* of several rating numbers (``extract_int`` at 35235cb)
    rather than the first (at 2cafca5 and 39a9c9b, and on the default branch as measured: docs/cmi-bench.md)."""
    return compat == CMI_35235CB
