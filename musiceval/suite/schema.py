"""The suite config's schema: every known key, its type, default and meaning, validated at start-up.

A misspelled key (``min_ifrr``) is a :class:`ConfigError` naming the key, the section and the
closest known key, raised when pytest starts, never a ``KeyError`` when one test runs and never
silently ignored. Every section has built-in defaults, so a project that installs musiceval gets
working gates with no config file at all.

Margins are per protocol, task and metric, in the metric's own units (an accuracy margin is a
difference in accuracy, a WER margin a difference in WER): ``margin`` is the protocol's default
and ``margins`` maps ``"metric"``, ``"task"`` or ``"task.metric"`` to a value (the most specific
key wins, see :func:`margin_for`).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Mapping

from musiceval.ranges import AT_LEAST_ONE, FINITE, LEVEL, NON_NEGATIVE, NON_NEGATIVE_INT, SHARE, Range


class ConfigError(ValueError):
    """An invalid suite config: the message names the file, the key and the fix."""


@dataclass(frozen=True)
class Key:
    type: type | tuple[type, ...]
    default: Any
    help: str
    #: the numbers the key takes (:mod:`musiceval.ranges`); every number is finite
    range: Range | None = None


_MARGINS = {
    "margin": Key((int, float), 0.0, "default margin of this protocol's gates, in the metric's own units", NON_NEGATIVE),
    "margins": Key(dict, {}, "per 'metric', 'task' or 'task.metric' margins (most specific wins)"),
    "min_parse_rate": Key((int, float), 0.0, "parse-rate gate: share of answers the parser must read", SHARE),
    "listens_margin": Key((int, float), 0.0, "'the model listens' gate: Correct must beat the best control by this much",
                          NON_NEGATIVE),
    "regression_margin": Key((int, float), 0.02, "non-inferiority to the baseline: the largest drop tolerated, in the metric's units",
                             NON_NEGATIVE),
    "regression_margins": Key(dict, {}, "per 'metric', 'task' or 'task.metric' regression margins (most specific wins)"),
}

#: section -> key -> Key. Sections [[model]], [checks], [release], [baseline] are validated in
#: musiceval.suite.config (their keys are not thresholds).
SCHEMA: dict[str, dict[str, Key]] = {
    "defaults": {
        "alpha": Key(float, 0.05, "two-sided confidence level of every interval is 1 - alpha", LEVEL),
        "n_resamples": Key(int, 10_000, "bootstrap resamples", AT_LEAST_ONE),
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
    "choice": {
        **_MARGINS,
        "min_parse_rate": Key((int, float), 0.90, "instruction-following rate: share of answers mapped to an option", SHARE),
        "matcher": Key(str, "muchomusic", "answer matcher: muchomusic (the published rule) or strict"),
        "runs": Key(int, 3, "live runs with different option shuffles (averaged)", AT_LEAST_ONE),
        "n_examples": Key(int, 1, "live in-context examples per prompt", Range(0, 5, integer=True)),
    },
    "factual": {
        **_MARGINS,
        "min_parse_rate": Key((int, float), 0.5, "share of answers naming at least one vocabulary label", SHARE),
        "n_permutations": Key(int, 2000, "permutations of predictions across items for the chance level of F1", AT_LEAST_ONE),
        "vocab": Key(str, "", "default closed vocabulary when an answers entry gives none"),
        "fma_small_chance": Key(float, 0.125, "uniform guessing among FMA-small's 8 balanced genres (reported)", SHARE),
        "live_max_items": Key(int, 0, "live gates: ask at most this many items per dataset (0 = all)", NON_NEGATIVE_INT),
        "prompt_variant": Key(str, "paper", "live question phrasing: paper or among"),
        "live_chunks": Key(str, "any", "live chunked answers: any or majority"),
        "live_true_false_max_items": Key(int, 50, "live true/false gate: items asked (0 = all)", NON_NEGATIVE_INT),
    },
    "freeform": {
        **_MARGINS,
        "min_parse_rate": Key((int, float), 0.9, "share of non-empty answers", SHARE),
        "random_draws": Key(int, 1, "independent Random derangements, averaged per item", AT_LEAST_ONE),
        "sentence_encoder": Key(str, "minilm", "encoder of sentence_cosine"),
        "bertscore_model": Key(str, "minilm", "BERTScore model"),
        "bertscore_layers": Key(int, 6, "BERTScore layer", NON_NEGATIVE_INT),
        "clap": Key(str, "", "CLAP hub id, directory or LAION .pt (default $MUSICEVAL_CLAP or laion/larger_clap_music)"),
        "metrics": Key(list, [], "metrics scored (default: every registered free-form metric)"),
        "live_questions": Key(str, "freeform.jsonl", "live questions, relative to the synthesised audio shipped with musiceval"),
        "live_max_tokens": Key(int, 128, "live answer length for a real model", AT_LEAST_ONE),
    },
    "mir": {
        **_MARGINS,
        "min_parse_rate": Key((int, float), 0.5, "share of responses the task's parser reads", SHARE),
        "compat": Key(str, "", "'' (corrected rules), cmi-bench (the toolkit's rules, quirks included) or cmi-bench@35235cb / "
                            "cmi-bench@2cafca5 (evaluate.py at that commit)"),
        "encoder": Key(str, "minilm", "text encoder of the tagging tasks"),
        "tagging_items": Key(int, 0, "score only the first N records of tagging files (0 = all; a cap is printed in the "
                                     "verdict)", NON_NEGATIVE_INT),
        "captioning_items": Key(int, 0, "score only the first N records of captioning files (0 = all; a cap is printed "
                                        "in the verdict)", NON_NEGATIVE_INT),
        "bertscore_model": Key(str, "minilm", "captioning BERTScore model"),
        "bertscore_layers": Key(int, 6, "captioning BERTScore layer", NON_NEGATIVE_INT),
        "live_max_tokens": Key(int, 128, "live answer length for a real model", AT_LEAST_ONE),
        "live_dataset_tasks": Key(list, ["GTZAN", "GS_key", "Nsynth_instrument", "Nsynth_pitch", "gtzan_beat"],
                                  "live tasks on a downloaded CMI-Bench"),
        "live_dataset_items": Key(int, 20, "live instructions per task on a downloaded CMI-Bench", AT_LEAST_ONE),
    },
    "text_encoders": {
        **_MARGINS,
        "max_triplets": Key(int, 2000, "seeded sample of triplets per subtree", AT_LEAST_ONE),
        "prompts": Key(list, [0, 4, 8, 12, 16], "indices into the 20 paper prompts ([] = all)"),
        "encoders": Key(list, ["minilm", "clap:"], "text encoders probed (those the metrics use)"),
    },
    "live": {
        "min_answered_rate": Key((int, float), 1.0, "share of (item, condition) pairs that must get a response", SHARE),
        "tempo_tolerance": Key(float, 0.04, "relative tempo tolerance (MIREX Accuracy 1)", NON_NEGATIVE),
    },
}


#: the options an answers entry (``[[model.answers]]``) may set, per protocol: passed to the protocol
#: as they are (threshold sections give their defaults, :mod:`musiceval.suite.runs`)
_EXPECTED = Key(int, 0, "the benchmark's number of items, for the coverage gate (known ones need none)", AT_LEAST_ONE)
ANSWER_OPTIONS: dict[str, dict[str, Key]] = {
    "choice": {
        "matcher": Key(str, "muchomusic", "answer matcher: muchomusic (the published rule), strict or a registered one"),
        "expected_items": _EXPECTED,
    },
    "factual": {
        "vocab": Key(str, "", "closed vocabulary: a built-in name or a vocabulary file (relative to the config)"),
        "extractor": Key(str, "rules", "label extractor"),
        "chunks": Key(str, "", "answers given per audio chunk: any or majority"),
        "hierarchy": Key(str, "", "FMA genres.csv for 'same tree' scores (relative to the config)"),
        "labels_field": Key(str, "", "field holding the true labels"),
        "n_permutations": SCHEMA["factual"]["n_permutations"],
        "expected_items": _EXPECTED,
    },
    "freeform": {
        "rewrites": Key(str, "", "Skyline/Adversarial rewrites file (relative to the config)"),
        "random_draws": SCHEMA["freeform"]["random_draws"],
        "data_dir": Key(str, "", "root of the items' audio for clap_audio (relative to the config)"),
        "metrics": SCHEMA["freeform"]["metrics"],
        "keep_compared_only": Key(bool, False, "score only the items some gate compares"),
        "expected_items": _EXPECTED,
    },
    "mir": {
        "compat": SCHEMA["mir"]["compat"],
        "encoder": SCHEMA["mir"]["encoder"],
        "tagging_items": SCHEMA["mir"]["tagging_items"],
        "captioning_items": SCHEMA["mir"]["captioning_items"],
        "expected_items": _EXPECTED,
    },
}


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
    return value


def _type_name(t: type | tuple[type, ...]) -> str:
    names = [x.__name__ for x in (t if isinstance(t, tuple) else (t,))]
    return {"int|float": "a number", "float": "a number"}.get("|".join(names), " or ".join(names))


def unknown_key_error(key: str, known: Any, where: str) -> ConfigError:
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(sorted(known))}"
    return ConfigError(f"{where}: unknown key {key!r}{hint}")


def validate_thresholds(raw: Mapping[str, Any], source: str) -> dict[str, dict[str, Any]]:
    """Defaults overlaid with the threshold sections of ``raw``; unknown keys and wrong types raise."""
    out = {section: {k: (dict(v.default) if isinstance(v.default, dict) else v.default) for k, v in keys.items()}
           for section, keys in SCHEMA.items()}
    for section, values in raw.items():
        if section not in SCHEMA:
            continue  # the caller validates the non-threshold sections
        if not isinstance(values, Mapping):
            raise ConfigError(f"{source}: [{section}] must be a table")
        for key, value in values.items():
            where = f"{source}: [{section}] {key}"
            if key not in SCHEMA[section]:
                raise unknown_key_error(key, SCHEMA[section], f"{source}: [{section}]")
            out[section][key] = check_value(value, SCHEMA[section][key], where)
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


def margin_for(section: Mapping[str, Any], metric: str, task: str = "", *, kind: str = "margin") -> float:
    """The margin of ``metric`` (on ``task``) in a validated protocol section: ``<kind>s`` by
    ``"task.metric"``, then ``"metric"``, then ``"task"``, else the section's ``<kind>``
    (``kind="regression_margin"`` for the non-inferiority margins)."""
    margins = section.get(f"{kind}s", {})
    for key in (f"{task}.{metric}" if task else None, metric, task or None):
        if key and key in margins:
            return float(margins[key])
    return float(section.get(kind, 0.0))
