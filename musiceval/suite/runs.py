"""Building the :class:`~musiceval.protocols.base.Protocol` of one declared answer source.

The options a protocol receives come from three places, later ones winning: the keys of its section
of the suite config that the protocol class names (``options_from_config``: encoders, matcher,
permutations ...), the answers entry of the model (vocab, rewrites, compat ...), and the run (seed,
cache directory).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from musiceval.data.answers import AnswerSet
from musiceval.protocols.base import PROTOCOLS, Protocol, ProtocolSettings, check_headline
from musiceval.records import Accounting
from musiceval.suite.config import AnswerSource, SuiteConfig
from musiceval.suite.repeats import correct_texts


def protocol_options(source: AnswerSource, config: SuiteConfig, *, cache_root: str | Path | None = None) -> dict[str, Any]:
    """What the source's protocol class makes of its config section and answers entry
    (:meth:`~musiceval.protocols.base.Protocol.options_from`), plus its folder of the run's cache
    (``cache_root`` / the class's :attr:`~musiceval.protocols.base.Protocol.cache_folder`)."""
    cls = PROTOCOLS.get(source.protocol)
    options = cls.options_from(config.thresholds.get(source.protocol, {}), source.options, source.task)
    if cache_root is not None:
        options["cache_dir"] = str(Path(cache_root) / cls.cache_folder)
    return options


def load_source(source: AnswerSource) -> AnswerSet:
    """``source``'s answers (format detected from the content unless declared), refused
    (:class:`~musiceval.data.formats.FormatError`) when they cannot be one model's single run:
    several models (:func:`~musiceval.data.formats.refuse_mixed_answers`), more items than the
    benchmark holds (:func:`refuse_oversized`) or controls alone (:func:`refuse_controls_only`).
    The session calls it at start-up for every source."""
    from musiceval.data.formats import load_answers

    answers = load_answers(source.path, source.format, protocol=source.protocol)
    refuse_oversized(answers, source)
    refuse_controls_only(answers, source)
    return answers


def refuse_controls_only(answers: AnswerSet, source: AnswerSource) -> None:
    """:class:`~musiceval.data.formats.FormatError` when the file answers only under control
    conditions (noise, random audio, text only ...): every gate compares the model's own answers
    (Correct) with something, so there is nothing to gate."""
    from musiceval.data.formats import FormatError

    conditions = {r.condition for r in answers.responses}
    if conditions and "correct" not in conditions:
        raise FormatError(f"{source.path}: holds answers under {', '.join(sorted(conditions))} only, none under the "
                          "Correct condition (the model's own answers to the items, which every gate compares with "
                          "its controls); add them (rows without a condition, or condition \"correct\")")


def expected_items(source: AnswerSource, answers: AnswerSet) -> int | None:
    """How many items the source's benchmark holds: its answers entry's ``expected_items``, else
    the recognised benchmark's size (None: unknown)."""
    bench = answers.benchmark
    return source.options.get("expected_items") or (bench.items if bench is not None else None)


def answered_ids(answers: AnswerSet) -> set[str]:
    """The distinct items with a Correct answer (an item a rule of the format left out, such as a
    reference that copies the question, was answered too): each counted once, the K repeats of an
    item (:func:`musiceval.data.answers.repeated_row`) as that one item."""
    return ({answers.original_id(r.item_id) for r in answers.responses if r.condition == "correct"}
            | {answers.original_id(i) for e in answers.excluded if not e.conditions for i in e.ids})


def refuse_oversized(answers: AnswerSet, source: AnswerSource) -> None:
    """:class:`~musiceval.data.formats.FormatError` when the file answers more items than its
    benchmark holds (two runs joined: a coverage above 100 % is impossible), naming the clips
    answered more than once."""
    from collections import Counter

    from musiceval.data.answers import ONE_MODEL_FIX
    from musiceval.data.formats import FormatError

    expected, answered = expected_items(source, answers), answered_ids(answers)
    if not expected or len(answered) <= expected:
        return
    clips = Counter(i.group or i.id for i in answers.items if answers.original_id(i.id) in answered)
    twice = [c for c, n in clips.items() if n > 1]
    named = (f"; {len(twice):,} clips are answered more than once ({', '.join(map(repr, twice[:3]))}"
             f"{', ...' if len(twice) > 3 else ''})") if twice else ""
    size = ("its expected_items" if source.options.get("expected_items") else
            answers.benchmark.name if answers.benchmark is not None else "the benchmark")
    raise FormatError(f"{source.path}: answers {len(answered):,} items, but {size} has {expected:,}{named}: the file "
                      f"joins several runs or models; {ONE_MODEL_FIX} (for a larger split, set expected_items in its "
                      "answers entry)")


def build_protocol(source: AnswerSource, config: SuiteConfig, *, seed: int = 0, cache_root: str | Path | None = None,
                   record_mode: str = "none") -> Protocol:
    """Load ``source``'s answers (:func:`load_source`) and build its protocol, refused
    (:func:`~musiceval.protocols.base.check_headline`) when its headline is a finding."""
    answers = load_source(source)
    options = protocol_options(source, config, cache_root=cache_root)
    settings = ProtocolSettings(seed=seed, options=options, config_dir=str(config.path.parent if config.path else config.root),
                                record_mode=record_mode)
    run = PROTOCOLS.get(source.protocol).from_answers(answers, settings)  # type: ignore[attr-defined]
    check_headline(run)
    run.model = source.model
    run.source = source.label
    run.items_sha256 = items_fingerprint(answers.items)
    bench = answers.benchmark
    run.accounting = Accounting(
        records=len(answers.responses) + len(answers.failures) + sum(len(e.ids) for e in answers.excluded),
        unreadable=tuple(answers.failures),
        answered=len(answered_ids(answers)),  # never above expected: refuse_oversized
        benchmark=bench.name if bench is not None else None, expected=expected_items(source, answers),
        cap=options.get("max_items"))
    run.repeat_of = dict(answers.repeat_of)
    run.repeat_texts = correct_texts(answers) if answers.repeat_of else {}
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
