"""The suite config: the model(s) under test, their answers, thresholds, check rules and release profile.

Found, in order: ``--musiceval-config FILE``; ``musiceval.toml`` in the pytest rootdir;
``[tool.musiceval]`` in the rootdir's ``pyproject.toml``; else built-in defaults with no model
declared. The embedded default of this repository is ``musiceval.toml`` (the demo). Layout::

    [[model]]                                  # one per model under test (a team declares one)
    name = "our-model-v2"
    live = "hf:/models/ours"                   # optional: a live spec for the live gates
    args = { dtype = "bfloat16" }              # optional: model arguments of the live spec
    # repeats = 5                              # optional: sampled answers per item the live spec is asked
                                               # (with answers only: how many their rows hold, recorded)

    [[model.answers]]                          # answer files in the benchmarks' native layouts
    protocol = "choice"                        # choice | factual | freeform | mir
    file = "runs/v2/muchomusic.jsonl"          # or dir = "runs/v2/cmi-bench" (mir: <model>_<task>.jsonl, one model)
    # format = "dasheng-choice"                # detected from the content when absent
    # label, and protocol options: vocab, matcher, rewrites, compat ...

    [choice]                                   # thresholds per protocol (musiceval.suite.schema)
    min_parse_rate = 0.9

    [checks."mir/beats_chance/*"]              # promote a finding to a gate, or back, with a margin
    gate = true
    margin = 0.02
    reason = "why"

    [release]
    required = ["choice/*", "*/listens/*"]     # gates a release needs (default: every gate)
    [release.allow_skip]                       # required gates that may skip, each with the reason the
    "freeform/*/clap_*" = "no CLAP weights on the CI runner"   # verdict line repeats

    [baseline]
    results = "results/v1"                     # the previous release's results dir: regression gates
    # or: name = "v1" and [[baseline.answers]] tables like a model's answers

Every key is validated when the config is loaded (:class:`~musiceval.suite.schema.ConfigError`
naming the key and the closest known one). Paths are relative to the config file.

Check ids (what ``[checks]`` and ``[release]`` patterns match, with :mod:`fnmatch`) read like
paths: ``<protocol>/<check>/<model>/<source label>/<metric>[/<what>]``, e.g.
``choice/beats_chance/our-model-v2/muchomusic/accuracy`` (the one chance gate of a metric).
"""
from __future__ import annotations

import fnmatch
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from musiceval.extraction.vocabulary import BUILTIN as BUILTIN_VOCABULARIES
from musiceval.human_baselines import read_human_baselines
from musiceval.keys import CheckRule
from musiceval.ranges import NON_NEGATIVE
from musiceval.suite.schema import ConfigError, answer_options, check_value, schema, unknown_key_error, validate_thresholds

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_FILE = "musiceval.toml"
_ANSWER_KEYS = ("protocol", "file", "dir", "format", "label")
_MODEL_KEYS = ("name", "live", "args", "repeats", "answers")
_OTHER_SECTIONS = ("model", "checks", "release", "baseline", "benchmarks")


@dataclass(frozen=True)
class AnswerSource:
    """One answer set of one model for one protocol: the unit the gates are parametrized over."""

    model: str
    protocol: str
    path: Path
    label: str
    format: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    #: the CMI-Bench task of a MIR source (from the file name)
    task: str = ""

    @property
    def id(self) -> str:
        return f"{self.model}/{self.protocol}/{self.label}"


@dataclass(frozen=True)
class ModelDecl:
    name: str
    live: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    answers: tuple[Mapping[str, Any], ...] = ()
    #: sampled answers per item asked of the live spec (:mod:`musiceval.suite.repeats`)
    repeats: int = 1


