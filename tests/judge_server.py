"""Scripted judges behind the fake OpenAI-compatible server (:mod:`musiceval.llm.fake_server`), for
the judged path's tests: each reads the prompt the judge protocol sends and replies as a judge of
one kind would."""
from __future__ import annotations

import re
from typing import Any, Callable

_WORD = re.compile(r"[a-z]+")
_STOP = {"the", "a", "an", "and", "of", "with", "is", "in", "it", "this", "to", "by", "that", "on", "for", "as", "are",
         "audio", "music", "song", "piece", "track", "has", "its", "be", "at", "there", "which", "from"}


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


def _field(prompt: str, name: str) -> str:
    found = re.search(rf"^{re.escape(name)}: (.*?)(?:\n\n|\Z)", prompt, re.MULTILINE | re.DOTALL)
    return found.group(1) if found else ""


def overlap(a: str, b: str) -> float:
    wa, wb = _words(a), _words(b)
    return len(wa & wb) / max(1, min(len(wa), len(wb)))


def _prompt(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else next(p["text"] for p in content if p.get("type") == "text")


def _block(prompt: str, name: str) -> str:
    """The text between ``[<name>]`` and the next ``[`` heading of a rubric prompt."""
    found = re.search(rf"^\[{re.escape(name)}\]\n(.*?)(?=^\[|\Z)", prompt, re.MULTILINE | re.DOTALL)
    return found.group(1).strip() if found else ""


def _rubric_scores(prompt: str) -> tuple[int, int]:
    """Each assistant's 1-10: 2 plus 8 times its content-word overlap with the audio description
    and the other assistant's answer together (the reference scores itself against the description)."""
    description = _block(prompt, "Audio description")
    first, second = _block(prompt, "Assistant 1's answer"), _block(prompt, "Assistant 2's answer")

    def score(text: str, other: str) -> int:
        return 2 + round(8 * min(1.0, overlap(text, other + " " + description)))

    return score(first, second), score(second, first)


def is_rubric(prompt: str) -> bool:
    return "[Assistant 1's answer]" in prompt


def is_mmau_pro(prompt: str) -> bool:
    return "Model Response:" in prompt


def _mmau_pro_reply(prompt: str) -> str:
    """MMAU-Pro's five lines: correctness and completeness 1 plus 4 times the answer's content-word
    overlap with the reference, relevance and clarity 4, OVERALL their mean."""
    s = 1 + round(4 * min(1.0, overlap(_field(prompt, "Model Response"), _field(prompt, "Reference Answer"))))
    return (f"CORRECTNESS: {s} - agrees with the reference this far.\nRELEVANCE: 4 - it answers the question.\n"
            f"COMPLETENESS: {s} - covers this much of the reference.\nCLARITY: 4 - clear.\n"
            f"OVERALL: {(2 * s + 8) / 4:g} - as above.")


def fair(body: dict[str, Any]) -> str:
    """CORRECT when the answer shares enough content words with the reference; pairwise, the answer
    closer to the question's words... here: the one sharing more words with the other (a tie when
    equal), so both seats agree."""
    prompt = _prompt(body)
    if is_rubric(prompt):  # the same scores whichever seat each answer takes
        first, second = _rubric_scores(prompt)
        return f"{first} {second}"
    if is_mmau_pro(prompt):
        return _mmau_pro_reply(prompt)
    if "Answer to grade:" in prompt:
        ok = overlap(_field(prompt, "Answer to grade"), _field(prompt, "Reference answer")) >= 0.5
        return "VERDICT: CORRECT" if ok else "VERDICT: INCORRECT"
    first, second = _words(_field(prompt, "Answer 1")), _words(_field(prompt, "Answer 2"))
    if first == second:
        return "PREFERENCE: TIE"
    return "PREFERENCE: 1" if len(first) > len(second) else "PREFERENCE: 2" if len(second) > len(first) else "PREFERENCE: TIE"


def first_seat(body: dict[str, Any]) -> str:
    """Always prefers the answer shown first (rubric: 9 for assistant 1, 3 for assistant 2;
    pointwise: as :func:`fair`)."""
    prompt = _prompt(body)
    if is_rubric(prompt):
        return "9 3"
    return "PREFERENCE: 1" if "Answer 1:" in prompt else fair(body)


def yes_man(body: dict[str, Any]) -> str:
    """Calls every answer correct without reading it."""
    return "VERDICT: CORRECT" if "Answer to grade:" in _prompt(body) else "PREFERENCE: TIE"


def mumbling(every: int) -> Callable[[dict[str, Any]], str]:
    """:func:`fair`, except every ``every``-th distinct prompt gets a reply with no verdict."""
    seen: dict[str, int] = {}

    def reply(body: dict[str, Any]) -> str:
        prompt = _prompt(body)
        k = seen.setdefault(prompt, len(seen))
        return "I would rather not say." if k % every == every - 1 else fair(body)

    return reply


def option_reader(body: dict[str, Any]) -> str:
    """Pointwise on a multiple-choice item (reference ``(X) option``): CORRECT when the answer's
    letter is X or it names the option's text; any other prompt as :func:`fair`."""
    prompt = _prompt(body)
    ref = re.match(r"\(([A-D])\) (.*)", _field(prompt, "Reference answer"))
    if "Answer to grade:" not in prompt or not ref:
        return fair(body)
    answer = _field(prompt, "Answer to grade")
    letters = set(re.findall(r"\b([A-D])\b", answer))
    ok = letters == {ref.group(1)} or (not letters and ref.group(2).lower() in answer.lower())
    return "VERDICT: CORRECT" if ok else "VERDICT: INCORRECT"
