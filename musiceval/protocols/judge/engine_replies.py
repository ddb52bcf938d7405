"""How the LLM judge's replies are read (docs/judge.md): one parser per judging mode, each
accepting only the reply its prompt template asks for; anything else is unreadable (None), which
the judge keeps and counts (:mod:`.engine`), never a 0.

- :func:`parse_pointwise`: ``VERDICT: CORRECT`` / ``INCORRECT`` (1.0 / 0.0);
- :func:`parse_pairwise`: ``PREFERENCE: 1`` / ``2`` / ``TIE``;
- :func:`parse_rubric`: two integers 1-10 (AIR-Bench's rule);
- :func:`parse_mmau_pro`: MMAU-Pro's evaluator's OVERALL, else the mean of its four criteria (1-5).

:data:`PARSER_VERSION` is recorded in a judged run's provenance.
"""
from __future__ import annotations

import re

#: the version of the reply parsers; bump it when what a reply is read as changes
PARSER_VERSION = "judge_parser_v1"
_VERDICT = re.compile(r"\bVERDICT\s*:\s*(CORRECT|INCORRECT)\b", re.IGNORECASE)
_PREFERENCE = re.compile(r"\bPREFERENCE\s*:\s*(1|2|TIE)\b", re.IGNORECASE)
#: a rubric reply: two integer scores, the first assistant's then the second's, and nothing else
_RUBRIC = re.compile(r"(\d{1,2}) (\d{1,2})")
#: the rubric's scale (AIR-Bench, Yang et al., ACL 2024, section 3.4: each answer scored 1 to 10)
RUBRIC_MIN, RUBRIC_MAX = 1, 10
#: MMAU-Pro's open-ended judge (Kumar et al. 2025, arXiv:2508.13992; ``evaluate_mmau_pro_comprehensive.py``
#: in github.com/sonalkum/MMAUPro): its score patterns, read case-insensitively, and its 1-5 scale
_MMAU_PRO_CRITERIA = {"correctness": r"CORRECTNESS:\s*(\d+)", "relevance": r"RELEVANCE:\s*(\d+)",
                      "completeness": r"COMPLETENESS:\s*(\d+)", "clarity": r"CLARITY:\s*(\d+)"}
_MMAU_PRO_OVERALL = r"OVERALL:\s*(\d+(?:\.\d+)?)"
MMAU_PRO_MIN, MMAU_PRO_MAX = 1, 5


def parse_mmau_pro(reply: str | None) -> float | None:
    """The answer's 1-5 score as MMAU-Pro's evaluator reads it (``extract_scores_from_evaluation``):
    the first ``OVERALL: <number>``, unless it is absent or exactly 3, and then the mean of the first
    ``CORRECTNESS``, ``RELEVANCE``, ``COMPLETENESS`` and ``CLARITY`` integers. Where the evaluator puts
    in a neutral 3 for a number the reply lacks, the reply is unreadable here (None), and so is one
    whose numbers it reads fall outside 1-5."""
    text = reply or ""
    found = {name: re.search(pattern, text, re.IGNORECASE) for name, pattern in _MMAU_PRO_CRITERIA.items()}
    overall = re.search(_MMAU_PRO_OVERALL, text, re.IGNORECASE)
    values = [float(m.group(1)) for m in (*found.values(), overall) if m is not None]
    if any(not MMAU_PRO_MIN <= v <= MMAU_PRO_MAX for v in values):
        return None
    if overall is not None and float(overall.group(1)) != 3.0:
        return float(overall.group(1))
    if any(m is None for m in found.values()):
        return None
    return sum(float(m.group(1)) for m in found.values()) / len(found)  # type: ignore[union-attr]


def parse_pointwise(reply: str | None) -> float | None:
    """1.0 for ``VERDICT: CORRECT``, 0.0 for ``VERDICT: INCORRECT``; None when the reply has no
    verdict, or two that disagree (a reply that hedges is not read as either)."""
    found = {m.upper() for m in _VERDICT.findall(reply or "")}
    if not found:
        bare = re.sub(r"[^A-Za-z]", "", reply or "").upper()
        found = {bare} if bare in ("CORRECT", "INCORRECT") else set()
    return None if len(found) != 1 else (1.0 if found == {"CORRECT"} else 0.0)


def parse_pairwise(reply: str | None) -> str | None:
    """``"1"``, ``"2"`` or ``"tie"`` from ``PREFERENCE: ...``; None when absent or contradictory."""
    found = {m.lower() for m in _PREFERENCE.findall(reply or "")}
    return found.pop() if len(found) == 1 else None


def parse_rubric(reply: str | None) -> tuple[int, int] | None:
    """``(first assistant's score, second's)`` from a reply that is one line of two integers 1-10
    separated by a space (surrounding blanks allowed); None for anything else: a missing score, a
    score out of range (0, 11), a third number, prose around them."""
    found = _RUBRIC.fullmatch((reply or "").strip())
    if found is None:
        return None
    first, second = int(found.group(1)), int(found.group(2))
    ok = all(RUBRIC_MIN <= v <= RUBRIC_MAX for v in (first, second))
    return (first, second) if ok else None
