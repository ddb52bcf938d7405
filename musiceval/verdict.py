"""The one verdict of a session about the declared model, computed once from what happened.

docs/gate-your-model.md ("What the verdict means"): **PASSED** means pytest's session passed and every required gate
about the declared model passed. The other words, in the order they win:

=================  ==========================================================================  ====
verdict            when                                                                        exit
=================  ==========================================================================  ====
``ERROR``          a test errored or timed out, a collection failed, a baseline was refused as  1
                   not comparable, an artefact could not be written, or a self-check of the
                   suite failed (its machinery cannot be trusted)
``FAILED``         a gate about the declared model FAILed (its test failed), or under           1
                   ``--strict`` a PASS did not survive Holm's correction
``INCONCLUSIVE``   a required gate about the declared model could not decide (its interval      1
                   straddles the bar) or did not run (skipped for want of weights, data or a
                   key), or a required check pattern matched no PASS; exit 0 only with
                   ``--musiceval-inconclusive xfail``
``NOTHING          no gate about the declared model decided anything (PASS or FAIL); exit 0     1
DECIDED``          only with ``--musiceval-allow-empty``
``PASSED``         none of the above                                                            0
=================  ==========================================================================  ====

Gates are about the declared model when their ``subject`` is ``"model"``: the suite's own
self-checks (its tiny live model, text encoders, machinery) never count, and findings never count.
A gate is required when the suite config has no ``[release] required`` profile, or when its check id
matches one of the profile's patterns. A required gate that was skipped is not a pass: it makes the
word INCONCLUSIVE, its reason naming what the gate needed, unless ``[release] allow_skip`` names it
(a pattern and a reason): an allowed skip is not required, and its reason is repeated on the verdict
line whatever the word. The terminal's last line, ``results.json``, the reports and the JUnit file
all print :attr:`Verdict.line`. ``results.json`` also records :attr:`Verdict.inputs` (in
``verdict_detail.inputs``), from which every reader decides the word again
(:mod:`musiceval.results.verdict_check`): a stored word is never trusted.
"""
from __future__ import annotations

import fnmatch
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

VERDICTS = ("PASSED", "FAILED", "INCONCLUSIVE", "NOTHING DECIDED", "ERROR")
MODEL, SELF_CHECK = "model", "self-check"


@dataclass(frozen=True)
class Verdict:
    word: str
    #: why the word is not PASSED (or what PASSED rests on), one sentence each
    reasons: tuple[str, ...]
    #: outcome -> count over the gates about the declared model (findings and N/A included)
    counts: Mapping[str, int]
    #: required gates about the declared model, and how many of them passed
    required: int
    passed: int
    models: tuple[str, ...]
    exit_code: int
    #: outcome -> count over the suite's self-checks
    self_checks: Mapping[str, int] = field(default_factory=dict)
    #: answer sources scored with a cap on their items (``"MU-LLaMA/mir/MTT: first 80 of 150 records"``)
    capped: tuple[str, ...] = ()
    #: skipped gates the suite config allows to skip, one line per ``[release] allow_skip`` rule
    allowed_skips: tuple[str, ...] = ()
    #: answer sources whose benchmark data has no pinned revision (``"mmau: why"``): the line names them
    unpinned: tuple[str, ...] = ()
    #: the session's own inputs to :func:`decide` besides the gates (``decide(gates, **inputs)`` gives
    #: this verdict again): what a reader of results.json recomputes the word from
    inputs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def line(self) -> str:
        """``musiceval: PASSED: MiDashengLM-7B: 12 of 12 required gates passed (3 findings, 4 N/A)``."""
        who = ", ".join(self.models) or "no model declared"
        names = {"FINDING": ("finding", "findings"), "N/A": ("not applicable",) * 2, "SKIPPED": ("skipped",) * 2}
        extra = ", ".join(f"{self.counts[k]} {names[k][self.counts[k] != 1]}" for k in names if self.counts.get(k))
        core = f"{self.passed} of {self.required} required gates passed"
        failed, open_ = self.counts.get("FAIL", 0), self.counts.get("INCONCLUSIVE", 0)
        if failed:
            core += f", {failed} failed"
        if open_:
            core += f", {open_} inconclusive"
        text = f"musiceval: {self.word}: {who}: {core}" + (f" ({extra})" if extra else "")
        if self.capped:
            more = f" and {len(self.capped) - 1} more" if len(self.capped) > 1 else ""
            text += f"; capped: {self.capped[0]}{more}"
        text += "".join(f"; {allowed}" for allowed in self.allowed_skips)
        if self.unpinned:
            text += "; unpinned: " + ", ".join(u.partition(": ")[0] for u in self.unpinned)
        return text + (f"; {self.reasons[0]}" if self.reasons and self.word != "PASSED" else "")

    def as_dict(self) -> dict[str, Any]:
        return {"word": self.word, "line": self.line, "reasons": list(self.reasons), "counts": dict(self.counts),
                "required": self.required, "passed": self.passed, "models": list(self.models),
                "exit_code": self.exit_code, "self_checks": dict(self.self_checks), "capped": list(self.capped),
                "allowed_skips": list(self.allowed_skips), "unpinned": list(self.unpinned), "inputs": dict(self.inputs)}


