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


class ConfigError(ValueError):
    """An invalid suite config: the message names the file, the key and the fix."""


@dataclass(frozen=True)
class Key:
    type: type | tuple[type, ...]
    default: Any
    help: str


_MARGINS = {
    "margin": Key((int, float), 0.0, "default margin of this protocol's gates, in the metric's own units"),
    "margins": Key(dict, {}, "per 'metric', 'task' or 'task.metric' margins (most specific wins)"),
    "min_parse_rate": Key((int, float), 0.0, "parse-rate gate: share of answers the parser must read"),
    "listens_margin": Key((int, float), 0.0, "'the model listens' gate: Correct must beat the best control by this much"),
    "regression_margin": Key((int, float), 0.02, "non-inferiority to the baseline: the largest drop tolerated, in the metric's units"),
    "regression_margins": Key(dict, {}, "per 'metric', 'task' or 'task.metric' regression margins (most specific wins)"),
}

#: section -> key -> Key. Sections [[model]], [checks], [release], [baseline] are validated in
#: musiceval.suite.config (their keys are not thresholds).
SCHEMA: dict[str, dict[str, Key]] = {
    "defaults": {
        "alpha": Key(float, 0.05, "two-sided confidence level of every interval is 1 - alpha"),
        "n_resamples": Key(int, 10_000, "bootstrap resamples"),
        "ci_method": Key(str, "auto", "interval method: auto (chosen per data shape, calibrated), bca or percentile"),
        "power": Key(float, 0.8, "power at which every regression gate states its minimum detectable effect"),
        "adjust": Key(str, "holm", "family-wise control across the regression gates of a run: holm or bh"),
        "inconclusive": Key(str, "fail", "a required gate that is INCONCLUSIVE: fail (verdict INCONCLUSIVE, exit 1) "
                                          "or xfail (the same verdict, exit 0)"),
        "min_coverage": Key((int, float), 1.0, "coverage gate: share of the benchmark's items the answers must cover"),
        "max_unreadable": Key(int, 0, "readability gate: unreadable lines (torn JSON, wrong types) tolerated per file"),
        "self_checks": Key(bool, False, "run the suite's self-checks (tiny live model, text encoders) with the gates"),
    },
    "choice": {
        **_MARGINS,
        "min_parse_rate": Key((int, float), 0.90, "instruction-following rate: share of answers mapped to an option"),
        "matcher": Key(str, "muchomusic", "answer matcher: muchomusic (the published rule) or strict"),
        "runs": Key(int, 3, "live runs with different option shuffles (averaged)"),
        "n_examples": Key(int, 1, "live in-context examples per prompt"),
    },
    "factual": {
        **_MARGINS,
        "min_parse_rate": Key((int, float), 0.5, "share of answers naming at least one vocabulary label"),
        "n_permutations": Key(int, 2000, "permutations of predictions across items for the chance level of F1"),
        "vocab": Key(str, "", "default closed vocabulary when an answers entry gives none"),
        "fma_small_chance": Key(float, 0.125, "uniform guessing among FMA-small's 8 balanced genres (reported)"),
        "live_max_items": Key(int, 0, "live gates: ask at most this many items per dataset (0 = all)"),
        "prompt_variant": Key(str, "paper", "live question phrasing: paper or among"),
        "live_chunks": Key(str, "any", "live chunked answers: any or majority"),
        "live_true_false_max_items": Key(int, 50, "live true/false gate: items asked"),
    },
    "freeform": {
        **_MARGINS,
        "min_parse_rate": Key((int, float), 0.9, "share of non-empty answers"),
        "random_draws": Key(int, 1, "independent Random derangements, averaged per item"),
        "sentence_encoder": Key(str, "minilm", "encoder of sentence_cosine"),
        "bertscore_model": Key(str, "minilm", "BERTScore model"),
        "bertscore_layers": Key(int, 6, "BERTScore layer"),
        "clap": Key(str, "", "CLAP hub id, directory or LAION .pt (default $MUSICEVAL_CLAP or laion/larger_clap_music)"),
        "metrics": Key(list, [], "metrics scored (default: every registered free-form metric)"),
        "live_questions": Key(str, "audio/freeform.jsonl", "live questions under the fixtures dir"),
        "live_max_tokens": Key(int, 128, "live answer length for a real model"),
    },
    "mir": {
        **_MARGINS,
        "min_parse_rate": Key((int, float), 0.5, "share of responses the task's parser reads"),
        "compat": Key(str, "", "'' (corrected rules), cmi-bench (the toolkit's rules, quirks included) or cmi-bench@35235cb / "
                            "cmi-bench@2cafca5 (evaluate.py at that commit)"),
        "encoder": Key(str, "minilm", "text encoder of the tagging tasks"),
        "tagging_items": Key(int, 0, "score only the first N records of tagging files (0 = all; a cap is printed in the verdict)"),
        "captioning_items": Key(int, 0, "score only the first N records of captioning files (0 = all; a cap is printed in the verdict)"),
        "bertscore_model": Key(str, "minilm", "captioning BERTScore model"),
        "bertscore_layers": Key(int, 6, "captioning BERTScore layer"),
        "live_max_tokens": Key(int, 128, "live answer length for a real model"),
        "live_dataset_tasks": Key(list, ["GTZAN", "GS_key", "Nsynth_instrument", "Nsynth_pitch", "gtzan_beat"],
                                  "live tasks on a downloaded CMI-Bench"),
        "live_dataset_items": Key(int, 20, "live instructions per task on a downloaded CMI-Bench"),
    },
    "text_encoders": {
        **_MARGINS,
        "max_triplets": Key(int, 2000, "seeded sample of triplets per subtree"),
        "prompts": Key(list, [0, 4, 8, 12, 16], "indices into the 20 paper prompts ([] = all)"),
        "encoders": Key(list, ["minilm", "clap:"], "text encoders probed (those the metrics use)"),
    },
    "live": {
        "min_answered_rate": Key((int, float), 1.0, "share of (item, condition) pairs that must get a response"),
        "tempo_tolerance": Key(float, 0.04, "relative tempo tolerance (MIREX Accuracy 1)"),
    },
}


