"""An ERROR run for the first-screen tests: ten tests errored for one cause, 26 gates FAILed.

Written as the pytest plugin writes a run (parts merged, :func:`musiceval.verdict.decide`, the
artefacts). The ten errors reach results.json either one reason per test (:data:`PER_TEST`, as
sessions have written them) or already folded into one (:data:`FOLDED`); the report shows both whole."""
from __future__ import annotations

import json
from pathlib import Path

from musiceval.report import merge, read_parts, write_artefacts
from musiceval.verdict import decide

MODEL = "M"
#: a ~400-character message, as a missing NLTK corpus gives it
CAUSE = ("LookupError: Resource 'wordnet' not found. Please use the NLTK Downloader to obtain the resource: "
         ">>> import nltk; nltk.download('wordnet') -- for more information see https://www.nltk.org/data.html; "
         "searched in ~/nltk_data, /usr/share/nltk_data and /usr/local/lib/nltk_data; point NLTK_DATA at a "
         "directory holding corpora/wordnet (or run `musiceval data prepare --nltk` once) and rerun the session "
         "so that METEOR can score the answers")
ERRORED = [f"evals/test_musiceval.py::test_freeform[{MODEL}-answers.jsonl-meteor-{k}]" for k in range(10)]
FAILED = [f"{MODEL} answers.jsonl task {k:02d}: accuracy beats chance" for k in range(26)]
#: the errors as results.json may hold them: one reason per test, or one reason for the cause
PER_TEST = [f"{node} raised: {CAUSE}" for node in ERRORED]
FOLDED = [f"{CAUSE} (10 tests: test_freeform[{MODEL}-answers.jsonl-meteor-0], test_freeform[{MODEL}-answers.jsonl-meteor-1], "
          f"test_freeform[{MODEL}-answers.jsonl-meteor-2] and 7 more)"]


def _gate(name: str, outcome: str, **kw) -> dict:
    return {"type": "gate", "name": name, "outcome": outcome, "protocol": "mir", "model": MODEL,
            "source": "answers.jsonl", "alpha": 0.05, "n": 120, "n_failed": 0, **kw}


def rows() -> list[dict]:
    out = [_gate(name, "FAIL", estimate=-0.0735284712 - k / 1000, ci=[-0.1234567891 - k / 1000, -0.0234567891 - k / 1000],
                 threshold=0.25, baseline=0.25, p_value=0.9912345, metric="accuracy", mde=3.547319841870631,
                 test="exact binomial test + Clopper-Pearson CI", detail=f"task {k:02d}: below chance")
           for k, name in enumerate(FAILED)]
    out += [_gate(f"{MODEL} answers.jsonl task {k:02d}: instruction following", "PASS", estimate=0.9712345678,
                  ci=[0.9312345678, 0.9912345678], threshold=0.9123456789, metric="ifr",
                  test="bootstrap CI of the mean (bca bootstrap (2000 resamples))") for k in range(4)]
    out.append(_gate(f"{MODEL} answers.jsonl covers 150 of 1,187 items of MTT (at least 100%)", "FAIL",
                     estimate=150 / 1187, ci=[150 / 1187, 150 / 1187], threshold=1.0, bar=1.0, metric="coverage",
                     test="census: every item counted, no sampling uncertainty", detail="150 of 1,187 items answered"))
    out += [{"type": "sample", "protocol": "mir", "model": MODEL, "source": "answers.jsonl", "item_id": f"q{k}",
             "condition": cond, "prompt": f"Which genre is clip {k}?", "answer": "rock", "parsed": "rock",
             "reference": "jazz", "scores": {"accuracy": 0.0}} for k in range(6) for cond in ("correct", "random")]
    return out


def make_error_run(results_dir: Path, errors: list[str]) -> dict:
    """The run's results.json (as a dict) after writing every artefact into ``results_dir``; ``errors``
    are the session's error reasons (:data:`PER_TEST` or :data:`FOLDED`)."""
    parts = results_dir / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    (parts / "gw0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows()), encoding="utf-8")
    parts_rows = read_parts(results_dir)
    run = merge(parts_rows, {"models": [{"name": MODEL}], "seed": 0, "required": []})
    verdict = decide(run["gates"], declared=[MODEL], errors=errors)
    run["verdict"], run["verdict_detail"] = verdict.word, verdict.as_dict()
    write_artefacts(results_dir, run, parts_rows)
    return json.loads((results_dir / "results.json").read_text(encoding="utf-8"))