def gates_alone(gates: Sequence[Mapping[str, Any]]) -> str:
    """The word the gates alone give, for results written without a session verdict
    (:func:`musiceval.report.write_run`): FAILED if any gate FAILs; INCONCLUSIVE if one is; PASSED
    if one PASSes; else NOTHING DECIDED. Findings never count."""
    outcomes = Counter(g.get("outcome") for g in gates if not is_finding(g))
    if outcomes["FAIL"]:
        return "FAILED"
    if outcomes["INCONCLUSIVE"]:
        return "INCONCLUSIVE"
    if outcomes["PASS"]:
        return "PASSED"
    return "NOTHING DECIDED"


def is_finding(g: Mapping[str, Any]) -> bool:
    return g.get("outcome") == "FINDING" or str(g.get("role") or "").startswith("finding")


def subject_of(g: Mapping[str, Any], declared: Iterable[str]) -> str:
    """``"model"`` for a gate about a declared model, else ``"self-check"`` (the suite's own machinery)."""
    if g.get("subject") == SELF_CHECK:
        return SELF_CHECK
    return MODEL if str(g.get("model") or "") in set(declared) else SELF_CHECK


def matches(g: Mapping[str, Any], pattern: str) -> bool:
    """A gate's check id against a ``[release]`` pattern, either way round (a skipped test's id ends
    in ``/*``: ``freeform/metric_correct_beats_random/m/MusicQA/clap_text/*``)."""
    check = str(g.get("check") or "")
    return fnmatch.fnmatchcase(check, pattern) or fnmatch.fnmatchcase(pattern, check)


def is_required(g: Mapping[str, Any], required: Sequence[str]) -> bool:
    return not required or any(matches(g, p) for p in required)


def allowance(g: Mapping[str, Any], allow_skip: Mapping[str, str]) -> str | None:
    """The ``[release] allow_skip`` pattern that lets gate ``g`` skip (the last that matches), or None."""
    found = None
    for pattern in allow_skip:
        if matches(g, pattern):
            found = pattern
    return found


def group_errors(errors: Sequence[tuple[str, str, str]], named: int = 3) -> list[str]:
    """One reason per cause, in the order causes first occurred. ``errors`` are ``(where, what, cause)``
    triples (``"evals/x.py::test_a[s]"``, ``"errored in setup"``, ``"WordNetMissingError: ..."``); a
    cause seen once reads ``"<where> <what>: <cause>"``, a cause seen N times ``"<cause> (N tests: a,
    b, c and 2 more)"``, the tests named without their module path."""
    by_cause: dict[str, list[tuple[str, str]]] = {}
    for where, what, cause in errors:
        by_cause.setdefault(cause, []).append((where, what))
    out = []
    for cause, hits in by_cause.items():
        if len(hits) == 1:
            where, what = hits[0]
            out.append(f"{where}{' ' + what if what else ''}: {cause}")
            continue
        names = [where.rpartition("::")[2] for where, _ in hits]
        more = f" and {len(names) - named} more" if len(names) > named else ""
        out.append(f"{cause} ({len(names)} tests: {', '.join(names[:named])}{more})")
    return out


