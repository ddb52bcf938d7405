"""Run fingerprints: tell model drift from scorer drift before comparing two runs.

A fingerprint has two sides:

- the **scorer side** (what must be identical for two runs to be comparable): per protocol the
  prompt template (sha256 of its text), the versions of the code that turns answers into scores
  (choice matcher, factual extractor and prompts, MIR parsers and compat rules, free-form metrics:
  the ``*_VERSION`` constants of those modules), the sha256 of every data file the scorer reads
  (vocabularies, hierarchies, rewrites: :mod:`musiceval.suite.files`), the datasets answers were
  generated from (catalogue id, revision, question-file and audio hashes, read from the
  ``musiceval.datasets.json`` that ``musiceval run`` writes beside its answer files), and the seed
  (it draws distractors and random-audio pairings, i.e. it decides the questions);
- the **model side** (what a comparison is about): model spec (credentials redacted), revision,
  decoding settings, backend, and the sha256 of each answer file (the model's output).

The musiceval version is recorded for the record only: a new release that does not bump a
component version scores the same way, so it does not block a comparison.

>>> a = fingerprint(protocols=["mir"], model="hf:qwen2-audio", revision="r1", seed=0)
>>> b = fingerprint(protocols=["mir"], model="hf:qwen2-audio", revision="r2", seed=0)
>>> check_comparable(a, b)
[]
>>> c = dict(a, scorer={**a["scorer"], "seed": 1})
>>> check_comparable(a, c)
['scorer.seed: 0 (A) != 1 (B)']
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from musiceval.catalogue.digests import file_sha256, text_sha256

def component_versions(protocols: Iterable[str] | None = None) -> dict[str, str]:
    """The current version of each scoring component of the named protocols (all registered ones
    by default, and for a name no protocol is registered under): what each protocol class declares
    (:meth:`musiceval.protocols.base.Protocol.component_versions`)."""
    from musiceval.protocols import PROTOCOLS

    known = dict(PROTOCOLS.items())
    names = [n for n in protocols if n in known] if protocols is not None else []
    out: dict[str, str] = {}
    for name in names or known:
        out.update(known[name].component_versions())
    return out


def _redact(spec: str) -> str:
    from musiceval.redact import redact

    return redact(spec)


def fingerprint(
    *,
    protocols: Sequence[str] | Mapping[str, Mapping[str, Any]] = (),
    prompts: Mapping[str, str] | None = None,
    data_files: Mapping[str, str | os.PathLike[str]] | Sequence[str | os.PathLike[str]] = (),
    model: str = "",
    revision: str = "",
    decoding: Mapping[str, Any] | None = None,
    seed: int | None = None,
    backend: str = "",
    answer_files: Mapping[str, str | os.PathLike[str]] | None = None,
    repeats: int = 1,
) -> dict[str, Any]:
    """The provenance record of a run (store it as ``meta["provenance"]`` of ``results.json``).

    Parameters
    ----------
    protocols : names, or ``{protocol: {"data": {name: path}, "scorer": {...}}}``
        The protocols the run scored; each is fingerprinted with the versions of its components
        (what the protocol class declares, :func:`component_versions`) and what its config decides
        of its scores (``scorer``: :meth:`musiceval.protocols.base.Protocol.scorer`, an LLM judge's
        identity).
    prompts : ``{protocol: template text}``
        Prompt templates; stored as sha256 so a changed wording refuses to compare.
    data_files : ``{name: path}`` or paths
        Dataset and answer-key files; stored as sha256 (names default to the file names).
    model, revision, decoding, backend
        The model side: spec (credentials redacted), revision, decoding settings, backend.
    seed
        The run seed (scorer side: it draws distractors and random-audio pairings).
    answer_files : ``{source id: path}``
        The model's answer files; stored as sha256 on the model side (two releases' answers
        always differ, so they never block a comparison).
    repeats
        Sampled answers per item (:mod:`musiceval.suite.repeats`); recorded on the model side
        when above 1.

    Each distinct file is read once, however many names it is recorded under.
    """
    import musiceval

    sha256 = _hasher()
    files = data_files.items() if isinstance(data_files, Mapping) else ((Path(p).name, p) for p in data_files)
    shared_data = {str(name): sha256(path) for name, path in files}
    per_protocol: dict[str, dict[str, Any]] = {}
    names = list(protocols)
    for name in names:
        spec = protocols[name] if isinstance(protocols, Mapping) else {}
        entry: dict[str, Any] = {"versions": component_versions([name])}
        if prompts and name in prompts:
            entry["prompt"] = text_sha256(prompts[name])
        if spec.get("data"):
            entry["data"] = {str(k): sha256(v) for k, v in spec["data"].items()}
        if spec.get("scorer"):
            entry["scorer"] = dict(spec["scorer"])
        per_protocol[name] = entry
    for name, template in (prompts or {}).items():
        per_protocol.setdefault(name, {"versions": component_versions([name])})
        per_protocol[name]["prompt"] = text_sha256(template)
    scorer: dict[str, Any] = {"protocols": per_protocol, "data": shared_data, "seed": seed}
    datasets = dataset_versions(answer_files or {})
    if datasets:
        scorer["datasets"] = datasets
    model_side = {"spec": _redact(model) if model else "", "revision": revision, "decoding": dict(decoding or {}),
                  "backend": backend, "answers": {str(k): sha256(v) for k, v in (answer_files or {}).items()}}
    if repeats != 1:
        model_side["repeats"] = int(repeats)
    return {"musiceval": musiceval.__version__, "scorer": scorer, "model": model_side}


#: written by :mod:`musiceval.catalogue.answer_files` beside generated answer files
DATASETS_SIDECAR = "musiceval.datasets.json"


def dataset_versions(answer_files: Mapping[str, str | os.PathLike[str]]) -> dict[str, Any]:
    """``{benchmark: {id, revision, questions_sha256, audio_sha256, ...}}`` of the answer files that
    were generated from catalogue benchmarks (their directory's :data:`DATASETS_SIDECAR`)."""
    import json

    out: dict[str, Any] = {}
    for path in answer_files.values():
        sidecar = Path(path).parent / DATASETS_SIDECAR
        try:
            known = json.loads(sidecar.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        entry = known.get(Path(path).name) if isinstance(known, dict) else None
        if isinstance(entry, dict) and entry.get("benchmark"):
            out[str(entry["benchmark"])] = {k: v for k, v in entry.items() if k != "benchmark"}
    return out


def _hasher() -> Callable[[str | os.PathLike[str]], str]:
    """:func:`file_sha256` remembering each file it read; an unreadable file is recorded as such
    (``"unreadable: <reason>"``) rather than stopping the run whose provenance it is."""
    seen: dict[str, str] = {}

    def sha256(path: str | os.PathLike[str]) -> str:
        key = os.path.abspath(os.fspath(path))
        if key not in seen:
            try:
                seen[key] = file_sha256(key)
            except OSError as exc:
                seen[key] = f"unreadable: {exc.strerror or exc}"
        return seen[key]

    return sha256


#: the parts of a fingerprint that must be objects, and of what (``None``: any values)
_SHAPE: tuple[tuple[str, str | None], ...] = (
    ("scorer", None), ("scorer.protocols", "object"), ("scorer.data", None), ("scorer.datasets", "object"),
    ("model", None), ("model.answers", None), ("model.decoding", None))


def fingerprint_problem(fp: Any, where: str = "meta.provenance") -> str | None:
    """What is wrong with a recorded fingerprint (``field '<where>.scorer.datasets' must be an object
    ...``), or None: :func:`check_comparable` reads these parts as objects."""
    if not isinstance(fp, Mapping):
        return f"field '{where}' must be an object, got {type(fp).__name__}"
    for path, values in _SHAPE:
        node: Any = fp
        for key in path.split("."):
            node = node.get(key) if isinstance(node, Mapping) else None
        if node is None:
            continue
        if not isinstance(node, Mapping):
            return f"field '{where}.{path}' must be an object, got {type(node).__name__}"
        for key, value in node.items() if values else ():
            if not isinstance(value, Mapping):
                return f"field '{where}.{path}.{key}' must be an object, got {type(value).__name__}"
    return None


def repeats_of(meta: Mapping[str, Any]) -> int:
    """The sampled answers per item of a run (:mod:`musiceval.suite.repeats`), from its
    ``results.json`` meta: ``meta.provenance.model.repeats``, else ``meta.repeats``, else 1."""
    fp = meta.get("provenance") or {}
    return int(model_side(fp).get("repeats") or meta.get("repeats") or 1)


def repeats_differ(label_a: str, ka: int, label_b: str, kb: int, *, per_item_mean: bool = True) -> str | None:
    """Why two runs that asked each item a different number of times do not compare as they are
    (None when they asked alike): one answer per item and the mean of K sampled answers are
    different estimators, and a repeat is an item of its own (``<id>#r<k>``), so their rows do not
    pair. The fix: runs with the same repeats, or each item's mean over its repeats
    (``musiceval compare --per-item-mean``, offered unless ``per_item_mean`` is False: the regression
    gates pair answers row by row; docs/regression-gates.md, "Runs with different repeats")."""
    if ka == kb:
        return None

    def times(k: int) -> str:
        return "once" if k == 1 else f"{k} times"

    more, k = (label_a, ka) if ka > kb else (label_b, kb)
    fewer = label_b if more == label_a else label_a
    return (f"{label_a} asked every item {times(ka)}, {label_b} {times(kb)} (model.repeats): one answer per item and "
            f"the mean of {max(ka, kb)} sampled answers are different estimates, and a repeat is an item of its own "
            f"(<id>#r<k>), so their rows do not pair; compare runs with the same repeats (ask {fewer}'s model again "
            f"with --repeats {k} at {more}'s temperature)"
            + (", or pass --per-item-mean to compare each item's mean over its repeats" if per_item_mean else ""))


def dataset_notes(label_a: str, fp_a: Mapping[str, Any], label_b: str, fp_b: Mapping[str, Any]) -> list[str]:
    """One note per dataset that one run's provenance records and the other's does not: their items
    cannot be shown to come from the same data (:func:`check_comparable` compares only datasets both record)."""
    a, b = scorer_side(fp_a).get("datasets") or {}, scorer_side(fp_b).get("datasets") or {}
    notes = []
    for name in sorted(set(a) ^ set(b)):
        has, lacks, entry = (label_a, label_b, a[name]) if name in a else (label_b, label_a, b[name])
        version = f"{entry.get('id') or name}{'@' + str(entry['revision']) if entry.get('revision') else ''}"
        notes.append(f"{lacks}: no version of dataset {name!r} recorded (meta.provenance.scorer.datasets), {has} records "
                     f"{version}: their {name} items cannot be shown to be the same data (answers recorded outside "
                     "`musiceval run` record no dataset; compare runs that both do)")
    return notes


def scorer_side(fp: Mapping[str, Any]) -> dict[str, Any]:
    """What must match for two runs to compare: prompts, component versions, data hashes, seed."""
    return dict(fp.get("scorer", {}))


def model_side(fp: Mapping[str, Any]) -> dict[str, Any]:
    """What a comparison is about: model spec, revision, decoding settings, backend, answer files."""
    return dict(fp.get("model", {}))


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}", v, out)
    else:
        out[prefix] = value


def check_comparable(fp_a: Mapping[str, Any], fp_b: Mapping[str, Any]) -> list[str]:
    """Scorer-side differences between two fingerprints, one readable line each (empty: comparable).

    Only protocols and data files both runs recorded are compared (a protocol scored by one run
    only has nothing to compare); the model side is ignored: it is what is being compared.
    """
    a, b = scorer_side(fp_a), scorer_side(fp_b)
    shared = sorted(set(a.get("protocols", {})) & set(b.get("protocols", {})))
    left: dict[str, Any] = {}
    right: dict[str, Any] = {}
    for name in shared:
        _flatten(f"scorer.protocols.{name}", a["protocols"][name], left)
        _flatten(f"scorer.protocols.{name}", b["protocols"][name], right)
    for name in sorted(set(a.get("data", {})) & set(b.get("data", {}))):
        left[f"scorer.data.{name}"], right[f"scorer.data.{name}"] = a["data"][name], b["data"][name]
    for name in sorted(set(a.get("datasets", {})) & set(b.get("datasets", {}))):  # one benchmark, two versions
        for key in ("id", "revision", "questions_sha256", "audio_sha256"):
            left[f"scorer.datasets.{name}.{key}"] = a["datasets"][name].get(key)
            right[f"scorer.datasets.{name}.{key}"] = b["datasets"][name].get(key)
    left["scorer.seed"], right["scorer.seed"] = a.get("seed"), b.get("seed")
    diffs = []
    for key in sorted(set(left) | set(right)):
        va, vb = left.get(key, "<absent>"), right.get(key, "<absent>")
        if va != vb:
            diffs.append(f"{key}: {_short(va)} (A) != {_short(vb)} (B)")
    return diffs


def _short(v: Any) -> str:
    s = str(v)
    return s[:12] + "..." if len(s) == 64 and all(c in "0123456789abcdef" for c in s) else s
