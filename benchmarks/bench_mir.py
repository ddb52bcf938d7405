"""Timing of the CMI-Bench MIR protocol, alone or side by side with the toolkit's own script.

    .venv/bin/python benchmarks/bench_mir.py [--outputs DIR] [--model mullama] [--cache DIR]
        [--encoder minilm] [--compat cmi-bench|cmi-bench@<commit>] [--bertscore-model minilm|none|DIR] [--tasks A,B]
    .venv/bin/python benchmarks/bench_mir.py --toolkit DIR [--toolkit-path DIR] [--model mullama] [--tasks A,B]
    .venv/bin/python benchmarks/bench_mir.py --smoke [--toolkit DIR]

Without ``--toolkit``: scores every ``<model>_<task>.jsonl`` of one model (all tasks present)
through ``musiceval.protocols.mir.engine.score_file`` in this process, as ``musiceval score mir`` does,
and prints the time per task (one-time model loads taken out and listed apart), the total and
the peak RSS. Run it twice with the same ``--cache``: the first run is cold (empty embedding and
baseline caches), the second warm.

With ``--toolkit DIR`` (a checkout of https://github.com/nicolaus625/CMI-bench): runs the
toolkit's own ``evaluate.py`` on the same files in the same run, interleaved task by task, and
prints two tables, each for a cold pass (a fresh musiceval cache) and a warm pass:

- *process per task*: ``python -m musiceval.cli score mir FILE --compat cmi-bench`` against
  ``python DIR/evaluate.py --model M --task T``: wall time and peak RSS of each process (imports
  included, as a user running one task pays them);
- *one process*: one worker per side imports once (import time listed), then scores each task in
  turn (musiceval: ``score_file``; toolkit: its ``load_result_file`` + ``evaluate_data``); per task
  wall time, ratio, and each worker's peak RSS.

The toolkit's script reads ``model/results/<model>/*.jsonl`` under its working directory: the
benchmark builds that folder in a temporary directory with links to ``--outputs`` (nothing in
the checkout changes). Tasks the toolkit cannot run here (it loads hub models: GTE-Qwen2-7B and
roberta-large for tagging, roberta-large for captioning BERTScore) are listed with its error.
``--toolkit-path`` is put on the toolkit's ``PYTHONPATH`` (e.g. where ``torchmetrics`` is
installed, which the toolkit needs and musiceval does not).

``--smoke``: GTZAN alone, with an empty cache of its own (removed at the end); with ``--toolkit``
side by side, one cold pass. Without ``--toolkit`` the toolkit's side is skipped, saying so.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lexical_data import shared_data

ROOT = Path(__file__).resolve().parents[1]
CLONE_HINT = ("the side-by-side comparison needs a checkout of the CMI-Bench toolkit: "
              "git clone https://github.com/nicolaus625/CMI-bench, then pass --toolkit CMI-bench")


def _tasks(args) -> tuple[list[str], list[str]]:
    from musiceval.data.cmibench import TASKS

    wanted = args.tasks.split(",") if args.tasks else list(TASKS)
    present = [t for t in wanted if (args.outputs / args.model / f"{args.model}_{t}.jsonl").is_file()]
    return present, [t for t in wanted if t not in present]


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------- musiceval alone, in process
def run_in_process(args) -> None:
    start = time.perf_counter()
    from musiceval.protocols.mir import engine as scoring_mir

    import mir_eval  # noqa: F401  (scipy and mir_eval: imported once per process, listed apart)
    import sklearn.metrics  # noqa: F401

    imports = time.perf_counter() - start
    present, missing = _tasks(args)
    total = loads_total = cpu_total = 0.0
    n_items = 0
    import torch

    print(f"one-time imports {imports:.2f} s; torch threads {torch.get_num_threads()}", flush=True)
    for task in present:
        path = args.outputs / args.model / f"{args.model}_{task}.jsonl"
        before = sum(scoring_mir.LOAD_SECONDS.values())
        cpu = time.process_time()  # CPU of all threads: less sensitive than wall time to other jobs
        start = time.perf_counter()
        try:
            result, loaded = scoring_mir.score_file(path, compat=args.compat, encoder=args.encoder, cache_dir=args.cache,
                                                    bertscore_model=args.bertscore_model, threads=args.threads)
            status = ", ".join(f"{k}={v:.4f}" for k, v in result.metrics.items())
            n_items += loaded.n
        except Exception as exc:  # noqa: BLE001 - report and continue timing the rest
            status = f"{type(exc).__name__}: {str(exc)[:80]}"
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu
        load = sum(scoring_mir.LOAD_SECONDS.values()) - before
        total += elapsed - load
        loads_total += load
        cpu_total += cpu
        extra = f" (+ {load:.2f} s model load)" if load > 0.005 else ""
        print(f"{task:18s} {elapsed - load:7.2f} s{extra}  cpu {cpu:6.2f} s  {status}", flush=True)
    print(f"total {total:.1f} s without the one-time loads (cpu {cpu_total:.1f} s with them) for {n_items} records ({len(present)} tasks; "
          f"absent: {', '.join(missing) or 'none'}), "
          f"one-time model loads {loads_total:.1f} s "
          f"({', '.join(f'{k} {v:.1f} s' for k, v in scoring_mir.LOAD_SECONDS.items()) or 'none'}), "
          f"imports {imports:.1f} s, peak RSS {_peak_mb():.0f} MB")
    print(f"toolkit side skipped (no --toolkit given): {CLONE_HINT}")


# ---------------------------------------------------------------- workers (one process per side)
def worker_musiceval(args) -> None:
    out = sys.stdout
    start = time.perf_counter()
    from musiceval.protocols.mir import engine as scoring_mir

    import mir_eval  # noqa: F401
    import sklearn.metrics  # noqa: F401

    print(json.dumps({"imports": time.perf_counter() - start}), file=out, flush=True)
    for line in sys.stdin:
        task = line.strip()
        path = args.outputs / args.model / f"{args.model}_{task}.jsonl"
        before = sum(scoring_mir.LOAD_SECONDS.values())
        start = time.perf_counter()
        try:
            result, _ = scoring_mir.score_file(path, compat=args.compat, encoder=args.encoder, cache_dir=args.cache,
                                               bertscore_model=args.bertscore_model, threads=args.threads)
            value, error = next(iter(result.metrics.items())), None
        except Exception as exc:  # noqa: BLE001
            value, error = None, f"{type(exc).__name__}: {str(exc)[:120]}"
        elapsed = time.perf_counter() - start
        load = sum(scoring_mir.LOAD_SECONDS.values()) - before
        print(json.dumps({"task": task, "seconds": elapsed - load, "load": load, "value": value, "error": error}),
              file=out, flush=True)


def worker_toolkit(args) -> None:
    out = sys.stdout
    os.chdir(args.workdir)
    sys.argv = [str(Path(args.toolkit) / "evaluate.py")]
    start = time.perf_counter()
    import importlib.util

    spec = importlib.util.spec_from_file_location("cmi_bench_evaluate", Path(args.toolkit) / "evaluate.py")
    evaluate = importlib.util.module_from_spec(spec)
    with contextlib.redirect_stdout(io.StringIO()):
        spec.loader.exec_module(evaluate)  # the toolkit's own module: its imports, its functions
    print(json.dumps({"imports": time.perf_counter() - start}), file=out, flush=True)
    for line in sys.stdin:
        task = line.strip()
        printed = io.StringIO()
        start = time.perf_counter()
        error = None
        try:
            with contextlib.redirect_stdout(printed):
                for result in evaluate.find_result_files(args.model, task):
                    evaluate.evaluate_data(args.model, task, evaluate.load_result_file(result))
        except BaseException as exc:  # noqa: BLE001 - the toolkit raises anything; report it
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
        elapsed = time.perf_counter() - start
        lines = [ln.strip() for ln in printed.getvalue().splitlines() if ln.strip() and not ln.startswith("Result file")]
        print(json.dumps({"task": task, "seconds": elapsed, "value": " / ".join(lines[-3:]), "error": error}),
              file=out, flush=True)


# ---------------------------------------------------------------- side by side
def _wait(proc: subprocess.Popen) -> tuple[int, float]:
    """Exit status and peak RSS (MB) of one child, from wait4."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss / 1024