@dataclass
class SuiteConfig:
    path: Path | None
    root: Path
    models: tuple[ModelDecl, ...] = ()
    thresholds: dict[str, dict[str, Any]] = field(default_factory=lambda: validate_thresholds({}, "defaults"))
    checks: tuple[CheckRule, ...] = ()
    required: tuple[str, ...] = ()
    baseline: Mapping[str, Any] = field(default_factory=dict)
    #: catalogue benchmarks the live model is asked (``benchmarks = [...]``, :mod:`musiceval.catalogue`)
    benchmarks: tuple[str, ...] = ()
    #: ``[release] allow_skip``: check-id pattern -> why a skipped gate it matches is not required
    allow_skip: Mapping[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return str(self.path) if self.path else "built-in defaults"

    # ------------------------------------------------------------------ sources

    def sources(self, protocol: str | None = None) -> list[AnswerSource]:
        """Every declared answer set (of ``protocol``), a MIR directory expanded per task file."""
        out: list[AnswerSource] = []
        for model in self.models:
            for entry in model.answers:
                if protocol is not None and entry["protocol"] != protocol:
                    continue
                out.extend(_expand(model.name, entry, self.root))
        return out

    def live_models(self) -> list[ModelDecl]:
        return [m for m in self.models if m.live]

    def baseline_sources(self) -> list[AnswerSource]:
        """The previous release's answer sets (``[baseline] answers``), joined to the model's by
        protocol and source label."""
        decl = self.baseline.get("model")
        return [s for entry in decl.answers for s in _expand(decl.name, entry, self.root)] if decl else []

    # ------------------------------------------------------------------ check rules

    def rule(self, check_id: str) -> CheckRule | None:
        """The last ``[checks]`` rule whose pattern matches ``check_id`` (file order)."""
        found = None
        for rule in self.checks:
            if fnmatch.fnmatchcase(check_id, rule.pattern):
                found = rule
        return found

    def is_required(self, check_id: str) -> bool:
        return any(fnmatch.fnmatchcase(check_id, p) for p in self.required)


def _expand(model: str, entry: Mapping[str, Any], root: Path) -> list[AnswerSource]:
    options = {k: v for k, v in entry.items() if k not in _ANSWER_KEYS}
    for key in ("rewrites", "hierarchy", "data_dir"):
        if isinstance(options.get(key), str) and options[key]:
            options[key] = str((root / options[key]))
    vocab = options.get("vocab")
    if isinstance(vocab, str) and vocab not in BUILTIN_VOCABULARIES and (root / vocab).is_file():
        options["vocab"] = str(root / vocab)
    protocol, fmt = entry["protocol"], entry.get("format")
    if "dir" in entry:
        return [AnswerSource(model, protocol, e.path, e.label, fmt, options, task=e.task)
                for e in _outputs_dir(root / entry["dir"], f"model {model!r}")]
    path = root / entry["file"]
    from musiceval.protocols import PROTOCOLS

    cls = PROTOCOLS.get(protocol)
    task = cls.task_of(path)
    label = str(entry.get("label") or cls.label_of(path) or path.stem)
    return [AnswerSource(model, protocol, path, label, fmt, options, task=task)]


# ----------------------------------------------------------------------------- loading


def find_config(explicit: str | Path | None, root: Path) -> tuple[Path | None, dict[str, Any]]:
    """``(path, raw table)`` of the config in force (see the module docstring)."""
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(f"suite config {path} not found; pass --musiceval-config with an existing musiceval.toml")
        return path, read_toml(path)
    path = root / CONFIG_FILE
    if path.is_file():
        return path, read_toml(path)
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        table = read_toml(pyproject).get("tool", {}).get("musiceval")
        if table is not None:
            return pyproject, table
    return None, {}


def read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix the file") from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise ConfigError(f"{path}: arrays or tables nested too deeply to read; a suite config needs a few levels, "
                          "flatten the file") from None


def load_config(explicit: str | Path | None = None, root: str | Path = ".", *,
                thresholds_file: str | Path | None = None) -> SuiteConfig:
    """Find, read and validate the suite config (``thresholds_file`` overlays threshold sections)."""
    root = Path(root)
    path, raw = find_config(explicit, root)
    if thresholds_file:
        extra = read_toml(Path(thresholds_file)) if Path(thresholds_file).is_file() else None
        if extra is None:
            raise ConfigError(f"thresholds file {thresholds_file} not found; pass an existing TOML file")
        raw = {**raw, **extra}
    return parse_config(raw, where=str(path) if path else "built-in defaults",
                        base=path.parent if path else root, path=path)


