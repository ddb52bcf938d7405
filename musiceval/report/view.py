"""What a person reads about one gate: the verdict, the scale of each number, safe names, no machine paths.

Scale of a gate's numbers (the report keeps the estimate on the scale the gate decided on and
says which one it is):

- ``bootstrap CI of the mean ...`` (``Gate.at_least``): the metric's mean; the bar is ``threshold``;
- ``paired ...`` and ``exact McNemar ...``: a paired difference (Correct - Random or the like);
  the bar is ``threshold`` (the margin);
- every other decided test (binomial, permutation null, fixed chance): the metric minus chance;
  the bar is 0 and chance (``baseline`` when given, else ``threshold``) is stated beside it;
- findings: the estimate as named, no bar.

A gate row's ``unit`` (when the run recorded one) replaces the inferred description.

How the bar reads (``op``): ``Gate.at_least`` and census gates (coverage, answered rate) pass AT
the bar (``lower end >= bar``; a census's interval is its exact value), so their bar reads
``≥ 1``, never ``> 1`` (a share cannot exceed 1); every other test passes strictly above it
(:func:`musiceval.stats.decide`), ``> 0``. Differences and "minus chance" estimates are oriented
by the gate (better minus worse), so only a mean of a lower-is-better metric reads ``≤``.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from musiceval.report.numbers import number

_DIFFERENCE = re.compile(r" - | − | minus |[<>](?!\s*[\d.])| beats | vs\.? | over ", re.IGNORECASE)


def is_finding(g: dict[str, Any]) -> bool:
    """A finding never fails a run: outcome FINDING, or a gate demoted to ``role: finding``."""
    return g.get("outcome") == "FINDING" or str(g.get("role") or "").startswith("finding")


def verdict(gates: list[dict[str, Any]]) -> str:
    """The word the gates alone give (for results without a session verdict, :mod:`musiceval.verdict`
    decides with the session's errors): FAILED if any gate FAILs; PASSED if one PASSes and none
    FAILs or is INCONCLUSIVE; INCONCLUSIVE if one is; else NOTHING DECIDED."""
    from musiceval.verdict import gates_alone

    return gates_alone(gates)


def headline(line: str, reasons: list[str]) -> str:
    """The session's verdict line without the first reason it ends with (:attr:`musiceval.verdict.Verdict.line`):
    the report lists every reason whole beneath it."""
    return line.removesuffix(f"; {reasons[0]}") if reasons else line


def banner(run_verdict: str, gates: list[dict[str, Any]]) -> str:
    """The line of a run without a session verdict (from its gates alone)."""
    decided = [g for g in gates if not is_finding(g)]
    n_fail = sum(g["outcome"] == "FAIL" for g in decided)
    n_inc = sum(g["outcome"] == "INCONCLUSIVE" for g in decided)
    n_pass = sum(g["outcome"] == "PASS" for g in decided)
    if run_verdict == "FAILED":
        return f"RELEASE GATES: {n_fail} FAILED" + (f", {n_inc} INCONCLUSIVE" if n_inc else "") + f", {n_pass} PASSED"
    if run_verdict == "PASSED":
        return f"RELEASE GATES PASSED ({n_pass} of {n_pass})"
    return f"NOTHING DECIDED: {n_pass} PASSED, {n_inc} INCONCLUSIVE, no gate FAILED"


def scale(g: dict[str, Any]) -> dict[str, Any]:
    """How to read a gate's estimate: ``what`` (a phrase), ``bar`` (on that scale) and ``chance``."""
    test, metric = g.get("test") or "", g.get("metric") or "the metric"
    thr = g.get("threshold")
    bar_value = g.get("bar")  # the bar the gate recorded (a gate view holds its display string instead)
    recorded_bar = bar_value if isinstance(bar_value, (int, float)) and not isinstance(bar_value, bool) else None
    if is_finding(g) and g.get("outcome") == "FINDING":
        # findings carry no test; their name says whether the number is a difference
        diff = bool(_DIFFERENCE.search(g.get("name") or ""))
        what = f"{metric} {'difference' if diff else 'value'} as named (a finding, never a gate)"
        bar, chance, kind = None, g.get("baseline"), "finding: difference" if diff else "finding: value"
    elif "interval of the mean" in test or "CI of the mean" in test or test.startswith("census"):
        bar = recorded_bar if recorded_bar is not None else thr
        what, chance, kind = (f"{metric} (counted exactly)" if test.startswith("census") else f"mean {metric}"), None, "mean"
    elif test.startswith(("paired", "exact McNemar", "exact:", "non_inferior", "superior")) or "McNemar" in test:
        bar = recorded_bar if recorded_bar is not None else thr if thr is not None else 0.0
        what, chance, kind = f"paired difference in {metric}", None, "difference"
    else:
        chance = g.get("baseline") if g.get("baseline") not in (None, "") else thr  # "": no baseline label
        what = f"{metric} minus chance" + (f" ({number(chance)})" if chance is not None else "")
        bar, kind = 0.0, "above chance"
    if g.get("unit"):
        what = g["unit"]
    lower = g.get("higher_is_better") is False and kind == "mean"
    op = ("≤" if lower else "≥") if kind == "mean" else ">"
    return {"what": what, "bar": bar, "chance": chance, "kind": kind, "lower_is_better": lower, "op": op,
            "census": test.startswith("census"), "family": g.get("unit") or f"{g.get('metric') or 'other'} · {kind}"}


def rule(g: dict[str, Any], sc: dict[str, Any], bar: str | None = None) -> str:
    """The sentence a gate checks, on the scale of its numbers (``bar``: the bar as shown beside it)."""
    if sc["bar"] is None:
        return "Reported for reading; a finding never passes or fails a release."
    bar = bar or number(sc["bar"])
    where = {">": "above", "≥": "at or above", "≤": "at or below"}[sc["op"]]
    if sc["census"]:
        return f"PASS when the {sc['what']} is {where} {bar} (every item counted: no interval); FAIL otherwise."
    level = round(100 * (1 - (g.get("alpha") or 0.05)))
    side, other = ("upper", "lower") if sc["lower_is_better"] else ("lower", "upper")
    return (f"PASS when the {side} end of the {level}% interval of the {sc['what']} is {where} {bar}; "
            f"FAIL when its {other} end is on the wrong side; INCONCLUSIVE otherwise.")


# ----------------------------------------------------------------------------- names and paths

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str, limit: int = 60) -> str:
    """A file-name/anchor fragment from data: only ``[A-Za-z0-9._-]``, no leading dot, never empty."""
    s = _UNSAFE.sub("_", str(text)).lstrip(".")[:limit]
    return s or "x"


