"""``musiceval setup [--nltk-data DIR] [--wordnet-from FILE_OR_DIR] [--check]``: fetch what musiceval
needs at run time, where it looks for it: today WordNet 3.0 for METEOR.

::

    musiceval setup                             # into <sys.prefix>/nltk_data: system package, else nltk's downloader
    musiceval setup --wordnet-from wordnet.zip  # offline: nltk's package, or a folder of WordNet 3.0 dict files
    musiceval setup --check                     # exit 0 when in place, 1 when not; installs nothing

A thin adapter over :func:`musiceval.wordnet_setup.install` (sources, their order, the checks and
the verification are documented there). It never installs system packages: it names them.
Exit codes: 0 installed or already in place; 1 ``--check`` found it missing, or what was
installed does not load; 2 nothing to install from, or a bad ``--wordnet-from`` (one line naming
the fixes).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from musiceval import wordnet_setup
from musiceval.commands.registry import register_command

EPILOG = (
    "WordNet 3.0 goes to <nltk data dir>/corpora/wordnet: --nltk-data DIR, else the first entry of $NLTK_DATA, "
    "else <sys.prefix>/nltk_data (searched by nltk without NLTK_DATA set). Sources, the first that applies: "
    "already installed where nltk finds it (nothing copied); --wordnet-from; the system package (Debian's "
    "wordnet-base + wordnet-sense-index in /usr/share/wordnet); nltk's downloader (online). The installed "
    "copy is then loaded in a fresh interpreter and METEOR must match a synonym pair. Never installs system "
    "packages. Exit codes: 0 in place; 1 --check found it missing, or it does not load; 2 nothing to install from.")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = "Install what musiceval needs at run time: WordNet 3.0, which METEOR needs."
    parser.epilog = EPILOG
    parser.add_argument("--nltk-data", type=Path, metavar="DIR",
                        help="nltk data dir to install into (default: $NLTK_DATA's first entry, else "
                             "<sys.prefix>/nltk_data); nltk searches it only when it is on nltk.data.path")
    parser.add_argument("--wordnet-from", type=Path, metavar="FILE_OR_DIR",
                        help="install from this local copy only: nltk's wordnet.zip, or a folder holding the "
                             "WordNet 3.0 dict files (e.g. /usr/share/wordnet, an unpacked corpora/wordnet)")
    parser.add_argument("--nltk-index-url", metavar="URL",
                        help="nltk downloader index to fetch the wordnet package from (default: nltk's)")
    parser.add_argument("--check", action="store_true", help="report whether WordNet is in place (exit 0/1); install nothing")
    parser.add_argument("--force", action="store_true", help="reinstall even when WordNet is in place")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


def _check(args: argparse.Namespace) -> int:
    explicit = args.nltk_data is not None
    nltk_data = args.nltk_data if explicit else wordnet_setup.default_nltk_data()
    there = wordnet_setup.in_place(nltk_data, explicit=explicit)
    if there is not None:
        print(f"WordNet 3.0 is in place in {wordnet_setup.wordnet_folder(there)}")
        return 0
    found = nltk_data if explicit else (wordnet_setup.nltk_finds(wordnet_setup.nltk_search_path()) or nltk_data)
    missing = wordnet_setup.missing_files(wordnet_setup.wordnet_folder(found))
    folder = wordnet_setup.wordnet_folder(found)
    what = f"{folder} holds none of its files" if len(missing) == len(wordnet_setup.NEEDED) else \
        f"{folder} lacks {', '.join(missing)} (as real files)"
    print(f"WordNet 3.0 is not in place: {what}; run `musiceval setup{f' --nltk-data {nltk_data}' if explicit else ''}`")
    return 1


def run(args: argparse.Namespace) -> int:
    if args.check:
        return _check(args)
    try:
        outcome = wordnet_setup.install(args.nltk_data, wordnet_from=args.wordnet_from, index_url=args.nltk_index_url,
                                        force=args.force, say=lambda line: print(line, flush=True))
    except wordnet_setup.WordNetSetupError as exc:
        if args.debug:
            raise
        print(f"musiceval: error: {exc}", file=sys.stderr)
        return exc.exit_code
    checked = outcome.verified
    if checked is not None:
        print(f"verified: nltk loads {checked.found} ({checked.dog_synsets} synsets of 'dog'); METEOR matches the "
              f"synonyms quick/fast ({checked.meteor:.4f})")
        if not checked.on_search_path:
            print(f"note: nltk searches {outcome.nltk_data} only with NLTK_DATA={outcome.nltk_data} set "
                  f"(e.g. `export NLTK_DATA={outcome.nltk_data}`) where METEOR runs")
    elif args.nltk_data is not None and not any(
            os.path.realpath(p) == os.path.realpath(outcome.nltk_data) for p in wordnet_setup.nltk_search_path()):
        print(f"note: nltk searches {outcome.nltk_data} only with NLTK_DATA={outcome.nltk_data} set")
    return 0


register_command("setup", help="install what musiceval needs at run time: WordNet 3.0 for METEOR",
                 configure=configure, run=run)
