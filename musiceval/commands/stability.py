"""``musiceval stability``: the release gates run again under R seeds, and how often each gate's
outcome and the session's word change (:mod:`musiceval.results.stability`).

::

    musiceval stability --reseeds 10 [--first-seed 1] [--out DIR] [-- PYTEST_ARGS ...]

Each reseed is a whole ``python -m pytest`` session (``PYTEST_ARGS``, by default ``evals/``) with
``--musiceval-seed k`` and its own ``--musiceval-results-dir DIR/seed-k``: the same answers, other
Random partners, permutations and bootstrap resamples. Prints one line per gate that flips and a
summary; writes ``DIR/stability.json``. Exit status: 0 when the word never changes and no gate far
from its bar flips; 1 otherwise; 2 when a session wrote no readable results.json.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from musiceval.commands.registry import register_command
from musiceval.data.errors import InputError
from musiceval.ranges import AT_LEAST_ONE, NON_NEGATIVE_INT, arg
from musiceval.writes import write_whole

#: where the sessions' results go without --out
DEFAULT_OUT = Path(".musiceval") / "stability"


def configure(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--reseeds", type=arg(AT_LEAST_ONE), default=10, help="sessions, one per seed (default 10)")
    ap.add_argument("--first-seed", type=arg(NON_NEGATIVE_INT), default=0, help="the first seed (default 0)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT,
                    help=f"results of each session (seed-K/) and stability.json (default {DEFAULT_OUT})")
    ap.add_argument("pytest_args", nargs=argparse.REMAINDER,
                    help="after --: what pytest runs (default evals/), e.g. -- evals/ -n 4 --musiceval-model recorded:a.jsonl")


def run(args: argparse.Namespace) -> int:
    from musiceval.results.errors import ResultsError
    from musiceval.results.files import read_results_json
    from musiceval.results.stability import stability

    pytest_args = [a for a in args.pytest_args if a != "--"] or ["evals/"]
    if any(a.startswith(("--musiceval-seed", "--musiceval-results-dir")) for a in pytest_args):
        raise InputError("musiceval stability sets --musiceval-seed and --musiceval-results-dir itself; "
                         "drop them from the pytest arguments")
    runs = []
    for seed in range(args.first_seed, args.first_seed + args.reseeds):
        results = args.out / f"seed-{seed}"
        print(f"musiceval stability: seed {seed} ({seed - args.first_seed + 1} of {args.reseeds})", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pytest", *pytest_args, "-p", "no:randomly", "-q",
                        f"--musiceval-seed={seed}", f"--musiceval-results-dir={results}"],
                       stdout=subprocess.DEVNULL, check=False)
        try:
            runs.append((seed, read_results_json(results / "results.json")))
        except (FileNotFoundError, ResultsError) as exc:
            raise InputError(f"seed {seed}: the session wrote no readable results ({exc}); run it alone: "
                             f"python -m pytest {' '.join(pytest_args)} --musiceval-seed={seed}") from None
    found = stability(runs)
    for gate in found.flipping:
        counts = ", ".join(f"{o} {n}" for o, n in sorted(gate.outcomes.items()))
        print(f"  flips {gate.flip_rate:.0%}{' (far from its bar)' if gate.far else ''}: {gate.name}: {counts}")
    text = json.dumps(found.as_dict(), indent=2).encode("utf-8")
    write_whole(args.out / "stability.json", lambda fh: fh.write(text), fix="pass --out DIR on a writable disk")
    print(found.line())
    return 0 if found.stable else 1


register_command("stability", help="the release gates again under R seeds: how often each outcome and the word change",
                 configure=configure, run=run)
