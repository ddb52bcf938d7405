"""The verdict's reasons as the first screen of a report shows them: every one whole, one line per cause.

:func:`musiceval.verdict.decide` writes one reason per thing that went wrong, in a few forms:

- an errored test: ``<node id> raised: <message>`` (also ``timed out:``, ``errored in setup:``,
  ``errored in teardown:``, ``baseline refused:``; :mod:`musiceval.pytest_plugin.outcomes`);
- a collection error: ``collecting <node id> failed: <message>``;
- a gate: ``FAIL: <gate>``, ``undecided: <gate> ...``, ``required check without a PASS: <pattern>``,
  ``not significant after Holm correction (--strict): <gate>``, ``a self-check of the suite failed: <gate>``.

Ten tests that error for one missing corpus are one cause: :func:`group` folds the reasons of one
form that share their cause into one line, ``10 tests: raised: <message>``, and lists the tests
apart; identical reasons of any other form become ``3 times: <reason>``. A reason alone is kept
as written. Nothing is cut: a long reason is shown whole and wraps.
"""
from __future__ import annotations

import re
from typing import NamedTuple

_TEST = re.compile(r"(?P<who>\S.*?::.*?) (?P<cause>(?:raised|timed out|errored in \w+|baseline refused): .*)", re.S)
_COLLECTION = re.compile(r"collecting (?P<who>.+?) (?P<cause>failed: .*)", re.S)
_GATE = re.compile(r"(?P<cause>FAIL|undecided|not significant after Holm correction \(--strict\)"
                   r"|a self-check of the suite failed|required check without a PASS): (?P<who>.+)", re.S)
_FORMS = ((_TEST, "tests"), (_COLLECTION, "collections"), (_GATE, "gates"))


class Reason(NamedTuple):
    """One line of the first screen: the reason (or ``N <noun>: <cause>``) and what shares it."""

    text: str
    subjects: tuple[str, ...] = ()


def _form(reason: str) -> tuple[tuple[str, str], str]:
    """``((noun, cause), subject)`` of a reason; a reason of no known form is its own cause."""
    for pattern, noun in _FORMS:
        m = pattern.fullmatch(reason)
        if m:
            return (noun, m["cause"]), m["who"]
    return ("times", reason), ""


def group(reasons: list[str]) -> list[Reason]:
    """The reasons, those of one form and cause folded into one line, in the order each cause first appears."""
    causes: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for reason in reasons:
        key, subject = _form(reason)
        causes.setdefault(key, []).append((reason, subject))
    out = []
    for (noun, cause), members in causes.items():
        if len(members) == 1:
            out.append(Reason(members[0][0]))
        else:
            out.append(Reason(f"{len(members)} {noun}: {cause}", tuple(s for _, s in members if s)))
    return out
