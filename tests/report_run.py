"""A small synthetic results directory for the report tests: every outcome, samples, a table and bars."""
from __future__ import annotations

import json
from pathlib import Path

from musiceval.report import write_run

FAILED_GATE = "model accuracy beats 25 % chance on the synthetic set"


def gate(name, outcome, protocol="choice", **kw):
    row = {"type": "gate", "name": name, "outcome": outcome, "protocol": protocol, "alpha": 0.05, "n": 40, "n_failed": 0}
    row.update(kw)
    return row


def rows() -> list[dict]:
    return [
        gate(FAILED_GATE, "FAIL", estimate=-0.15, ci=[-0.24, -0.05], threshold=0.25, p_value=0.99, metric="accuracy",
             test="exact binomial test + Clopper-Pearson CI", detail="accuracy=0.1000 (4/40), chance=0.2500",
             model="tiny-model", source="answers.jsonl", check="choice.accuracy_beats_chance",
             unit="accuracy difference from chance (0-1)", higher_is_better=True, mde=0.18, baseline=0.25),
        gate("instruction-following rate at least 90%", "PASS", estimate=0.97, ci=[0.92, 1.0], threshold=0.9,
             metric="ifr", test="bootstrap CI of the mean (bca bootstrap (2000 resamples))"),
        gate("sentence_cosine: correct > random", "INCONCLUSIVE", protocol="freeform", estimate=0.01, ci=[-0.02, 0.04],
             threshold=0.0, p_value=0.2, metric="sentence_cosine", test="paired bootstrap CI + sign-flip test (bca)"),
        gate("cider: adversarial - skyline", "FINDING", protocol="freeform", estimate=4.75, ci=[4.1, 5.3],
             metric="cider", test="finding (bca)"),
        gate("bleu: correct - random", "FINDING", protocol="freeform", estimate=0.003, ci=[-0.01, 0.02],
             metric="bleu", test="finding (bca)"),
        gate("text-only baseline", "SKIPPED", detail="text-only baseline: no recorded answers under condition "
             "'text_only'; give --data-dir DIR with DIR/choice/responses.jsonl holding the same prompts answered "
             "under condition 'text_only' " + "(musiceval multiple-choice layout) " * 8, test="skipped"),
        {"type": "scores", "gate": FAILED_GATE, "protocol": "choice", "metric": "accuracy", "condition": "correct",
         "ids": ["q1", "q2"], "values": [1.0, 0.0], "groups": None, "failures": []},
        {"type": "table", "protocol": "choice", "name": "accuracy by condition", "rows": [{"condition": "correct", "accuracy": 0.1}]},
        {"type": "bars", "protocol": "choice", "name": "accuracy by condition", "values": {"correct": 0.1, "random": 0.3}},
    ]


def samples() -> list[dict]:
    out = []
    for k in range(12):
        for cond, score in (("correct", 1.0 if k % 3 else 0.0), ("random", 1.0 if k % 4 == 0 else 0.0)):
            out.append({"protocol": "choice", "model": "tiny-model", "source": "answers.jsonl", "item_id": f"q{k}",
                        "condition": cond, "prompt": f"Which instrument plays in clip {k}? (A) piano (B) guitar",
                        "answer": "I cannot tell." if k == 5 else f"(A) piano, sample answer {k}",
                        "parsed": None if k == 5 else "A", "reference": "A", "scores": {"accuracy": score}})
    return out


def make_run(results_dir: Path, extra_rows: list[dict] = ()) -> dict:
    parts = results_dir / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    (parts / "gw0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [*rows(), *extra_rows]), encoding="utf-8")
    (results_dir / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples()), encoding="utf-8")
    return write_run(results_dir, {"model": "tiny-model", "seed": 0, "provenance": {"git": "abc123"}})
