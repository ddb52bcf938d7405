"""``musiceval run --model MODEL_SPEC --benchmarks a,b``: from a checkpoint to a verdict in one command.

Prepares each benchmark (cached: an intact lock and manifest are reused), loads the model once,
generates under ``--conditions`` (default correct,random,noise,text_only; a benchmark asks only
the controls its answer format holds) into the response cache (``--cache-dir``; a rerun resumes),
writes the answers in each benchmark's format and ``<out>/musiceval.toml`` declaring them, then
runs every release gate on them with pytest (``<out>/results``: results.json, report.md,
report.html). The exit status and the last line are the verdict's (0 PASSED).

``--repeats K`` asks every item K times at the model's temperature (``--model-args
temperature=0.7``; refused at temperature 0), each repeat with its own seed, and every gate uses all
K answers (:mod:`musiceval.suite.repeats`).

``--shard i/n`` generates one shard into the cache and stops; after ``musiceval merge`` of the
shards' caches, the same command without ``--shard`` scores everything from the cache.

A benchmark scored by the LLM judge (``airbench-chat-music``) needs a pinned judge, given as
``--option judge.model=JUDGE`` (and any other ``judge.KEY=VALUE``): without one the run is refused
before anything is prepared or the model loads (a ``--shard`` run, which scores nothing, needs
none). The judge's keys are written into ``<out>/musiceval.toml`` as its ``[judge]`` section, and
its calls are recorded into ``<out>/cassettes/judge/`` (replayed from there; ``--replay``, and
always on CI, replays only).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from musiceval.commands.registry import register_command


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="model spec: hf:ID_OR_DIR, openai-compatible:URL#MODEL, ...")
    parser.add_argument("--benchmarks", required=True, help="comma-separated catalogue names (`musiceval data list`)")
    parser.add_argument("--conditions", default="correct,random,noise,text_only",
                        help="conditions to ask (default correct,random,noise,text_only)")
    parser.add_argument("--shard", default=None, metavar="I/N", help="generate shard I of N into the cache, score nothing")
    parser.add_argument("--model-args", default="", metavar="K=V,...", help="dtype=bfloat16,device_map=auto,max_new_tokens=...")
    parser.add_argument("--audio-dir", action="append", default=[], metavar="NAME=DIR",
                        help="clip folder of a benchmark that ships no audio (repeatable)")
    parser.add_argument("--data-root", type=Path, default=None, help="prepared benchmarks (default $MUSICEVAL_DATA or .musiceval/data)")
    parser.add_argument("--cache-dir", type=Path, default=None, help="response cache root (default $MUSICEVAL_CACHE or the platform's)")
    parser.add_argument("--out", type=Path, default=None, help="answers, config and results (default .musiceval/runs/<model>-<hash>)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random pairing, the noise and sampling (default 0)")
    parser.add_argument("--repeats", type=int, default=1, metavar="K",
                        help="sampled answers per item at the model's temperature (--model-args temperature=0.7), "
                             "each repeat with its own seed; every gate uses all K (default 1)")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight (openai-compatible)")
    parser.add_argument("--option", action="append", default=[], metavar="PROTOCOL.KEY=VALUE",
                        help="passed to pytest as --musiceval-option (e.g. defaults.min_coverage=0.9)")
    parser.add_argument("--replay", action="store_true",
                        help="a judged benchmark: replay the judge's recorded calls only, as CI does (a call the "
                             "cassettes lack is an error)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from musiceval.cache_dir import default_cache_dir
    from musiceval.catalogue.prepare import data_root
    from musiceval.llm.cassettes import command_mode
    from musiceval.suite.benchmark_runs import (generate_answers, judge_defaults, judged, require_judge, run_gates,
                                                run_key, write_suite_config)
    from musiceval.suite.config import SuiteConfig, apply_options
    from musiceval.catalogue.spec import benchmark_names
    from musiceval.generate import parse_shard
    from musiceval.models.args import parse_model_args

    benches = benchmark_names(args.benchmarks)
    judge = {**judge_defaults(benches), **_judge_section(args.option)}  # the catalogue's mode unless given
    if judged(benches) and not args.shard:  # refused before a download or the model, not after generating
        thresholds = apply_options(SuiteConfig(None, Path(".")), args.option).thresholds
        require_judge(benches, thresholds.get("judge", {}),
                      "musiceval run takes the judge as --option judge.model=JUDGE, as docs/judge.md says")
    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    model_args = parse_model_args(args.model_args)
    shard = parse_shard(args.shard) if args.shard else None
    audio_dirs = {}
    for spec in args.audio_dir:
        name, sep, folder = spec.partition("=")
        if not sep:
            raise ValueError(f"--audio-dir {spec!r}: expected NAME=DIR, e.g. --audio-dir muchomusic=/data/muchomusic")
        audio_dirs[name.strip()] = Path(folder)
    cache_dir = args.cache_dir or default_cache_dir()
    # absolute from here on: the config written into ``out`` names its answer files relative to itself
    out = (args.out or Path(".musiceval/runs") / run_key(args.model, model_args, benches, conditions, args.seed,
                                                         args.repeats)).resolve()
    generated = generate_answers(args.model, benches, data_root=data_root(args.data_root), cache_dir=cache_dir, out_dir=out,
                                 model_args=model_args, conditions=conditions, audio_dirs=audio_dirs, seed=args.seed,
                                 shard=shard, progress=not args.no_progress, repeats=args.repeats,
                                 log=lambda line: print(line, file=sys.stderr), model_options={"concurrency": args.concurrency})
    for note in generated.notes:
        print(f"note: {note}", file=sys.stderr)
    if shard is not None:
        print(f"shard {shard[0]}/{shard[1]} generated into {cache_dir / 'responses'}; merge the shards' caches with "
              "`musiceval merge` and run again without --shard to score")
        return 0
    config = write_suite_config(generated, thresholds={"judge": judge} if judged(benches) and judge else None)
    pytest_args = [f"--musiceval-option={o}" for o in args.option]
    if judged(benches):
        pytest_args.append(f"--musiceval-record-mode={command_mode(args.replay)}")
    return run_gates(config, out / "results", pytest_args)


def _judge_section(options: list[str]) -> dict:
    """The ``judge.KEY=VALUE`` options as the ``[judge]`` section of the written config (a value read
    as TOML where it is one, as ``--musiceval-option`` reads it)."""
    import tomllib

    section = {}
    for option in options:
        key, sep, text = option.partition("=")
        name = key.strip()
        if sep and name.startswith("judge.") and len(name) > len("judge."):
            try:
                section[name[len("judge."):]] = tomllib.loads(f"v = {text}")["v"]
            except (tomllib.TOMLDecodeError, RecursionError):
                section[name[len("judge."):]] = text
    return section


register_command("run", help="prepare benchmarks, generate with a model, score and gate: one verdict",
                 configure=configure, run=run)
