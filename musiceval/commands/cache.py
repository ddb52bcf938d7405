"""``musiceval cache [--cache-dir DIR] [--drop PATTERN ...]``: what the on-disk caches hold, and
dropping an encoder's embeddings.

::

    musiceval cache                                # rows and MB per encoder, the response cache's size
    musiceval cache --drop 'bertscore:*'           # free the BERTScore token rows (~420 MB for one model's CMI-Bench captions)

The embedding cache grows with every model and text it has seen (BERTScore keeps the token
embeddings of each text, tens of kB a text) and nothing is ever evicted by itself: a row is
reused as long as its encoder id is asked for. ``--drop`` takes shell patterns matched against the
encoder ids this command lists (or a listed key, for rows written before musiceval recorded the
ids), deletes their rows and gives the space back to the file system. A pattern that matches
nothing is an error naming what is there; the next run recomputes what was dropped.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from musiceval.cache_dir import EMBEDDINGS, RESPONSES, add_cache_dir_argument, cache_path
from musiceval.data.errors import InputError
from musiceval.encoders.embedding_cache import EmbeddingCache
from musiceval.commands.registry import register_command


def configure(parser: argparse.ArgumentParser) -> None:
    add_cache_dir_argument(parser)
    parser.add_argument("--drop", action="append", default=[], metavar="PATTERN",
                        help="delete the embeddings of every encoder id matching this shell pattern "
                             "(e.g. 'bertscore:*'; repeatable), then compact the file")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) if folder.is_dir() else 0


def _label(entry: dict) -> str:
    return entry["encoder"] if entry["encoder"] is not None else f"key {entry['key']} (written before encoder ids were recorded)"


def run(args: argparse.Namespace) -> int:
    folder = cache_path(args, EMBEDDINGS)
    cache = EmbeddingCache(folder)
    exists = cache.path.is_file()
    if args.drop and not exists:
        raise InputError(f"{cache.path}: no embedding cache there; nothing to drop (pass --cache-dir DIR)")
    dropped = []
    if args.drop:
        dropped = cache.drop(args.drop)
        if not dropped:
            there = ", ".join(_label(e) for e in cache.contents()) or "nothing"
            raise InputError(f"--drop {' '.join(args.drop)}: no encoder id matches; the cache holds {there}")
    entries = cache.contents() if exists else []
    cache.close()
    responses = cache_path(args, RESPONSES)
    out = {"embeddings": str(cache.path), "exists": exists, "file_bytes": _folder_bytes(folder),
           "encoders": entries, "dropped": dropped, "responses": str(responses), "responses_bytes": _folder_bytes(responses)}
    if args.json:
        print(json.dumps(out))
        return 0
    for entry in dropped:
        print(f"dropped {entry['rows']:,} rows, {entry['bytes'] / 1e6:,.1f} MB: {_label(entry)}")
    if not exists:
        print(f"{cache.path}: no embedding cache yet")
    else:
        print(f"{cache.path}: {out['file_bytes'] / 1e6:,.1f} MB on disk")
        for entry in entries:
            print(f"  {entry['rows']:>9,} rows {entry['bytes'] / 1e6:>10,.1f} MB  {_label(entry)}")
    print(f"{out['responses']}: {out['responses_bytes'] / 1e6:,.1f} MB of responses")
    return 0


register_command("cache", help="what the on-disk caches hold; drop an encoder's embeddings",
                 configure=configure, run=run)
