"""Which version of the CMI-Bench toolkit each ``compat`` mode of :mod:`musiceval.metrics.mir` follows.

``"cmi-bench"`` reproduces ``evaluate.py`` of nicolaus625/CMI-bench at its head (commit
:data:`CMI_BENCH_HEAD`); ``"cmi-bench@2cafca5"`` keeps the rules that changed since, as
``evaluate.py`` had them at commit 2cafca5 (Guzheng read from the first "[" to the last "]" with
``end % 10``; tagging with BGE cosine; MedleyDB as at head). The rows of docs/cmi-bench.md name the
version each rule follows.
"""
from __future__ import annotations

#: nicolaus625/CMI-bench commit whose ``evaluate.py`` ``compat="cmi-bench"`` follows
CMI_BENCH_HEAD = "35235cb0394c492c39eb3ae6adbb504c7fd4b34c"
#: the older ``evaluate.py`` (BGE tagging, Guzheng first "[" to last "]", ``end % 10``)
CMI_BENCH_2CAFCA5 = "2cafca5d1b12ae5099e7deeb2d893f1a857c5f83"

CMI = "cmi-bench"
CMI_OLD = "cmi-bench@2cafca5"
#: compat mode -> toolkit commit it follows
TOOLKIT_VERSIONS = {CMI: CMI_BENCH_HEAD, CMI_OLD: CMI_BENCH_2CAFCA5}


def is_old(compat: str | None) -> bool:
    """Whether ``compat`` names the toolkit's older rules (commit 2cafca5)."""
    return compat == CMI_OLD
