"""Closed label vocabularies for factual QA, with synonyms and the instrument normalisation.

A vocabulary is data, not code: ``data/vocabularies/<name>.json`` holds ``labels`` (canonical
label -> list of surface synonyms), ``ignore`` (surfaces that contain a label word but do not name
it, e.g. "bass drum"), ``kind`` (``instrument`` vocabularies also take every variant of
``data/instrument_normalisation.json``: piano and horn variants, contrabass / double bass -> bass)
and ``style_mentions_ignored`` (rule 8; off for composers, whose question asks about style).

A user vocabulary is a JSON file in the same layout or a text file with one label per line,
optionally followed by ``: synonym, synonym``.
"""
from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Mapping

DATA_DIR = Path(__file__).parent / "data"
BUILTIN = ("nsynth", "gtzan", "fma-top", "musicnet-instruments", "musicnet-composers")


def fold(text: str) -> str:
    """Lowercase, strip accents (``Dvořák`` -> ``dvorak``) and unify curly apostrophes."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    return text.replace("\u2019", "'").replace("\u2018", "'").lower()


def surface_key(text: str) -> str:
    """The matching form of a term: folded, hyphens and underscores as spaces, spaces collapsed."""
    return " ".join(fold(text).replace("-", " ").replace("_", " ").split())


@lru_cache(maxsize=1)
def instrument_normalisation() -> dict[str, str]:
    """variant (folded) -> canonical instrument, from ``data/instrument_normalisation.json``."""
    raw = json.loads((DATA_DIR / "instrument_normalisation.json").read_text("utf-8"))
    return {surface_key(v): canon for canon, variants in raw.items() if not canon.startswith("_") for v in variants}


@dataclass(frozen=True, eq=False)
class Vocabulary:
    """A closed label set; ``surfaces`` maps every folded surface form to its canonical label."""

    name: str
    labels: tuple[str, ...]
    synonyms: Mapping[str, tuple[str, ...]]
    kind: str = "generic"
    style_mentions_ignored: bool = True
    ignore: tuple[str, ...] = ()
    surfaces: Mapping[str, str] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not self.labels:
            raise ValueError(f"vocabulary {self.name!r} has no labels")
        surfaces: dict[str, str] = {}
        for label in self.labels:
            for s in (label, *self.synonyms.get(label, ())):
                surfaces.setdefault(surface_key(s), label)
        if self.kind == "instrument":
            for variant, canon in instrument_normalisation().items():
                if canon in surfaces:
                    surfaces.setdefault(variant, surfaces[canon])
        object.__setattr__(self, "surfaces", surfaces)

    @property
    def hash(self) -> str:
        """Content hash (labels, synonyms, ignore list, kind): a cache key part."""
        payload = json.dumps(
            {"labels": list(self.labels), "synonyms": {k: list(v) for k, v in sorted(self.synonyms.items())},
             "ignore": list(self.ignore), "kind": self.kind, "style": self.style_mentions_ignored},
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]

    def canonical(self, term: str) -> str | None:
        """The vocabulary label a term names (synonyms and instrument normalisation), or None."""
        return self.surfaces.get(surface_key(term))


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _shown(value: object) -> str:
    """A value as an error line quotes it: its repr, cut at 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _from_mapping(name: str, raw: object) -> Vocabulary:
    """A vocabulary from its JSON layout; ``ValueError`` names ``name`` and the field that is wrong."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"vocabulary {name!r}: expected a JSON object {{\"labels\": ...}}, got {type(raw).__name__}")
    labels = raw.get("labels")
    if _strings(labels):
        labels = {label: [] for label in labels}
    if not isinstance(labels, Mapping) or not labels:
        raise ValueError(f"vocabulary {name!r}: 'labels' must be a non-empty object label -> [synonyms]")
    bad = next((k for k, v in labels.items() if not k.strip() or not _strings(v)), None)
    if bad is not None:
        raise ValueError(f"vocabulary {name!r}: label {bad!r} needs a non-empty name and a list of synonym strings "
                         f"(field 'labels', got {_shown(labels[bad])})")
    if not _strings(raw.get("ignore", [])):
        raise ValueError(f"vocabulary {name!r}: 'ignore' must be a list of strings")
    return Vocabulary(
        name=str(raw.get("name", name)),
        labels=tuple(labels),
        synonyms={k: tuple(v) for k, v in labels.items()},
        kind=str(raw.get("kind", "generic")),
        style_mentions_ignored=bool(raw.get("style_mentions_ignored", True)),
        ignore=tuple(raw.get("ignore", ())),
    )


@lru_cache(maxsize=None)
def _builtin(name: str) -> Vocabulary:
    return _from_mapping(name, json.loads((DATA_DIR / "vocabularies" / f"{name}.json").read_text("utf-8")))


def load_vocabulary(spec: str | Path) -> Vocabulary:
    """A built-in vocabulary by name (``nsynth``, ``gtzan``, ``fma-top``, ``musicnet-instruments``,
    ``musicnet-composers``) or a JSON / text file path."""
    if str(spec) in BUILTIN:
        return _builtin(str(spec))
    path = Path(spec)
    if not path.is_file():
        raise FileNotFoundError(
            f"vocabulary {str(spec)!r} is neither a built-in ({', '.join(BUILTIN)}) nor a file; "
            "pass one of those names or a JSON/text vocabulary file"
        )
    try:
        text = path.read_text("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start}); re-encode the vocabulary file as UTF-8") from None
    if path.suffix == ".json":
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc}); see musiceval/extraction/vocabulary.py for the layout") from None
        except RecursionError:
            raise ValueError(f"{path}: nested too deeply to read; a vocabulary is {{\"labels\": {{label: [synonyms]}}}}") from None
        try:
            return _from_mapping(path.stem, raw)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}; see musiceval/extraction/vocabulary.py for the layout") from None
    labels: dict[str, list[str]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        label, _, syn = line.partition(":")
        labels[label.strip()] = [s.strip() for s in syn.split(",") if s.strip()]
    return _from_mapping(path.stem, {"labels": labels})