def _run_one(cmd: list[str], env: dict, cwd: Path | None = None) -> dict:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)
    out, err = proc.stdout.read(), proc.stderr.read()
    rc, peak = _wait(proc)
    tail = (err.decode(errors="replace").strip().splitlines() or [""])[-1][:120]
    return {"seconds": time.perf_counter() - start, "peak_mb": peak, "rc": rc, "error": None if rc == 0 else tail,
            "stdout": out.decode(errors="replace")}


def _workdir(args, tasks: list[str]) -> Path:
    """``model/results/<model>/`` with links to the outputs, where the toolkit's script looks."""
    work = Path(tempfile.mkdtemp(prefix="cmi-bench-run-"))
    results = work / "model" / "results" / args.model
    results.mkdir(parents=True)
    for task in tasks:
        name = f"{args.model}_{task}.jsonl"
        (results / name).symlink_to((args.outputs / args.model / name).resolve())
    if (Path(args.toolkit) / "data").is_dir():  # MTT reads data/MTT/tags.npy
        (work / "data").symlink_to((Path(args.toolkit) / "data").resolve())
    return work


def _envs(args) -> tuple[dict, dict]:
    base = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    ours = dict(base, PYTHONPATH=os.pathsep.join([str(ROOT), base.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    theirs = dict(base, PYTHONPATH=args.toolkit_path or "")  # the toolkit sees its own deps only
    return ours, theirs


def _ratio(ours: float, theirs: float) -> str:
    return f"{theirs / ours:.1f}x" if ours > 0 else "-"


def per_process(args, tasks: list[str], work: Path, cache: Path, label: str) -> None:
    ours_env, theirs_env = _envs(args)
    print(f"\n### process per task, {label} (musiceval CLI vs toolkit evaluate.py; speed-up = toolkit s / musiceval s)\n")
    print("| task | musiceval s | toolkit s | speed-up | musiceval peak MB | toolkit peak MB |")
    print("|---|---|---|---|---|---|")
    tot_ours = tot_theirs = 0.0
    for task in tasks:
        path = args.outputs / args.model / f"{args.model}_{task}.jsonl"
        ours = _run_one([sys.executable, "-m", "musiceval.cli", "score", "mir", "--format", "cmi-bench", str(path),
                         "--compat", args.compat or "cmi-bench", "--cache-dir", str(cache), "--json"]
                        + (["--threads", str(args.threads)] if args.threads else []), ours_env)
        theirs = _run_one([sys.executable, str(Path(args.toolkit) / "evaluate.py"), "--model", args.model, "--task", task],
                          theirs_env, cwd=work)
        if theirs["error"]:
            print(f"| {task} | {ours['seconds']:.2f} | cannot run here: {theirs['error']} | | {ours['peak_mb']:.0f} | |")
            continue
        tot_ours += ours["seconds"]
        tot_theirs += theirs["seconds"]
        print(f"| {task} | {ours['seconds']:.2f} | {theirs['seconds']:.2f} | {_ratio(ours['seconds'], theirs['seconds'])} "
              f"| {ours['peak_mb']:.0f} | {theirs['peak_mb']:.0f} |", flush=True)
    print(f"| **total (tasks both ran)** | {tot_ours:.1f} | {tot_theirs:.1f} | {_ratio(tot_ours, tot_theirs)} | | |")


def one_process(args, tasks: list[str], work: Path, cache: Path, label: str) -> None:
    ours_env, theirs_env = _envs(args)
    me = [sys.executable, str(Path(__file__).resolve()), "--outputs", str(args.outputs), "--model", args.model]
    me += ["--threads", str(args.threads)] if args.threads else []
    ours = subprocess.Popen(me + ["--worker", "musiceval", "--compat", args.compat or "cmi-bench", "--cache", str(cache),
                                  "--encoder", args.encoder] + (["--bertscore-model", args.bertscore_model] if args.bertscore_model else []),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ours_env, text=True)
    theirs = subprocess.Popen(me + ["--worker", "toolkit", "--toolkit", str(Path(args.toolkit).resolve()), "--workdir", str(work)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=theirs_env, text=True)
    imp_ours = json.loads(ours.stdout.readline())["imports"]
    imp_theirs = json.loads(theirs.stdout.readline())["imports"]
    print(f"\n### one process, {label} (imports once: musiceval {imp_ours:.1f} s, toolkit {imp_theirs:.1f} s)\n")
    print("| task | musiceval s | toolkit s | speed-up | musiceval value | toolkit printed |")
    print("|---|---|---|---|---|---|")
    tot_ours = tot_theirs = loads = 0.0
    for task in tasks:
        rows = []
        for proc in (ours, theirs):  # interleaved: one task on each side, then the next task
            proc.stdin.write(task + "\n")
            proc.stdin.flush()
            rows.append(json.loads(proc.stdout.readline()))
        a, b = rows
        loads += a.get("load", 0.0)
        load = f" (+ {a['load']:.1f} s model load)" if a.get("load", 0.0) > 0.005 else ""
        value = a["error"] or (f"{a['value'][0]}={a['value'][1]:.4f}" if a["value"] else "")
        if b["error"]:
            print(f"| {task} | {a['seconds']:.2f}{load} | cannot run here: {b['error']} | | {value} | |", flush=True)
            continue
        tot_ours += a["seconds"]
        tot_theirs += b["seconds"]
        print(f"| {task} | {a['seconds']:.2f}{load} | {b['seconds']:.2f} | {_ratio(a['seconds'], b['seconds'])} | {value} "
              f"| {b['value'][:70]} |", flush=True)
    for proc in (ours, theirs):
        proc.stdin.close()
    (_, peak_ours), (_, peak_theirs) = _wait(ours), _wait(theirs)
    print(f"| **total (tasks both ran)** | {tot_ours:.2f} | {tot_theirs:.2f} | {_ratio(tot_ours, tot_theirs)} | | |")
    print(f"\npeak RSS: musiceval worker {peak_ours:.0f} MB, toolkit worker {peak_theirs:.0f} MB; "
          f"musiceval one-time model loads {loads:.1f} s (not in the task times)")


def side_by_side(args) -> None:
    tasks, missing = _tasks(args)
    work = _workdir(args, tasks)
    print(f"model {args.model}: {len(tasks)} tasks ({', '.join(tasks)}); absent: {', '.join(missing) or 'none'}; "
          f"toolkit {args.toolkit}")
    caches = [Path(tempfile.mkdtemp(prefix="musiceval-cold-")) for _ in range(2)]  # fresh: the first pass is cold
    for label in args.passes.split(","):
        if "process" in args.modes.split(","):
            per_process(args, tasks, work, caches[0], f"{label} musiceval cache")
        if "one" in args.modes.split(","):
            one_process(args, tasks, work, caches[1], f"{label} musiceval cache")


def main() -> None:
    from musiceval.protocols.mir.metrics.compat import COMPAT_MODES

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--outputs", type=Path, default=None, help="CMI-Bench outputs (default: shared/data's)")
    ap.add_argument("--model", default="mullama")
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "musiceval" / "embeddings"))
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--compat", default=None, choices=COMPAT_MODES,
                    help="scoring rules; with --toolkit the mode compared with the checkout (default cmi-bench; "
                         "cmi-bench@35235cb for a checkout of that commit)")
    ap.add_argument("--bertscore-model", default=None, help="captioning BERTScore model (none: skip it)")
    ap.add_argument("--tasks", default=None, help="comma-separated subset of tasks (default: all present)")
    ap.add_argument("--toolkit", default=None, metavar="DIR", help="a checkout of nicolaus625/CMI-bench: time its evaluate.py too")
    ap.add_argument("--toolkit-path", default=None, metavar="DIR", help="extra PYTHONPATH for the toolkit (its own deps)")
    ap.add_argument("--passes", default="cold,warm", help="with --toolkit: the passes over one cache, first cold (default cold,warm)")
    ap.add_argument("--modes", default="process,one", help="with --toolkit: process (one per task), one (one per side)")
    ap.add_argument("--worker", choices=["musiceval", "toolkit"], help=argparse.SUPPRESS)
    ap.add_argument("--workdir", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=None,
                    help="torch intra-op threads of the encoders (default: torch's, one per core; 1 on a shared machine)")
    ap.add_argument("--smoke", action="store_true", help="GTZAN alone, an empty cache of its own; one cold pass with --toolkit")
    args = ap.parse_args()
    args.outputs = args.outputs or shared_data("cmi-bench", "outputs")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)  # before torch is imported (workers inherit it)
        if args.worker != "toolkit":
            import torch

            torch.set_num_threads(args.threads)
    if not args.smoke:
        return dispatch(args)
    args.tasks, args.passes = "GTZAN", "cold"
    with tempfile.TemporaryDirectory(prefix="bench-mir-cache-") as cache:
        args.cache = cache
        dispatch(args)


def dispatch(args) -> None:
    """A worker, the side-by-side comparison (``--toolkit``) or musiceval alone."""
    if args.worker == "musiceval":
        worker_musiceval(args)
    elif args.worker == "toolkit":
        worker_toolkit(args)
    elif args.toolkit:
        if not (Path(args.toolkit) / "evaluate.py").is_file():
            sys.exit(f"--toolkit {args.toolkit}: no evaluate.py there; {CLONE_HINT}")
        side_by_side(args)
    else:
        run_in_process(args)


if __name__ == "__main__":
    main()
