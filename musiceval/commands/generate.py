"""``musiceval generate``: the command line of :mod:`musiceval.generate` (what it does, the manifest
and the conditions are documented there).

Exit status: 0 all answered, 1 some items failed (each listed with its reason on stderr; the rest
are cached), 2 unusable input (manifest, model spec). The summary is one JSON object on stdout; the
last line on stderr says where the responses were cached (``--cache-dir``, else ``$MUSICEVAL_CACHE``
or the platform cache folder: :mod:`musiceval.cache_dir`).

``--repeats K`` asks every (item, condition) K times at the model's temperature, repeat ``r``
with the seed of (``--seed``, ``r``), as ``musiceval run --repeats K`` does and with its refusals
(:mod:`musiceval.suite.repeats`): each ``--out`` row carries its ``repeat`` (0..K-1), which the
answer readers turn into the item ``<id>#r<k>`` in the item's group.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from musiceval.commands.registry import register_command
from musiceval.generate import (MODEL_CONDITIONS, GenerationResult, ManifestError, generate_responses, load_manifest,
                                parse_shard, shard_of)
from musiceval.models.base import GenerationSettings, ModelSpecError, load_model
from musiceval.models.cache import ResponseCache, redact_spec
from musiceval.ranges import AT_LEAST_ONE, NON_NEGATIVE, NON_NEGATIVE_INT, arg
from musiceval.records import to_jsonable
from musiceval.redact import redact


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="model spec, e.g. hf:<dir>, openai-compatible:<url>#<model>")
    parser.add_argument("--dataset", required=True, type=Path, help="manifest (JSON lines) of items")
    parser.add_argument("--data-dir", type=Path, default=None, help="audio root (default: the manifest's folder)")
    parser.add_argument("--conditions", default="correct", help=f"comma-separated, from {','.join(MODEL_CONDITIONS)}")
    from musiceval.cache_dir import add_cache_dir_argument

    add_cache_dir_argument(parser, "response cache (DIR/responses; pytest --musiceval-cache-dir DIR replays it)")
    parser.add_argument("--out", type=Path, default=None, help="also write the responses as musiceval JSON lines")
    parser.add_argument("--concurrency", type=arg(AT_LEAST_ONE), default=8, help="requests in flight (openai-compatible)")
    parser.add_argument("--batch-size", type=arg(AT_LEAST_ONE), default=None, help="(item, condition) pairs per model call, cached as each finishes (default: max(16, 4*concurrency))")
    parser.add_argument("--device", default=None, help="torch device for hf: models (default cuda if present)")
    parser.add_argument("--temperature", type=arg(NON_NEGATIVE), default=0.0, help="0 = greedy (default)")
    parser.add_argument("--max-tokens", type=arg(AT_LEAST_ONE), default=256, help="answer length limit (default 256)")
    parser.add_argument("--seed", type=arg(NON_NEGATIVE_INT), default=0, help="seeds sampling, the random pairing and the noise (default 0)")
    parser.add_argument("--limit", type=arg(AT_LEAST_ONE), default=None, help="only the first N items")
    parser.add_argument("--random-draws", type=arg(AT_LEAST_ONE), default=1, help="independent Random pairings per item (default 1)")
    parser.add_argument("--repeats", type=int, default=1, metavar="K",
                        help="sampled answers per item at the model's temperature (--temperature 0.7), each repeat with "
                             "its own seed; --out rows carry their repeat (default 1)")
    from musiceval import progress as _progress

    _progress.add_progress_arguments(parser)
    parser.add_argument("--shard", default=None, metavar="I/N",
                        help="answer only shard I of N (0-based; items split by a hash of their id); join with `musiceval merge`")
    parser.add_argument("--model-args", default="", metavar="K=V,...",
                        help="model arguments, e.g. dtype=bfloat16,device_map=auto,max_new_tokens=64 (see docs/evaluate-your-model.md)")


def _progress_on(args: argparse.Namespace) -> bool:
    """The bar on stderr: ``--progress`` / ``--no-progress``, else only when stderr is a terminal."""
    from musiceval import progress as _progress

    _progress.set_mode(getattr(args, "progress", None))
    return _progress.enabled()


def run(args: argparse.Namespace) -> int:
    try:
        from musiceval.models.args import parse_model_args, split_model_args

        from musiceval.suite.repeats import check_repeats

        load_args, settings = split_model_args(parse_model_args(args.model_args),
                                               GenerationSettings(args.temperature, args.max_tokens, args.seed))
        repeats = check_repeats(args.repeats, settings, flag="--repeats", args_flag="--model-args")
        shard = parse_shard(args.shard) if args.shard else None
        conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
        bad = [c for c in conditions if c not in MODEL_CONDITIONS]
        if bad or not conditions:
            raise ValueError(f"--conditions {args.conditions!r}: choose from {','.join(MODEL_CONDITIONS)}")
        if args.random_draws < 1:
            raise ValueError(f"--random-draws must be >= 1, got {args.random_draws}")
        items, failures = load_manifest(args.dataset)
        if not items and not failures:
            raise ManifestError(f"{args.dataset}: the manifest holds no records (empty or blank lines only); "
                                "pass a JSON-lines file with one item per line")
        items = items[: args.limit] if args.limit is not None else items
        options = {"concurrency": args.concurrency}
        if args.device:
            options["device"] = args.device
        model = load_model(args.model, **{**options, **load_args})
    except (ManifestError, ModelSpecError, ValueError) as exc:
        print(redact(f"musiceval generate: error: {exc}"), file=sys.stderr)
        return 2
    from musiceval.cache_dir import RESPONSES, cache_path

    where = cache_path(args, RESPONSES)
    try:
        cache = ResponseCache(where)
    except OSError as exc:  # read-only file system, permission, a file where the folder should be
        print(f"musiceval generate: error: response cache {where}: {exc.strerror or exc}; "
              "pass a writable --cache-dir", file=sys.stderr)
        model.close()
        return 2
    from functools import partial

    from musiceval.suite.repeats import each_repeat

    started = time.perf_counter()
    try:
        ask = partial(generate_responses, model, items, conditions=conditions, data_dir=args.data_dir or args.dataset.parent,
                      cache=cache, batch_size=args.batch_size or max(16, 4 * args.concurrency),
                      progress=_progress_on(args), random_draws=args.random_draws, shard=shard)
        result = GenerationResult.joined(r for _, r in each_repeat(lambda s: ask(settings=s), settings, repeats))
    finally:
        model.close()
    elapsed = time.perf_counter() - started
    if shard is not None:  # each bad manifest line is reported by one shard only
        failures = [f for f in failures if shard_of(f.item_id, shard[1]) == shard[0]]
    result.failures[:0] = failures
    if args.out:  # whole or not at all: a full disk leaves the earlier file (or none), never a torn one
        from musiceval.writes import WriteError, write_whole

        lines = "".join(json.dumps(_row(r), ensure_ascii=False) + "\n" for r in result.responses).encode("utf-8")
        try:
            write_whole(args.out, lambda fh: fh.write(lines), fix="pass a writable --out")
        except WriteError as exc:
            print(f"musiceval generate: error: --out: {exc} (the answers are in the cache {cache.path}; rerun with a "
                  "writable --out to write them without new model calls)", file=sys.stderr)
            return 2
    for failure in result.failures:
        print(redact(f"FAILED {failure.item_id}: {failure.reason}"), file=sys.stderr)
    summary = {"model": redact_spec(model.spec), "n_items": len(items), **result.summary(),
               "cache": str(cache.path), "cache_lines_ignored": len(cache.torn)}
    if repeats > 1:
        summary["repeats"] = repeats
    if shard is not None:
        summary["shard"] = f"{shard[0]}/{shard[1]}"
        summary["n_items_in_shard"] = sum(shard_of(item.id, shard[1]) == shard[0] for item in items)
    summary["seconds"] = round(elapsed, 3)
    summary["requests_per_s"] = round(result.n_generated / elapsed, 3) if elapsed > 0 else None
    print(json.dumps(summary))
    print(f"musiceval generate: responses cached in {cache.path} (pytest --musiceval-cache-dir {where.parent} replays them)",
          file=sys.stderr)
    return 1 if result.failures else 0


def _row(response) -> dict:
    """A response as an ``--out`` row; one of K sampled answers carries its ``repeat`` as the answer
    readers expect it (:func:`musiceval.data.answers.repeated_row`)."""
    row = to_jsonable(response)
    if "repeat" in response.meta:
        row["repeat"] = int(response.meta["repeat"])
    return row


register_command("generate", help="run a model over a dataset and fill the response cache",
                 configure=configure, run=run)
