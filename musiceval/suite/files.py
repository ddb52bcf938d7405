"""The files a suite config makes a run read: what the run's provenance hashes.

Two kinds, kept apart because they play opposite roles when two runs are compared
(:mod:`musiceval.provenance`):

- **answer files** (:func:`answer_files`): one per declared source, of the model under test and of
  the ``[baseline]`` answers; a CMI-Bench outputs directory file by file (each task file is a
  source). They are the model's output, so they belong to the model side of the fingerprint: two
  releases always differ there.
- **data files the scorer reads** (:func:`data_files`): the answers options that name a file,
  :data:`DATA_FILE_OPTIONS` (closed vocabularies, a built-in one by its JSON file in the package;
  FMA ``genres.csv`` hierarchies; Skyline/Adversarial rewrites). Scorer side: keyed
  ``"<protocol>/<source label>/<option>"``, so the same source scored with another vocabulary or
  other rewrites does not compare.

Audio folders (``data_dir``) are not hashed: the recorded answers are scored from text, and hashing
every clip of a dataset would cost more than the run.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from musiceval.suite.config import AnswerSource, SuiteConfig


def _vocab_file(spec: Any) -> Path | None:
    from musiceval.extraction.vocabulary import BUILTIN, DATA_DIR

    if not isinstance(spec, (str, Path)) or not str(spec):
        return None  # a Vocabulary object given by a library caller: no file was read
    if str(spec) in BUILTIN:
        return DATA_DIR / "vocabularies" / f"{spec}.json"
    return Path(spec)


def _file(value: Any) -> Path | None:
    return Path(value) if isinstance(value, (str, Path)) and str(value) else None


#: answers options naming a data file the scorer reads -> the file (None when the value names none)
DATA_FILE_OPTIONS: dict[str, Callable[[Any], Path | None]] = {
    "vocab": _vocab_file,
    "hierarchy": _file,
    "rewrites": _file,
}


def _sources(suite: SuiteConfig) -> list[AnswerSource]:
    return [*suite.sources(), *suite.baseline_sources()]


def answer_files(suite: SuiteConfig) -> dict[str, Path]:
    """``{source id: answer file}`` of every declared source, baseline answers included."""
    return {source.id: source.path for source in _sources(suite)}


def data_files(suite: SuiteConfig) -> dict[str, Path]:
    """``{"<protocol>/<label>/<option>": file}`` of every data file a declared source's scorer reads,
    with the options the protocol receives (threshold defaults such as ``[factual] vocab`` included)."""
    from musiceval.suite.runs import protocol_options

    out: dict[str, Path] = {}
    for source in _sources(suite):
        options = protocol_options(source, suite)
        for option, find in DATA_FILE_OPTIONS.items():
            path = find(options.get(option))
            if path is None:
                continue
            key = f"{source.protocol}/{source.label}/{option}"
            if out.get(key, path) != path:  # two models' sources of one label read different files: keep both
                key = f"{key}@{source.model}"
            out[key] = path
    return out
