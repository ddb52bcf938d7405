"""Timing of the multiple-choice protocol (run by hand; figures go to docs/performance.md).

    .venv/bin/python benchmarks/bench_choice.py [--smoke]

Measures: both matchers on short real outputs and on 1 MB outputs, scoring the 200-record
MiDashengLM fixture end to end (load + match + metrics), and building 3 shuffled runs of
one-shot prompts for a MuChoMusic-sized set (1,187 questions). Best of 5 (of 3 for the prompts);
``--smoke``: one of each.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from musiceval.vocab.choice_prompts import ANSWER_TYPE, DISTRACTOR_TYPES, build_prompts
from musiceval.metrics.choice import match_muchomusic, match_strict
from musiceval.records import Item
from musiceval.protocols import load_protocol

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "choice" / "dev_midashenglm.jsonl"
OPTIONS = ["Reggae", "Pop music", "Latin rock", "Ska"]


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="each measurement once (seconds)")
    repeat = 1 if ap.parse_args().smoke else 5
    short = ["A", "B", "Answer: D", "The correct answer is: (C) Latin rock", "I cannot answer"] * 2000
    huge = "go go go " * 120_000 + "\nAnswer: C"
    for name, match in (("muchomusic", match_muchomusic), ("strict", match_strict)):
        t = best_of(lambda: [match(o, OPTIONS) for o in short], repeat)
        print(f"matcher {name}: {len(short) / t:,.0f} short outputs/s")
        t = best_of(lambda: match(huge, OPTIONS), repeat)
        print(f"matcher {name}: {t * 1000:.1f} ms per 1 MB output")
    t = best_of(lambda: load_protocol("choice", FIXTURE, "dasheng-choice").result.metrics(), repeat)
    print(f"score 200-record fixture (load + match + metrics): {t * 1000:.1f} ms")
    items = [Item(id=f"q{i}", question=f"Question {i}?", choices=(f"a{i}", f"b{i}", f"c{i}", f"d{i}"), answer="A",
                  group=f"t{i // 2}", meta={"distractor_types": (ANSWER_TYPE, *DISTRACTOR_TYPES)}) for i in range(1187)]
    t = best_of(lambda: build_prompts(items, runs=3, n_examples=1, seed=0), min(repeat, 3))
    print(f"build_prompts 1,187 questions x 3 runs, 1-shot: {t:.2f} s")


if __name__ == "__main__":
    main()
