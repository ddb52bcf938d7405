"""Items left out by a rule: counted under the rule's name, never as per-item failures.

Every input line ends up in exactly one of three places (docs/gate-your-model.md, "What the verdict means":
every input line is accounted for): scored; a per-item failure (the record or the answer
could not be read, :class:`~musiceval.records.ItemFailure`); or left out by a named rule of the
protocol, an :class:`Exclusion`. A rule leaves an item out of every condition (a reference that is
only a copy of the question has nothing to score against) or of some conditions only (an item
with no same-prompt partner has no Random answer, so it is out of Correct-vs-Random and nothing
else). A gate pairing two conditions does not count an item a rule left out of one of them as a
failure of the comparison.

:data:`RULES` names every rule and says why it leaves items out; a protocol from outside adds
its own with :func:`register_rule`. :func:`summarize` gives the ``excluded`` entry of a protocol's
``evaluate()``: ``{rule: {"n": k, "ids": [first 20], "why": ...}}``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

#: rule name -> why it leaves items out (what the report says)
RULES: dict[str, str] = {
    "reference_copies_question": "the reference is only a copy of the question: nothing to score an answer against",
    "no_random_partner": "no Random answer to compare the Correct one with: out of Correct vs Random only",
    "not_compared": "keep_compared_only: no gate compares the item (no same-prompt Random partner and no rewrite)",
    "beyond_max_items": "only the first N records of the file are scored ([mir] tagging_items / captioning_items)",
}
#: the two ways an item has no Random answer (details of ``no_random_partner``)
NO_SAME_PROMPT_PARTNER = ("Random derived from same-prompt answers: no other item shares its prompt, or one recording "
                          "holds more than half of those that do")
NO_RANDOM_ROW = "the file records no random answer for it"
#: how many ids ``evaluate()`` lists per rule (the count is always complete)
LISTED_IDS = 20


def register_rule(name: str, why: str) -> None:
    """Add a rule a protocol from outside leaves items out by (a name already taken is refused)."""
    if name in RULES and RULES[name] != why:
        raise ValueError(f"exclusion rule {name!r} is already registered: {RULES[name]!r}")
    RULES[name] = why


@dataclass(frozen=True)
class Exclusion:
    """The items ``rule`` leaves out, of ``conditions`` (empty: of every condition)."""

    rule: str
    ids: tuple[str, ...]
    conditions: tuple[str, ...] = ()
    #: what this source adds to the rule's reason (``first 80 of 120 records``)
    detail: str = ""

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"unknown exclusion rule {self.rule!r}; known: {', '.join(RULES)} (register_rule adds one)")

    @property
    def why(self) -> str:
        return f"{RULES[self.rule]} ({self.detail})" if self.detail else RULES[self.rule]

    def applies_to(self, condition: str) -> bool:
        return not self.conditions or condition in self.conditions


def exclude(rule: str, ids: Iterable[Any], *, conditions: tuple[str, ...] = (), detail: str = "") -> list[Exclusion]:
    """``[Exclusion]`` of the distinct ``ids`` in order, or ``[]`` when there are none (so callers extend a list)."""
    kept = tuple(dict.fromkeys(str(i) for i in ids))
    return [Exclusion(rule, kept, conditions, detail)] if kept else []


def summarize(exclusions: Iterable[Exclusion]) -> dict[str, dict[str, Any]]:
    """``{rule: {"n", "ids" (the first LISTED_IDS), "why", "conditions" ([]: every condition)}}``,
    one entry per rule (ids merged in order)."""
    merged: dict[str, tuple[dict[str, None], Exclusion]] = {}
    for e in exclusions:
        ids, _ = merged.setdefault(e.rule, ({}, e))
        ids.update(dict.fromkeys(e.ids))
    return {rule: {"n": len(ids), "ids": list(ids)[:LISTED_IDS], "why": first.why, "conditions": list(first.conditions)}
            for rule, (ids, first) in merged.items()}


def left_out_of_every_condition(summary: dict[str, dict[str, Any]]) -> int:
    """Items a :func:`summarize`-d set of rules kept out of every condition: with the scored items and
    the failures, they account for every input record."""
    return sum(entry["n"] for entry in summary.values() if not entry["conditions"])