def parse_config(raw: Mapping[str, Any], *, where: str, base: Path, path: Path | None = None) -> SuiteConfig:
    top_level = (*schema(), *_OTHER_SECTIONS)
    for key in raw:
        if key not in top_level:
            plugin = (f"; a [{key}] section of a protocol from another package needs that package installed in "
                      "this environment (it registers the protocol under the musiceval.protocols entry point, "
                      "docs/extending.md)") if isinstance(raw[key], Mapping) else ""
            raise unknown_key_error(key, top_level, f"{where}: top level", otherwise=plugin)
    thresholds = validate_thresholds(raw, where)
    models = _models(raw.get("model", []), where, base)
    checks = _checks(raw.get("checks", {}), where)
    release = raw.get("release", {})
    if not isinstance(release, Mapping):
        raise ConfigError(f"{where}: [release] must be a table")
    for key in release:
        if key not in ("required", "allow_skip"):
            raise unknown_key_error(key, ("required", "allow_skip"), f"{where}: [release]")
    required = release.get("required", [])
    if not isinstance(required, list) or not all(isinstance(p, str) for p in required):
        raise ConfigError(f"{where}: [release] required must be a list of check-id patterns")
    allow_skip = release.get("allow_skip", {})
    if not isinstance(allow_skip, Mapping) or not all(isinstance(r, str) and r.strip() for r in allow_skip.values()):
        raise ConfigError(f'{where}: [release.allow_skip] must map check-id patterns to reasons, e.g. '
                          '"freeform/*/clap_*" = "no CLAP weights on the CI runner"')
    baseline = dict(raw.get("baseline", {}) or {})
    if not isinstance(raw.get("baseline", {}), Mapping):
        raise ConfigError(f"{where}: [baseline] must be a table")
    for key in baseline:
        if key not in ("results", "name", "answers"):
            raise unknown_key_error(key, ("results", "name", "answers"), f"{where}: [baseline]")
    if ("results" in baseline) == ("answers" in baseline) and baseline:
        raise ConfigError(f"{where}: [baseline] needs exactly one of 'results' (a previous run's results dir) or "
                          "'answers' (the previous release's answer files, with a 'name')")
    if "answers" in baseline:
        decl = _models([{"name": baseline.get("name", "baseline"), "answers": baseline["answers"]}], f"{where}: [baseline]", base)[0]
        baseline["model"] = decl
    if "results" in baseline:
        results = base / str(baseline["results"])
        if not (results / "results.json").is_file():
            raise ConfigError(f"{where}: [baseline] results: {results} holds no results.json; point it at the results "
                              "directory of the previous release's run")
        baseline["results"] = str(results)
    benchmarks = raw.get("benchmarks", [])
    if not isinstance(benchmarks, list) or not all(isinstance(b, str) for b in benchmarks):
        raise ConfigError(f"{where}: 'benchmarks' must be a list of catalogue names, e.g. [\"muchomusic\", \"nsynth\"] "
                          "(`musiceval data list`)")
    return SuiteConfig(path, base, models, thresholds, checks, tuple(required), dict(baseline), tuple(benchmarks),
                       dict(allow_skip))


def _models(raw: Any, where: str, base: Path) -> tuple[ModelDecl, ...]:
    entries = [raw] if isinstance(raw, Mapping) else raw
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: [model] must be a table or an array of tables ([[model]])")
    out, names = [], set()
    for k, entry in enumerate(entries):
        at = f"{where}: model #{k + 1}"
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{at}: must be a table")
        for key in entry:
            if key not in _MODEL_KEYS:
                raise unknown_key_error(key, _MODEL_KEYS, at)
        name = entry.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[^/\[\]*?\n]{1,80}", name or ""):
            raise ConfigError(f"{at}: 'name' must be a short label without '/', '[', ']', '*', '?' (got {name!r})")
        if name in names:
            raise ConfigError(f"{at}: model name {name!r} is declared twice")
        names.add(name)
        live = entry.get("live")
        if live is not None and not isinstance(live, str):
            raise ConfigError(f"{at}: 'live' must be a model spec string such as 'hf:Qwen/Qwen2-Audio-7B-Instruct'")
        args = entry.get("args", {})
        if not isinstance(args, Mapping):
            raise ConfigError(f"{at}: 'args' must be a table of model arguments")
        repeats = entry.get("repeats", 1)
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
            raise ConfigError(f"{at}: 'repeats' must be a whole number >= 1, the sampled answers per item of its live "
                              f"spec (got {repeats!r}); 1 asks each item once")
        answers = entry.get("answers", [])
        if isinstance(answers, Mapping):
            answers = [answers]
        out.append(ModelDecl(name, live, dict(args), tuple(_answers(a, f"{at} ({name}) answers #{j + 1}", base)
                                                           for j, a in enumerate(answers)), repeats))
    return tuple(out)


