"""The suite config's schema: every known key, its type, default and meaning, validated at start-up.

A misspelled key (``min_ifrr``) is a :class:`ConfigError` naming the key, the section and the
closest known key, raised when pytest starts, never a ``KeyError`` when one test runs and never
silently ignored. Every section has built-in defaults, so a project that installs musiceval gets
working gates with no config file at all.

Margins are per protocol, task and metric, in the metric's own units (an accuracy margin is a
difference in accuracy, a WER margin a difference in WER): ``margin`` is the protocol's default
and ``margins`` maps ``"metric"``, ``"task"`` or ``"task.metric"`` to a value (the most specific
key wins, see :func:`musiceval.keys.margin_for`).
"""
from __future__ import annotations

import difflib
from typing import Any, Mapping

from musiceval.keys import GATE_KEYS, SOURCE_KEYS, Key
from musiceval.ranges import AT_LEAST_ONE, FINITE, LEVEL, NON_NEGATIVE, NON_NEGATIVE_INT, RESAMPLES, SHARE


class ConfigError(ValueError):
    """An invalid suite config: the message names the file, the key and the fix."""


#: the sections that belong to no protocol. The section of each protocol that reads answer files
#: (``[choice]``, ``[mir]`` ... and any a plugin registers) comes from the protocol class itself
#: (:func:`musiceval.protocols.base.config_section`): see :func:`schema`.
STATIC_SECTIONS: dict[str, dict[str, Key]] = {
    "defaults": {
        "alpha": Key(float, 0.05, "two-sided confidence level of every interval is 1 - alpha", LEVEL),
        "n_resamples": Key(int, 10_000, "bootstrap resamples", RESAMPLES),
        "ci_method": Key(str, "auto", "interval method: auto (chosen per data shape, calibrated), bca or percentile"),
        "power": Key(float, 0.8, "power at which every regression gate states its minimum detectable effect", LEVEL),
        "adjust": Key(str, "holm", "family-wise control across the regression gates of a run: holm or bh"),
        "inconclusive": Key(str, "fail", "a required gate that is INCONCLUSIVE: fail (verdict INCONCLUSIVE, exit 1) "
                                          "or xfail (the same verdict, exit 0)"),
        "min_coverage": Key((int, float), 1.0, "coverage gate: share of the benchmark's items the answers must cover",
                            SHARE),
        "max_unreadable": Key(int, 0, "readability gate: unreadable lines (torn JSON, wrong types) tolerated per file",
                              NON_NEGATIVE_INT),
        "self_checks": Key(bool, False, "run the suite's self-checks (tiny live model, text encoders) with the gates"),
    },
    "text_encoders": {
        **GATE_KEYS,
        "max_triplets": Key(int, 2000, "seeded sample of triplets per subtree", AT_LEAST_ONE),
        "prompts": Key(list, [0, 4, 8, 12, 16], "indices into the 20 paper prompts ([] = all)"),
        "encoders": Key(list, ["minilm", "clap:"], "text encoders probed (those the metrics use)"),
    },
    "live": {
        "min_answered_rate": Key((int, float), 1.0, "share of (item, condition) pairs that must get a response", SHARE),
        "tempo_tolerance": Key(float, 0.04, "relative tempo tolerance (MIREX Accuracy 1)", NON_NEGATIVE),
    },
}


def schema() -> dict[str, dict[str, Key]]:
    """Section -> key -> :class:`~musiceval.keys.Key`: the static sections and one per registered
    protocol that reads answer files. Sections ``[[model]]``, ``[checks]``, ``[release]``,
    ``[baseline]`` are validated in :mod:`musiceval.suite.config` (their keys are not thresholds)."""
    from musiceval.protocols.base import answer_protocols, config_section

    return {**STATIC_SECTIONS, **{name: config_section(cls) for name, cls in answer_protocols().items()}}


def answer_options() -> dict[str, dict[str, Key]]:
    """Protocol -> the options one ``[[model.answers]]`` entry may set, from each protocol class."""
    from musiceval.protocols.base import answer_protocols

    return {name: {**cls.answer_options, **SOURCE_KEYS} for name, cls in answer_protocols().items()}


def check_value(value: Any, key: Key, where: str) -> Any:
    """``value`` of ``key`` (an int where a float is asked for becomes a float); a wrong type, a
    number that is not finite (TOML reads ``nan`` and ``inf``) or one outside the key's range raises."""
    if isinstance(value, bool) and bool not in (key.type if isinstance(key.type, tuple) else (key.type,)):
        raise ConfigError(f"{where}: expected {_type_name(key.type)}, got a boolean ({value!r})")
    if not isinstance(value, key.type):
        if key.type is float and isinstance(value, int):
            value = float(value)
        else:
            raise ConfigError(f"{where}: expected {_type_name(key.type)}, got {type(value).__name__} ({value!r})")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        allowed = key.range or FINITE
        if value not in allowed:
            raise ConfigError(f"{where}: expected {allowed.describe()}, got {value!r}")
    words = key.allowed() if isinstance(value, str) else None
    if words is not None and value not in words:
        close = difflib.get_close_matches(value, words, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigError(f"{where}: unknown {value!r}; {hint}choose one of {', '.join(map(repr, words))}")
    return value


def _type_name(t: type | tuple[type, ...]) -> str:
    names = [x.__name__ for x in (t if isinstance(t, tuple) else (t,))]
    return {"int|float": "a number", "float": "a number"}.get("|".join(names), " or ".join(names))


def unknown_key_error(key: str, known: Any, where: str, *, otherwise: str = "") -> ConfigError:
    """``unknown key``, with the closest known key, else every known key and ``otherwise``."""
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(sorted(known))}{otherwise}"
    return ConfigError(f"{where}: unknown key {key!r}{hint}")


def validate_thresholds(raw: Mapping[str, Any], source: str) -> dict[str, dict[str, Any]]:
    """Defaults overlaid with the threshold sections of ``raw``; unknown keys and wrong types raise."""
    sections = schema()
    out = {section: {k: (dict(v.default) if isinstance(v.default, dict) else v.default) for k, v in keys.items()}
           for section, keys in sections.items()}
    for section, values in raw.items():
        if section not in sections:
            continue  # the caller validates the non-threshold sections
        if not isinstance(values, Mapping):
            raise ConfigError(f"{source}: [{section}] must be a table")
        for key, value in values.items():
            where = f"{source}: [{section}] {key}"
            if key not in sections[section]:
                raise unknown_key_error(key, sections[section], f"{source}: [{section}]")
            out[section][key] = check_value(value, sections[section][key], where)
        for table in ("margins", "regression_margins"):
            for key, value in out[section].get(table, {}).items():
                check_value(value, Key((int, float), 0.0, "", NON_NEGATIVE), f"{source}: [{section}] {table}.{key}")
    if out["defaults"]["inconclusive"] not in ("xfail", "fail"):
        raise ConfigError(f"{source}: [defaults] inconclusive must be 'xfail' or 'fail'")
    if out["defaults"]["ci_method"] not in ("auto", "bca", "percentile"):
        raise ConfigError(f"{source}: [defaults] ci_method must be 'auto', 'bca' or 'percentile'")
    if out["defaults"]["adjust"] not in ("holm", "bh"):
        raise ConfigError(f"{source}: [defaults] adjust must be 'holm' or 'bh' (Benjamini-Hochberg)")
    return out
