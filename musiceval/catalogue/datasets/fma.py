"""FMA (Defferrard et al. 2017) metadata for factual QA: top-level genres and the genre tree.

Layout of ``fma_metadata/`` (https://github.com/mdeff/fma):

- ``genres.csv``: ``genre_id, #tracks, parent, title, top_level`` (``parent`` 0 = a root);
- ``tracks.csv``: a two-row column header (``track``/``genre_top``, ``set``/``subset`` ...) plus a
  ``track_id`` row; ``set.subset`` is the smallest subset a track belongs to (small is part of
  medium, medium of large); ``track.genres`` is a list of genre ids such as ``[21, 811]``.

``fma_small`` has 8 balanced top-level genres with 1,000 clips each, so chance is about 1/8.
Audio lives at ``<audio_dir>/<first 3 digits>/<6-digit id>.mp3``; a track whose file is absent
gets ``audio=None`` and ``meta["missing_audio"]`` (the expected path), which the live path
(:mod:`musiceval.protocols.factual.live`) counts as a per-item failure.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from musiceval.records import Item, ItemFailure

if TYPE_CHECKING:
    from musiceval.extraction import Vocabulary

QUESTION = "What genre does this piece of music fall under?"
SUBSETS = {"small": {"small"}, "medium": {"small", "medium"}, "large": {"small", "medium", "large"}}


@dataclass(frozen=True)
class Genre:
    id: int
    title: str
    parent: int  # 0 for a top-level genre
    top_level: int


def _require(path: Path, what: str) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"FMA {what} {str(path)!r} not found; download fma_metadata.zip from https://github.com/mdeff/fma and pass its folder")
    return path


def load_fma_genres(path: str | Path) -> dict[int, Genre]:
    """Read ``genres.csv`` into ``genre_id -> Genre``."""
    import pandas as pd

    df = pd.read_csv(_require(Path(path), "genres.csv"))
    missing = {"genre_id", "parent", "title", "top_level"} - set(df.columns)
    if missing:
        raise ValueError(f"{path}: missing column(s) {sorted(missing)}; expected FMA's genres.csv")
    return {int(r.genre_id): Genre(int(r.genre_id), str(r.title), int(r.parent), int(r.top_level)) for r in df.itertuples()}


def genre_parents(genres: dict[int, Genre]) -> dict[str, str | None]:
    """``title -> parent title`` (None for a top-level genre): the tree for "same tree" scoring."""
    return {g.title: (genres[g.parent].title if g.parent in genres else None) for g in genres.values()}


def top_level_titles(genres: dict[int, Genre]) -> list[str]:
    return sorted(g.title for g in genres.values() if g.parent == 0)


def fma_genre_vocabulary(genres: dict[int, Genre]) -> "Vocabulary":
    """Every genre of the tree as a closed vocabulary (``fma-genres``), with the ``fma-top``
    synonyms for the top-level genres: what the "same node" / "same tree" scoring extracts."""
    from musiceval.extraction import Vocabulary, load_vocabulary

    top = load_vocabulary("fma-top")
    titles = list(dict.fromkeys(g.title for g in genres.values()))
    return Vocabulary(name="fma-genres", labels=tuple(titles), synonyms={t: tuple(top.synonyms.get(t, ())) for t in titles},
                      kind="genre")


def fma_genre_tree(genres: dict[int, Genre], vocab: "Vocabulary") -> dict[str, str | None]:
    """``child -> parent`` in ``vocab``'s canonical labels (for the metrics' ``hierarchy_labels``);
    genres the vocabulary lacks keep their FMA title."""
    def canon(title: str | None) -> str | None:
        return None if title is None else (vocab.canonical(title) or title)

    return {canon(child): canon(parent) for child, parent in genre_parents(genres).items()}


def load_fma(metadata_dir: str | Path, *, subset: str = "small", audio_dir: str | Path | None = None) -> tuple[list[Item], list[ItemFailure]]:
    """One :class:`Item` per track of ``subset`` labelled with its top-level genre.

    ``Item.meta['genres']`` holds the titles of all the track's genres (for "same node" scoring).
    Tracks without a top-level genre or with unreadable genre lists are failures.
    """
    import pandas as pd

    if subset not in SUBSETS:
        raise ValueError(f"subset must be one of {sorted(SUBSETS)}, got {subset!r}")
    root = Path(metadata_dir)
    genres = load_fma_genres(root / "genres.csv")
    tracks = pd.read_csv(_require(root / "tracks.csv", "tracks.csv"), index_col=0, header=[0, 1], low_memory=False)
    for col in (("set", "subset"), ("track", "genre_top"), ("track", "genres")):
        if col not in tracks.columns:
            raise ValueError(f"{root / 'tracks.csv'}: missing column {col}; expected FMA's two-row header")
    tracks = tracks[tracks[("set", "subset")].isin(SUBSETS[subset])]
    items: list[Item] = []
    failures: list[ItemFailure] = []
    for tid, row in tracks.iterrows():
        tid = int(tid)
        top = row[("track", "genre_top")]
        if not isinstance(top, str) or not top:
            failures.append(ItemFailure(str(tid), "track has no top-level genre (track.genre_top is empty)"))
            continue
        try:
            ids = ast.literal_eval(str(row[("track", "genres")]))
            all_genres = [genres[int(g)].title for g in ids if int(g) in genres]
        except (ValueError, SyntaxError, TypeError) as exc:
            failures.append(ItemFailure(str(tid), f"unreadable track.genres {row[('track', 'genres')]!r}: {exc}"))
            continue
        audio, meta = None, {"genres": all_genres, "subset": row[("set", "subset")]}
        if audio_dir is not None:
            p = Path(audio_dir) / f"{tid:06d}"[:3] / f"{tid:06d}.mp3"
            audio = str(p) if p.is_file() else None
            if audio is None:
                meta["missing_audio"] = str(p)
        items.append(Item(id=str(tid), question=QUESTION, audio=audio, labels=(top,), group=str(tid), meta=meta))
    return items, failures