def _answers(entry: Any, at: str, base: Path) -> dict[str, Any]:
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{at}: must be a table with protocol and file (or dir)")
    protocol = entry.get("protocol")
    options = answer_options()
    if protocol not in options:
        from musiceval.protocols.base import PROTOCOLS, reads_no_answer_file

        if isinstance(protocol, str) and protocol in PROTOCOLS:
            raise ConfigError(f"{at}: {reads_no_answer_file(PROTOCOLS.get(protocol))}")
        raise ConfigError(f"{at}: 'protocol' must be one of {', '.join(options)} (got {protocol!r}); a protocol from "
                          "another package is registered with @register_protocol (docs/extending.md)")
    allowed = (*_ANSWER_KEYS, *options[protocol])
    for key in entry:
        if key not in allowed:
            raise unknown_key_error(key, allowed, at)
        if key in options[protocol]:
            check_value(entry[key], options[protocol][key], f"{at}: {key}")
    if "human_baselines" in entry:
        try:
            read_human_baselines(entry["human_baselines"], f"{at}: human_baselines")
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    for key in ("file", "dir", "format", "label"):
        if key in entry and not isinstance(entry[key], str):
            raise ConfigError(f"{at}: '{key}' must be a string, got {type(entry[key]).__name__} ({entry[key]!r})")
    if ("file" in entry) == ("dir" in entry):
        raise ConfigError(f"{at}: give exactly one of 'file' or 'dir'")
    if "dir" in entry and protocol != "mir":
        raise ConfigError(f"{at}: 'dir' (a CMI-Bench outputs directory) applies to protocol 'mir' only; use 'file'")
    target = base / str(entry.get("file") or entry.get("dir"))
    if "file" in entry and not target.is_file():
        raise ConfigError(f"{at}: answer file {target} not found; fix 'file' (paths are relative to the config file)")
    if "dir" in entry and not target.is_dir():
        raise ConfigError(f"{at}: answers directory {target} not found; fix 'dir'")
    if "dir" in entry:
        _outputs_dir(target, at)
    _check_option_paths(entry, at, base)
    return dict(entry)


#: answers options naming a path relative to the config, and what it must be
_OPTION_PATHS = {"rewrites": ("file", Path.is_file), "hierarchy": ("file", Path.is_file), "data_dir": ("directory", Path.is_dir)}


def _check_option_paths(entry: Mapping[str, Any], at: str, base: Path) -> None:
    """Files and folders an answers entry names exist (read at start-up for the provenance)."""
    for key, (what, exists) in _OPTION_PATHS.items():
        if entry.get(key) and not exists(base / entry[key]):
            raise ConfigError(f"{at}: {key} {what} {base / entry[key]} not found; fix '{key}' (paths are relative to the config file)")
    vocab = entry.get("vocab")
    if vocab and vocab not in BUILTIN_VOCABULARIES and not (base / vocab).is_file():
        raise ConfigError(f"{at}: vocab {vocab!r} is neither a built-in ({', '.join(BUILTIN_VOCABULARIES)}) nor a file "
                          f"({base / vocab} not found); fix 'vocab' (paths are relative to the config file)")
    if vocab and vocab not in BUILTIN_VOCABULARIES:
        _check_vocabulary(base / vocab, at)


def _check_vocabulary(path: Path, at: str) -> None:
    """A vocabulary file an answers entry names is read now: a malformed one stops the session at
    start-up naming the file and the field, not every test of the source at setup."""
    from musiceval.extraction.vocabulary import load_vocabulary

    try:
        load_vocabulary(path)
    except (ValueError, OSError) as exc:
        text = str(exc) if str(path.name) in str(exc) else f"{path}: {exc}"
        raise ConfigError(f"{at}: vocab file {text}; fix the file or 'vocab'") from None


def _outputs_dir(folder: Path, at: str) -> list[Any]:
    """The task files of one model's CMI-Bench outputs directory; several models' files are a
    :class:`ConfigError` (:func:`musiceval.data.cmibench.outputs_dir`)."""
    from musiceval.data.cmibench import CmiBenchFormatError, outputs_dir

    try:
        return outputs_dir(folder)
    except CmiBenchFormatError as exc:
        raise ConfigError(f"{at}: {exc}") from None


def _checks(raw: Any, where: str) -> tuple[CheckRule, ...]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f'{where}: [checks] must be a table of [checks."<pattern>"] tables')
    out = []
    for pattern, rule in raw.items():
        at = f'{where}: [checks."{pattern}"]'
        if not isinstance(rule, Mapping):
            raise ConfigError(f"{at}: must be a table with gate, margin and reason")
        for key in rule:
            if key not in ("gate", "margin", "reason"):
                raise unknown_key_error(key, ("gate", "margin", "reason"), at)
        gate, margin, reason = rule.get("gate"), rule.get("margin"), rule.get("reason", "")
        if gate is not None and not isinstance(gate, bool):
            raise ConfigError(f"{at}: 'gate' must be true (a release gate) or false (a finding)")
        if margin is not None and margin not in NON_NEGATIVE:
            raise ConfigError(f"{at}: 'margin' must be {NON_NEGATIVE.describe()} in the metric's units, got {margin!r}")
        if not isinstance(reason, str):
            raise ConfigError(f"{at}: 'reason' must be a string")
        if gate is False and not reason.strip():
            raise ConfigError(f"{at}: a gate turned into a finding needs a 'reason' (the report shows it)")
        out.append(CheckRule(pattern, gate, float(margin) if margin is not None else None, reason))
    return tuple(out)


