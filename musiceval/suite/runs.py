"""Building the :class:`~musiceval.protocols.base.Protocol` of one declared answer source.

The options a protocol receives come from three places, later ones winning: the keys of its section
of the suite config that the protocol class names (``options_from_config``: encoders, matcher,
permutations ...), the answers entry of the model (vocab, rewrites, compat ...), and the run (seed,
cache directory).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from musiceval.protocols.base import PROTOCOLS, Protocol, ProtocolSettings
from musiceval.records import ItemFailure
from musiceval.suite.config import Source, SuiteConfig


@dataclass(frozen=True)
class Accounting:
    """Where every line of one answer file went: scored (or an unparseable answer, which counts
    against the parse rate), or unreadable (torn JSON, wrong types: the input is corrupt), and how
    much of its benchmark the file covers."""

    #: records read (responses of every condition plus unreadable lines)
    records: int
    unreadable: tuple[ItemFailure, ...]
    #: distinct items with a Correct answer
    answered: int
    #: the benchmark the file belongs to and its number of items (None: unknown)
    benchmark: str | None
    expected: int | None
    #: the scoring cap in force (score the first N records; None: every record)
    cap: int | None

    def as_row(self) -> dict[str, Any]:
        return {"records": self.records, "unreadable": len(self.unreadable),
                "unreadable_lines": [f"{f.item_id}: {f.reason}" for f in self.unreadable[:20]],
                "answered": self.answered, "benchmark": self.benchmark, "expected": self.expected, "cap": self.cap}

def protocol_options(source: Source, config: SuiteConfig, *, cache_dir: str | Path | None = None) -> dict[str, Any]:
    """What the source's protocol class makes of its config section and answers entry
    (:meth:`~musiceval.protocols.base.Protocol.options_from`), plus the run's cache directory."""
    cls = PROTOCOLS.get(source.protocol)
    options = cls.options_from(config.thresholds.get(source.protocol, {}), source.options, source.task)
    if cache_dir is not None:
        options["cache_dir"] = str(cache_dir)
    return options


def build_protocol(source: Source, config: SuiteConfig, *, seed: int = 0, cache_dir: str | Path | None = None) -> Protocol:
    """Load ``source``'s answers (format detected from the content unless declared) and build its protocol."""
    from musiceval.data.formats import load_answers

    answers = load_answers(source.path, source.format, protocol=source.protocol)
    options = protocol_options(source, config, cache_dir=cache_dir)
    settings = ProtocolSettings(seed=seed, options=options)
    run = PROTOCOLS.get(source.protocol).from_answers(answers, settings)  # type: ignore[attr-defined]
    run.model = source.model
    run.source = source.label
    run.items_sha256 = items_fingerprint(answers.items)  # type: ignore[attr-defined]
    bench = answers.benchmark
    expected = source.options.get("expected_items") or (bench.items if bench is not None else None)
    run.accounting = Accounting(  # type: ignore[attr-defined]
        records=len(answers.responses) + len(answers.failures) + sum(len(e.ids) for e in answers.excluded),
        unreadable=tuple(answers.failures),
        # an item a rule of the format left out (a reference that copies the question) was answered too
        answered=len({r.item_id for r in answers.responses if r.condition == "correct"}
                     | {i for e in answers.excluded if not e.conditions for i in e.ids}),
        benchmark=bench.name if bench is not None else None, expected=expected, cap=options.get("max_items"))
    return run


def items_fingerprint(items) -> str:
    """sha256 of what the answers are scored against (questions, options, answers, labels,
    references), independent of the model's responses and of file order: the scorer-side data of
    a source. Two runs whose sources differ here do not compare."""
    import hashlib
    import json

    rows = sorted(json.dumps([it.id, it.question, list(it.choices), it.answer, list(it.labels), it.reference],
                             ensure_ascii=False, default=str) for it in items)
    return hashlib.sha256("\n".join(rows).encode("utf-8")).hexdigest()