def decide(
    gates: Sequence[Mapping[str, Any]],
    *,
    declared: Sequence[str],
    required: Sequence[str] = (),
    errors: Sequence[str] = (),
    strict: bool = False,
    holm_failures: Sequence[str] = (),
    inconclusive: str = "fail",
    allow_empty: bool = False,
    pytest_exit: int = 0,
    capped: Sequence[str] = (),
    allow_skip: Mapping[str, str] | None = None,
    unpinned: Sequence[str] = (),
) -> Verdict:
    """The verdict (see the module docstring). ``errors`` are one-line descriptions of what went wrong
    in the session (errored tests, timeouts, refused baselines, artefacts not written);
    ``allow_skip`` maps ``[release] allow_skip`` patterns to their reasons; ``unpinned`` names the
    answer sources whose benchmark data has no pinned revision (``"label: why"``): the line says so,
    the word does not change."""
    allow_skip = dict(allow_skip or {})
    inputs = {"declared": list(declared), "required": list(required), "errors": list(errors), "strict": bool(strict),
              "holm_failures": list(holm_failures), "inconclusive": inconclusive, "allow_empty": bool(allow_empty),
              "pytest_exit": int(pytest_exit), "capped": list(capped), "allow_skip": allow_skip, "unpinned": list(unpinned)}
    model_gates = [g for g in gates if subject_of(g, declared) == MODEL]
    self_checks = [g for g in gates if subject_of(g, declared) == SELF_CHECK]
    counts = Counter(("FINDING" if is_finding(g) else str(g.get("outcome"))) for g in model_gates)
    gating = [g for g in model_gates if not is_finding(g)]
    allowed: dict[str, list[Mapping[str, Any]]] = {}
    for g in gating:
        pattern = allowance(g, allow_skip) if g.get("outcome") == "SKIPPED" else None
        if pattern is not None:
            allowed.setdefault(pattern, []).append(g)
    allowed_ids = {id(g) for hits in allowed.values() for g in hits}
    req = [g for g in gating if is_required(g, required) and id(g) not in allowed_ids
           and g.get("outcome") in ("PASS", "FAIL", "INCONCLUSIVE", "SKIPPED")]
    passed = sum(g.get("outcome") == "PASS" for g in req)
    skipped = [g for g in req if g.get("outcome") == "SKIPPED"]
    failed_self = [g for g in self_checks if g.get("outcome") == "FAIL" and not is_finding(g)]
    missing = [p for p in required if not any(g.get("outcome") == "PASS" and is_required(g, [p]) for g in gating)]
    reasons: list[str] = []
    if errors or failed_self:
        word = "ERROR"
        reasons += list(errors) + [f"a self-check of the suite failed: {g.get('name')}" for g in failed_self]
    elif any(g.get("outcome") == "FAIL" for g in gating) or (strict and holm_failures):
        word = "FAILED"
        reasons += [f"FAIL: {g.get('name')}" for g in gating if g.get("outcome") == "FAIL"]
        reasons += [f"not significant after Holm correction (--strict): {n}" for n in holm_failures] if strict else []
    elif any(g.get("outcome") == "INCONCLUSIVE" for g in req) or missing or skipped:
        word = "INCONCLUSIVE"
        for g in req:
            if g.get("outcome") == "INCONCLUSIVE":
                more = f" (about {g['n_to_decide']} items would decide it)" if g.get("n_to_decide") else ""
                reasons.append(f"undecided: {g.get('name')}{more}")
        # one reason per cause (what the gates needed: weights, data, a key), naming the gates
        reasons += group_errors([(str(g.get("name")), "", f"a required gate did not run: {g.get('detail') or 'no reason'}")
                                 for g in skipped])
        reasons += [f"required check without a PASS: {p}" for p in missing]
    elif not any(g.get("outcome") in ("PASS", "FAIL") for g in gating):
        word = "NOTHING DECIDED"
        reasons.append("no gate about the declared model decided anything: everything was skipped, not "
                       "applicable, INCONCLUSIVE or a FINDING")
    else:
        word = "PASSED"
    notes = tuple(f"allowed to skip ([release] allow_skip \"{p}\": {allow_skip[p]}): {len(hits)} gate(s)"
                  for p, hits in allowed.items())
    if word == "PASSED":
        reasons += list(notes)
    exit_code = {"PASSED": 0, "FAILED": 1, "ERROR": 1,
                 "INCONCLUSIVE": 0 if inconclusive == "xfail" and not strict else 1,
                 "NOTHING DECIDED": 0 if allow_empty else 1}[word]
    if word != "PASSED" and pytest_exit > 1:  # interrupted, internal or usage error: keep pytest's code
        exit_code = pytest_exit
    return Verdict(word, tuple(reasons), dict(counts), len(req), passed, tuple(declared), exit_code,
                   dict(Counter(str(g.get("outcome")) for g in self_checks)), tuple(capped), notes, tuple(unpinned), inputs)