def apply_options(config: SuiteConfig, options: list[str]) -> SuiteConfig:
    """``config`` with ``PROTOCOL.KEY=VALUE`` settings applied (``--musiceval-option``): a threshold
    key of the section (``choice.min_parse_rate=0.95``, ``defaults.alpha=0.01``) overlays the section,
    an answers option (``factual.vocab=nsynth``, ``mir.compat=cmi-bench``) goes to every answers entry
    of that protocol. ``VALUE`` is read as a TOML value when it is one (``0.95``, ``true``,
    ``["a", "b"]``), else as a string. Unknown sections and keys raise :class:`ConfigError`."""
    thresholds = {section: dict(values) for section, values in config.thresholds.items()}
    raw: dict[str, dict[str, Any]] = {}
    per_answers: dict[str, dict[str, Any]] = {}
    sections, declared = schema(), answer_options()
    for option in options:
        key, sep, text = option.partition("=")
        section, dot, name = key.strip().partition(".")
        if not sep or not dot or not name:
            raise ConfigError(f"--musiceval-option {option!r}: expected PROTOCOL.KEY=VALUE, e.g. factual.vocab=nsynth")
        try:
            value = tomllib.loads(f"v = {text}")["v"]
        except (tomllib.TOMLDecodeError, RecursionError):
            value = text
        in_schema = section in sections and name in sections[section]
        in_answers = section in declared and name in declared[section]
        if in_schema:
            raw.setdefault(section, {})[name] = value
        if in_answers:
            per_answers.setdefault(section, {})[name] = value
        if in_schema or in_answers:
            continue
        if section not in sections:
            raise unknown_key_error(section, sections, f"--musiceval-option {option!r}: section")
        else:
            known = sorted({*sections[section], *declared.get(section, ())})
            raise unknown_key_error(name, known, f"--musiceval-option {option!r}: [{section}]")
    if raw:
        overlay = validate_thresholds(raw, "--musiceval-option")
        for section, values in raw.items():
            for name in values:
                thresholds[section][name] = overlay[section][name]
    models = tuple(ModelDecl(m.name, m.live, m.args, tuple(
        _answers({**a, **per_answers.get(a["protocol"], {})}, f"--musiceval-option ({m.name})", config.root)
        for a in m.answers), m.repeats) for m in config.models)
    return replace(config, models=models, thresholds=thresholds)


def config_for_answers(path: str | Path, *, protocol: str | None = None, name: str | None = None,
                       base: SuiteConfig | None = None) -> SuiteConfig:
    """A config declaring one model whose answers are ``path`` (``--musiceval-model recorded:PATH``):
    the protocol is detected from the content (a directory is a CMI-Bench outputs directory)."""
    path = Path(path)
    if path.is_dir():
        entry: dict[str, Any] = {"protocol": "mir", "dir": str(path.resolve())}
        _outputs_dir(path, f"--musiceval-model recorded:{path}")
        label = name or path.name
    elif path.is_file():
        from musiceval.data.formats import FormatError, detect_format

        try:
            fmt = detect_format(path, protocol)
        except FormatError as exc:
            raise ConfigError(str(exc)) from None
        entry = {"protocol": protocol or fmt.protocols[0], "file": str(path.resolve()), "format": fmt.name}
        label = name or _model_name_of(path) or path.stem
    else:
        raise ConfigError(f"--musiceval-model recorded:{path}: no such file or directory; pass an answer file "
                          "(MuChoMusic, MusicQA, NSynth/FMA factual, musiceval JSONL) or a CMI-Bench outputs directory")
    base = base or SuiteConfig(None, Path("."))
    model = ModelDecl(re.sub(r"[/\[\]*?\n]", "_", label)[:80], answers=(entry,))
    return SuiteConfig(base.path, base.root, (model,), base.thresholds, base.checks, base.required, base.baseline)


def _model_name_of(path: Path) -> str | None:
    """The ``model_name`` field of the first JSON-lines record, when the file carries one."""
    import json

    try:
        with path.open("rb") as fh:
            first = fh.readline(1 << 16)
        rec = json.loads(first)
    except (OSError, ValueError, RecursionError):
        return None
    name = rec.get("model_name") if isinstance(rec, dict) else None
    return name if isinstance(name, str) and name.strip() else None
