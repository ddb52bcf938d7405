"""``musiceval merge``: join the response caches of sharded ``musiceval generate`` runs
(:func:`musiceval.models.merge.merge_caches`). Exit status 1 when two shards disagree on an answer."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from musiceval.commands.registry import register_command
from musiceval.models.cache import ResponseCache
from musiceval.models.merge import merge_caches


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sources", nargs="+", type=Path, metavar="CACHE_DIR",
                        help="response cache directories (DIR/responses of each `musiceval generate --shard I/N --cache-dir DIR` run)")
    parser.add_argument("--out", required=True, type=Path, help="directory of the merged cache (created if missing)")


def run(args: argparse.Namespace) -> int:
    result = merge_caches(args.sources, args.out)
    for c in result.conflicts:
        print(f"CONFLICT {c['item_id']} ({c['condition']} chunk {c['chunk']}, key {c['key'][:12]}): kept "
              f"{c['kept']!r} from {c['kept_from']}, dropped {c['other']!r} from {c['other_from']}", file=sys.stderr)
    print(json.dumps({**result.summary(), "out": str(Path(args.out) / ResponseCache.FILENAME)}))
    return 1 if result.conflicts else 0


register_command("merge", help="join response caches of sharded `generate` runs", configure=configure, run=run)
