"""Cold and warm one-file runs of published answer files: what a team types to gate its model.

    .venv/bin/python benchmarks/bench_cold_runs.py [--only musicqa cmi] [--model ltu] [--workers 4] [--durations 30] [--smoke]

Each input is gated by ``pytest evals/ -n 4 -p no:randomly --musiceval-model recorded:PATH`` (the
README's "Gate your own model": a model given on the command line is judged by the built-in
defaults, not by this repository's demo ``musiceval.toml``, so nothing is capped), run as a whole
child process twice: *cold*, with an empty ``--musiceval-cache-dir`` (every embedding, BERTScore
token row and MIR baseline computed; ``$MUSICEVAL_CACHE`` points there too), then *warm*, on the
cache the cold run filled. Printed per run: wall seconds, user + system CPU seconds of the run's
processes (``resource.getrusage(RUSAGE_CHILDREN)``) and CPU / wall (2.0 = both cores of a 2-core
machine busy throughout), the peak resident set of the largest process, the 1-minute load
average, the verdict and pytest's summary line; ``--durations N`` adds pytest's N slowest steps.
The verdict and the gate counts must be the same cold and warm.

Inputs, built in a temporary directory from ``shared/data`` (beside the repository):

- ``musicqa``: a 5,040-item MusicQA answer file (MusicQA's MTG-Jamendo evaluation split has
  5,040 question/answer pairs) in the dasheng layout the loader detects
  (:func:`musiceval.data.musicqa.load_dasheng_musicqa`): the 400 real rows of
  ``musicqa/dev_midashenglm.jsonl`` (MiDashengLM-7B's answers) as they are, then 4,640 real
  captioning pairs of CMI-Bench (``lexical_data.real_pairs``: the first 4,640 distinct
  (response, reference) pairs of LTU's MusicCaps and SDD outputs and MU-LLaMA's MusicCaps, in
  that order), each given a MusicQA question: pair ``k`` is question ``k mod 4`` of clip
  ``900000 + k // 4`` (the four questions MusicQA asks of every clip, ``Describe the audio``,
  ``Describe the audio in detail``, ``What do you hear in the audio?``, ``What can be inferred
  from the audio?``), with an ``audios_eval_<clip>_<hash>.flac`` name of its own, so the
  derived Random (another clip's answer to the same prompt) and the question control (another
  question about the same clip) apply as they do to MusicQA. :func:`musicqa_rows` says how many
  distinct texts the file holds.
- ``cmi``: one model's CMI-Bench outputs folder, every task file uncapped (``--model ltu`` or
  ``mullama``: 19 files, tens of thousands of answers), linked from
  ``cmi-bench/outputs/<model>/``.

``--smoke`` runs a tiny version in seconds, every step of the script at its cheapest: the 40-item
MusicQA file is built but not gated, and one input, a 2-task CMI folder (GTZAN genre and EMO
arousal, the first 60 answers of each), is gated cold and warm on ``-n 2`` (two workers, one per
task file): two pytest sessions instead of four sessions of ``-n 4``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_evals import timed_pytest  # noqa: E402
from lexical_data import real_pairs, shared_data  # noqa: E402

#: MusicQA's MTG-Jamendo evaluation split (musiceval/data/benchmarks.py)
MUSICQA_ITEMS = 5040
#: the questions MusicQA asks of every clip (the 400 dasheng rows: 45 clips, each asked all four)
QUESTIONS = ("Describe the audio", "Describe the audio in detail", "What do you hear in the audio?",
             "What can be inferred from the audio?")
#: the smoke run's CMI-Bench tasks and answers per task, and its xdist workers (one per task file)
SMOKE_TASKS, SMOKE_RECORDS, SMOKE_WORKERS = ("GTZAN", "EMO_arousal"), 60, 2


def musicqa_rows(n: int) -> list[dict]:
    """``n`` MusicQA rows in the dasheng layout: the real MiDashengLM rows first, then CMI-Bench
    captioning pairs as further clips (module docstring)."""
    real = [json.loads(line) for line in shared_data("musicqa", "dev_midashenglm.jsonl").open(encoding="utf-8")
            if line.strip()][:n]
    responses, references = real_pairs(n - len(real)) if n > len(real) else ([], [])
    rows = list(real)
    for k, (response, reference) in enumerate(zip(responses, references)):
        question, clip = QUESTIONS[k % len(QUESTIONS)], 900000 + k // len(QUESTIONS)
        digest = hashlib.sha1(f"{clip}:{k}".encode()).hexdigest()[:32]
        rows.append({"question": question, "answer": reference, "audio": f"audios_eval_{clip:06d}_{digest}.flac",
                     "dataset_name": "MusicQA", "lang": "en", "prompt": f"{question} Answer with 1-2 sentences",
                     "model_output": response, "model_name": "MiDashengLM"})
    return rows


def distinct_texts(rows: list[dict]) -> dict[str, int]:
    """How many distinct questions, references and responses the rows hold, and texts in all."""
    fields = {"questions": "question", "references": "answer", "responses": "model_output"}
    counts = {name: len({r[key] for r in rows}) for name, key in fields.items()}
    counts["texts"] = len({r[key] for r in rows for key in ("answer", "model_output")})
    return counts


def write_musicqa(folder: Path, n: int) -> Path:
    path = folder / "musicqa_eval.jsonl"
    rows = musicqa_rows(n)
    with path.open("w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    print(f"musicqa: {len(rows):,} items, distinct {distinct_texts(rows)}", flush=True)
    return path


def write_cmi(folder: Path, model: str, tasks: tuple[str, ...] = (), records: int | None = None) -> Path:
    """A CMI-Bench outputs folder of ``model``: every task file linked, or the ``tasks`` named,
    cut to their first ``records`` answers."""
    out = folder / model
    out.mkdir()
    files = sorted(shared_data("cmi-bench", "outputs", model).glob(f"{model}_*.jsonl"))
    if tasks:
        files = [f for f in files if f.stem.removeprefix(f"{model}_") in tasks]
    for f in files:
        if records is None:
            (out / f.name).symlink_to(f)
        else:
            (out / f.name).write_text(json.dumps(json.loads(f.read_text(encoding="utf-8"))[:records]), encoding="utf-8")
    print(f"cmi: {len(files)} {model} task files{f', {records} answers each' if records else ''}", flush=True)
    return out


def gate(path: Path, workers: int, cache: Path, results: Path, durations: int) -> dict:
    """One one-file run of ``path`` (exit 1 is a verdict the model earned, not a failed run)."""
    os.environ["MUSICEVAL_CACHE"] = str(cache)
    args = ["evals/", "-n", str(workers), "-q", "-p", "no:randomly", f"--musiceval-model=recorded:{path}",
            "--musiceval-cache-dir", str(cache), "--musiceval-results-dir", str(results)]
    if durations:
        args.append(f"--durations={durations}")
    return timed_pytest(args, results, exit_codes=(0, 1))


def durations_of(stdout: str) -> str:
    """pytest's ``slowest durations`` block of a run's output (its header to the first blank line)."""
    lines = stdout.splitlines()
    start = next((k for k, line in enumerate(lines) if "slowest" in line and "durations" in line), len(lines))
    end = next((k for k in range(start, len(lines)) if not lines[k].strip()), len(lines))
    return "\n".join(lines[start:end])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", default=["musicqa", "cmi"], choices=["musicqa", "cmi"])
    ap.add_argument("--model", default="ltu", choices=["ltu", "mullama"], help="whose CMI-Bench outputs folder")
    ap.add_argument("--workers", type=int, default=None, help=f"xdist workers (default 4; --smoke: {SMOKE_WORKERS})")
    ap.add_argument("--durations", type=int, default=0, help="print pytest's N slowest steps of each run")
    ap.add_argument("--smoke", action="store_true",
                    help="build a 40-item MusicQA file, gate a 2-task CMI folder on -n 2 (seconds)")
    ap.add_argument("--keep", type=Path, metavar="DIR",
                    help="build the inputs and keep every run's results directory in DIR (a new folder), to compare runs")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args.workers = args.workers or (SMOKE_WORKERS if args.smoke else 4)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-cold-runs-") as scratch:
        tmp = args.keep or Path(scratch)
        if args.keep:
            args.keep.mkdir(parents=True)
        inputs = {}
        if "musicqa" in args.only:
            path = write_musicqa(tmp, 40 if args.smoke else MUSICQA_ITEMS)
            if not args.smoke or args.only == ["musicqa"]:  # the smoke run gates one input: the CMI folder
                inputs["musicqa"] = path
        if "cmi" in args.only:
            inputs["cmi"] = (write_cmi(tmp, args.model, SMOKE_TASKS, SMOKE_RECORDS) if args.smoke
                             else write_cmi(tmp, args.model))
        for name, path in inputs.items():
            cache = tmp / f"cache-{name}"
            for state in ("cold", "warm"):
                r = gate(path, args.workers, cache, tmp / f"results-{name}-{state}", args.durations)
                rows.append((name, state, r))
                print(f"{name:7s} {state}: {r['wall']:.1f} s wall, {r['cpu']:.1f} CPU-s ({r['cpu'] / r['wall']:.2f} "
                      f"cores), peak {r['peak_mb']:.0f} MB, load {r['load']:.1f}, {r['verdict']} ({r['summary']})",
                      flush=True)
                if args.durations:
                    print(durations_of(r["stdout"]), flush=True)
            cold, warm = (r for n, _, r in rows if n == name)
            if (cold["verdict"], cold["counts"]) != (warm["verdict"], warm["counts"]):
                raise SystemExit(f"{name}: cold and warm runs differ: {cold['verdict']} {cold['counts']} vs "
                                 f"{warm['verdict']} {warm['counts']}")
    print("\n| input | cache | wall s | CPU s | cores busy | peak MB | load | verdict |")
    print("|---|---|---|---|---|---|---|---|")
    for name, state, r in rows:
        print(f"| {name} | {state} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['cpu'] / r['wall']:.2f} | "
              f"{r['peak_mb']:.0f} | {r['load']:.1f} | {r['verdict']} |")


if __name__ == "__main__":
    main()