def confined(directory: Path, name: str) -> Path:
    """``directory / name`` after checking that it resolves inside ``directory`` (else ValueError)."""
    base = directory.resolve()
    target = (base / name).resolve()
    if target.parent != base:
        raise ValueError(f"refusing to write {name!r} outside {base}")
    return target


_PATHS = re.compile(
    r"(?P<url>[A-Za-z][\w+.-]*://[^\s\"'<>]+)"  # URLs are kept
    r"|(?P<path>(?<![\w.~-])(?:~|/)(?:[^\s/\"'<>|:;,()\[\]]+/)+(?P<base>[^\s/\"'<>|:;,()\[\]]*))"
)


def scrub_paths(value: str, results_dir: Path | None = None) -> str:
    """Replace machine paths by paths relative to the results directory, or by ``…/basename``."""
    if results_dir is not None:
        for prefix in {str(results_dir.resolve()), str(results_dir)}:
            if len(prefix) > 1 and prefix.startswith("/"):
                value = value.replace(prefix.rstrip("/") + "/", "").replace(prefix, ".")
    if "/" not in value:
        return value

    def sub(m: re.Match[str]) -> str:
        if m.group("url"):
            return m.group("url")
        return "…/" + m.group("base")

    return _PATHS.sub(sub, value)


def shorten(text: str, limit: int = 140) -> tuple[str, bool]:
    """The first sentence (or clause) within ``limit`` characters, else the words that fit, never a
    word cut in two; and whether anything was cut (the caller shows the whole text on demand)."""
    if len(text) <= limit:
        return text, False
    cut = text[:limit]
    for stop in (". ", "; ", ": "):
        k = cut.find(stop, 40)
        if k > 0:
            return cut[: k + 1] + " …", True
    k = cut.rfind(" ", 40)
    return (cut[:k] if k > 0 and not text[limit].isspace() else cut).rstrip() + " …", True