def _check_type(value: Any, key: Key, where: str) -> Any:
    if isinstance(value, bool) and bool not in (key.type if isinstance(key.type, tuple) else (key.type,)):
        raise ConfigError(f"{where}: expected {_type_name(key.type)}, got a boolean ({value!r})")
    if not isinstance(value, key.type):
        if key.type is float and isinstance(value, int):
            return float(value)
        raise ConfigError(f"{where}: expected {_type_name(key.type)}, got {type(value).__name__} ({value!r})")
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
            out[section][key] = _check_type(value, SCHEMA[section][key], where)
        for table in ("margins", "regression_margins"):
            for key, value in out[section].get(table, {}).items():
                _check_type(value, Key((int, float), 0.0, ""), f"{source}: [{section}] {table}.{key}")
    if out["defaults"]["inconclusive"] not in ("xfail", "fail"):
        raise ConfigError(f"{source}: [defaults] inconclusive must be 'xfail' or 'fail'")
    if out["defaults"]["ci_method"] not in ("auto", "bca", "percentile"):
        raise ConfigError(f"{source}: [defaults] ci_method must be 'auto', 'bca' or 'percentile'")
    if out["defaults"]["adjust"] not in ("holm", "bh"):
        raise ConfigError(f"{source}: [defaults] adjust must be 'holm' or 'bh' (Benjamini-Hochberg)")
    if not 0 < out["defaults"]["alpha"] < 1:
        raise ConfigError(f"{source}: [defaults] alpha must be between 0 and 1")
    if not 0 <= out["defaults"]["min_coverage"] <= 1:
        raise ConfigError(f"{source}: [defaults] min_coverage must be a share between 0 and 1")
    if out["defaults"]["max_unreadable"] < 0:
        raise ConfigError(f"{source}: [defaults] max_unreadable must be 0 or more")
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
