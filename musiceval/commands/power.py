"""``musiceval power RUN --metric M [--protocol P] --drop d``: items needed to detect a drop.

::

    musiceval power results/v1 --metric accuracy --protocol mir --drop 0.02 [--against results/v0]

With ``--against`` (a second run of the same items, e.g. the previous release) the per-item
paired differences give the standard deviation of the difference and the design effect of
clustering by track (CR1). With one run only, the paired standard deviation is derived from the
run's own per-item standard deviation under an assumed correlation between the two systems'
per-item scores: ``sd_diff = sd * sqrt(2 (1 - r))`` (``--correlation``, default 0.5); the
answer says so. Prints the items needed and what the pilot's own size can detect.
"""
from __future__ import annotations

import argparse
import json
import math

from musiceval import stats
from musiceval.results.comparison import paired_differences
from musiceval.ranges import CORRELATION, LEVEL, POSITIVE, arg
from musiceval.records import to_jsonable
from musiceval.stats.regression import in_points, say_effect
from musiceval.commands.registry import register_command


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", help="pilot results directory (results.json + scores.jsonl.xz)")
    parser.add_argument("--metric", required=True, help="metric name as recorded in scores.jsonl.xz")
    parser.add_argument("--protocol", help="protocol of the metric (needed when several protocols use the name)")
    parser.add_argument("--condition", default="correct", help="condition (default: correct)")
    parser.add_argument("--drop", required=True, type=arg(POSITIVE),
                        help="the drop to detect, in the metric's units (0.02 = 2 points of accuracy)")
    parser.add_argument("--against", metavar="RUN", help="a second run of the same items: real paired differences")
    parser.add_argument("--correlation", type=arg(CORRELATION), default=0.5,
                        help="assumed per-item correlation of two systems when --against is absent (default 0.5)")
    parser.add_argument("--alpha", type=arg(LEVEL), default=0.05, help="two-sided level as in the gates (default 0.05)")
    parser.add_argument("--power", type=arg(LEVEL), default=0.8, help="power (default 0.8)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


def run(args: argparse.Namespace) -> int:
    values, groups, source = paired_differences(args.run, args.against, metric=args.metric,
                                                protocol=args.protocol, condition=args.condition)
    deff = stats.design_effect(values, groups)
    sd = float(values.std(ddof=1)) if values.size > 1 else math.nan
    assumption = ""
    if args.against is None:
        sd = sd * math.sqrt(2 * (1 - args.correlation))
        assumption = f"assumed correlation {args.correlation:g} between the two systems' per-item scores"
    if not math.isfinite(sd) or sd == 0:
        raise ValueError(f"{args.run}: the pilot's {args.metric} has no spread ({source}); a power analysis needs "
                         "at least two different per-item values")
    try:
        needed = stats.required_items(sd, args.drop, alpha=args.alpha, power=args.power, deff=deff)
    except OverflowError:
        raise ValueError(f"--drop {args.drop:g}: no finite number of items detects a drop that small; pass a larger "
                         "drop, in the metric's units") from None
    mde_now = stats.minimum_detectable_effect(sd, values.size, alpha=args.alpha, power=args.power, deff=deff)
    points = in_points(values) if args.against is None else in_points(abs(values))
    out = {
        "metric": args.metric, "protocol": args.protocol, "drop": args.drop, "alpha": args.alpha, "power": args.power,
        "items_needed": needed, "pilot_items": int(values.size), "sd_paired_difference": sd, "design_effect": deff,
        "mde_at_pilot_size": mde_now, "source": source, "assumption": assumption,
    }
    if args.json:
        print(json.dumps(to_jsonable(out), allow_nan=False))  # an infinite MDE (one pilot item) is null, never Infinity
        return 0
    print(f"to detect a drop of {say_effect(args.drop, points)} in {args.metric} at alpha {args.alpha:g} "
          f"(one-sided {args.alpha / 2:g}) with power {args.power:g}: {needed} items")
    print(f"pilot: {source}; sd of the paired difference {sd:.4g}; design effect {deff:.2f}"
          + (f"; {assumption}" if assumption else ""))
    print(f"with the pilot's {values.size} items this gate can only detect drops of {say_effect(mde_now, points)}")
    return 0


register_command("power", help="items needed to detect a drop of d, from a pilot run", configure=configure, run=run)
