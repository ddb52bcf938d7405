"""``musiceval mir-live``: answer CMI-Bench instruction files with a model (:mod:`musiceval.protocols.mir.live`),
write the toolkit's output files and print each task's metrics as JSON lines.

The output files go to ``--out``, by default ``.musiceval/mir-live/<model label>`` (a hidden
folder, like ``musiceval run``'s ``.musiceval/runs/``, never beside the user's files); the folder
is printed on stderr at the end."""
from __future__ import annotations

import json
from pathlib import Path

from musiceval.commands.registry import register_command
from musiceval.protocols.mir.metrics.tasks import FAMILIES
from musiceval.ranges import AT_LEAST_ONE, NON_NEGATIVE_INT, arg
from musiceval.protocols.mir.live import find_instruction_file, run_live_task, write_outputs

#: where the output files go without --out: one folder per model label
DEFAULT_OUT = Path(".musiceval") / "mir-live"


def model_label(spec: str) -> str:
    """The model's name in output file and folder names: the spec's last path part, safe characters only."""
    from musiceval.models.cache import redact_spec

    return "".join(c if c.isalnum() or c in "-." else "-" for c in redact_spec(spec).split("/")[-1]) or "model"


def configure(ap) -> None:
    ap.add_argument("--model", required=True, help="model spec: hf:<dir>, openai-compatible:<url>#<model>, ...")
    ap.add_argument("--instructions", required=True, type=Path,
                    help="folder with CMI_<task>.jsonl (itself, instructions/ or data/*/: a CMI-bench clone)")
    ap.add_argument("--data-dir", type=Path, default=None, help="root the audio paths are relative to (default --instructions)")
    ap.add_argument("--tasks", default="GS_key,Nsynth_pitch,gtzan_beat,Nsynth_instrument", help="comma-separated CMI-Bench tasks")
    ap.add_argument("--split", default="test", help="instruction split to run ('all' for every line)")
    ap.add_argument("--limit", type=arg(AT_LEAST_ONE), default=None, help="first N instructions per task")
    from musiceval.cache_dir import add_cache_dir_argument

    add_cache_dir_argument(ap, "response cache (DIR/responses)")
    ap.add_argument("--out", type=Path, default=None,
                    help=f"write <model>_<task>.jsonl output files here (default {DEFAULT_OUT}/<model label>)")
    ap.add_argument("--max-tokens", type=arg(AT_LEAST_ONE), default=256)
    ap.add_argument("--seed", type=arg(NON_NEGATIVE_INT), default=0)
    ap.add_argument("--device", default=None, help="torch device for hf: models")
    from musiceval import progress

    progress.add_progress_arguments(ap)


def run(args) -> int:
    """Answer CMI-Bench instruction files with a model, write the toolkit's output files and print
    each task's metrics as JSON lines.

    Exit status: 0 every instruction answered, 1 some failed (listed on stderr), 2 unusable input.
    """
    import sys

    from musiceval.data.cmibench import TASKS
    from musiceval.models.base import GenerationSettings, ModelSpecError, load_model
    from musiceval.models.cache import ResponseCache, redact_spec

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in TASKS or FAMILIES[t] in ("tagging", "captioning")]
    if unknown or not tasks:
        print(f"error: --tasks {unknown or 'empty'}: choose from the non-tagging, non-captioning tasks of "
              f"{', '.join(TASKS)} (tagging and captioning need a text encoder or a BERTScore model: call "
              "run_live_task(..., embed=..., bertscorer=...) from Python)", file=sys.stderr)
        return 2
    try:
        files = {t: find_instruction_file(args.instructions, t) for t in tasks}
        model = load_model(args.model, **({"device": args.device} if args.device else {}))
    except (FileNotFoundError, ModelSpecError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    settings = GenerationSettings(0.0, args.max_tokens, args.seed)
    from musiceval.cache_dir import RESPONSES, cache_path

    responses_dir = cache_path(args, RESPONSES)
    from musiceval import progress

    progress.set_mode(getattr(args, "progress", None))
    show_progress = progress.enabled()
    name = model_label(model.spec)
    out = args.out if args.out is not None else DEFAULT_OUT / name
    written = 0
    n_failed = 0
    try:
        for task, path in files.items():
            live = run_live_task(model, task, path, data_dir=args.data_dir or args.instructions, cache=ResponseCache(responses_dir),
                                 settings=settings, split=None if args.split == "all" else args.split, limit=args.limit,
                                 progress=show_progress)
            for f in live.failures:
                print(f"FAILED {task} {f.item_id}: {f.reason}", file=sys.stderr)
            n_failed += len(live.failures)
            if live.records:
                out.mkdir(parents=True, exist_ok=True)
                write_outputs(out / f"{name}_{task}.jsonl", live.records)
                written += 1
            res = live.result
            print(json.dumps({"task": task, "model": redact_spec(model.spec), "n": len(live.items), "n_answered": len(live.records),
                              "n_failed": len(live.failures), "n_unparsed": len(res.failures) if res else None,
                              "metrics": res.metrics if res else None, "baseline": res.baseline_metrics if res else None,
                              "error": live.error}), flush=True)
    finally:
        model.close()
    if written:
        print(f"mir-live: {written} output file(s) in {out}", file=sys.stderr)
    return 1 if n_failed else 0


register_command("mir-live", help="answer CMI-Bench instruction files with a model and score them",
                 configure=configure, run=run)
