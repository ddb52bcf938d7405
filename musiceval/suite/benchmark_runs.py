"""From a checkpoint to a verdict: prepare the benchmarks (cached), load the model once, generate
(resumable response cache), write the answers in each benchmark's format, declare them as the
model's answers and run every gate on them.

The simplest sound design: the generated answer files become the model's declared answer sources
(:mod:`musiceval.catalogue.answer_files`), so every existing gate of every protocol applies unchanged,
and the coverage gate counts the items that had a usable clip against the catalogue's item count.

- :func:`generate_answers`: the shared core (``musiceval run`` and ``pytest --musiceval-benchmarks``);
- :func:`write_suite_config` + :func:`run_gates`: ``musiceval run`` writes ``<out>/musiceval.toml``
  and runs ``pytest`` on it (the release gates are collected from the config file itself), so the
  verdict, ``results.json`` and the reports are the pytest plugin's;
- :func:`session_answers`: the pytest path. The controller generates; xdist workers read the
  entries the controller wrote (``entries.json``), so the model is loaded once per session.

With ``--shard i/n`` only the shard's items are generated (into the shared response cache) and
nothing is scored: join the shards' caches with ``musiceval merge`` and run again without
``--shard`` (every answer is then a cache hit).
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from musiceval.catalogue.answer_files import answer_path, answers_entry, safe_label, write_answers
from musiceval.catalogue.prepare import PrepareError, PrepareReport, ensure_prepared
from musiceval.catalogue.spec import Benchmark
from musiceval.suite.repeats import check_repeats, each_repeat

ENTRIES = "entries.json"
DEFAULT_CONDITIONS = ("correct", "random", "noise", "text_only")


@dataclass
class GeneratedRun:
    model: str
    out_dir: Path
    entries: list[dict] = field(default_factory=list)
    reports: list[PrepareReport] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: sampled answers per item (:mod:`musiceval.suite.repeats`)
    repeats: int = 1


def model_label(spec: str) -> str:
    """A short, credential-free label of a model spec (``hf:/models/qwen2`` -> ``qwen2``)."""
    from musiceval.redact import redact

    rest = spec.partition(":")[2]
    name = rest.partition("#")[2] or redact(rest).split("?")[0].rstrip("/").rpartition("/")[2] or redact(spec)
    return safe_label(name)


def run_key(spec: str, args: Mapping[str, Any], benchmarks: Sequence[Benchmark], conditions: Sequence[str], seed: int,
            repeats: int = 1) -> str:
    """A folder name unique to what was asked (model, arguments, benchmarks, conditions, seed, and
    the repeats when more than one)."""
    asked = [spec, dict(sorted(args.items())), [b.name for b in benchmarks], list(conditions), seed]
    blob = json.dumps(asked + ([repeats] if repeats != 1 else []), default=str, sort_keys=True)
    return f"{model_label(spec)}-{hashlib.sha256(blob.encode()).hexdigest()[:10]}"


def conditions_for(benchmark: Benchmark, conditions: Sequence[str]) -> list[str]:
    return [c for c in conditions if c == "correct" or c in benchmark.controls]


def generate_answers(spec: str, benchmarks: Sequence[Benchmark], *, data_root: Path, cache_dir: Path, out_dir: Path,
                     model_args: Mapping[str, Any] | None = None, conditions: Sequence[str] = DEFAULT_CONDITIONS,
                     audio_dirs: Mapping[str, Path] | None = None, seed: int = 0, shard: tuple[int, int] | None = None,
                     progress: bool = True, log: Callable[[str], None] = print, model_options: Mapping[str, Any] | None = None,
                     repeats: int = 1, repeats_flag: str = "--repeats", args_flag: str = "--model-args") -> GeneratedRun:
    """Prepare, generate and write the answer files (see the module docstring). ``repeats`` = K
    asks every item K times, each repeat with its own seed (:mod:`musiceval.suite.repeats`);
    ``repeats_flag`` and ``args_flag`` name the options in a refusal."""
    from musiceval.data.manifest import load_manifest
    from musiceval.generate import generate_responses, require_answers
    from musiceval.models.args import split_model_args
    from musiceval.models.base import GenerationSettings, load_model
    from musiceval.models.cache import ResponseCache
    from musiceval.redact import redact

    unknown = [c for c in conditions if c not in DEFAULT_CONDITIONS]
    if unknown:
        raise ValueError(f"--conditions {','.join(unknown)}: unknown; choose from {','.join(DEFAULT_CONDITIONS)}")
    load_args, settings = split_model_args(dict(model_args or {}), GenerationSettings(seed=seed))
    repeats = check_repeats(repeats, settings, flag=repeats_flag, args_flag=args_flag,
                            formats=[(b.name, b.answer_format) for b in benchmarks])
    label = model_label(spec)
    run = GeneratedRun(label, out_dir, repeats=repeats)
    audio_dirs = audio_dirs or {}
    for bench in benchmarks:  # datasets first: a missing clip folder stops the run before the model loads
        report = ensure_prepared(bench, data_root, audio_dir=audio_dirs.get(bench.name), progress=progress, log=log)
        log(("reused " if report.reused else "prepared ") + report.summary())
        run.reports.append(report)
    model = load_model(spec, **{**dict(model_options or {}), **load_args})
    cache = ResponseCache(Path(cache_dir) / "responses")
    try:
        for bench, report in zip(benchmarks, run.reports):
            items, bad = load_manifest(report.manifest)
            asked = conditions_for(bench, conditions)
            skipped = [c for c in conditions if c not in asked]
            if skipped:
                run.notes.append(f"{bench.name}: {', '.join(skipped)} not asked ({bench.answer_format} answers hold no such control)")
            responses: list = []
            ask = partial(generate_responses, model, items, conditions=asked, data_dir=report.audio_root, cache=cache,
                          progress=progress, shard=shard)
            for repeat, result in each_repeat(lambda s: ask(settings=s), settings, repeats):
                run.failures[bench.name] = run.failures.get(bench.name, len(bad)) + len(result.failures)
                for failure in result.failures[:5]:
                    log(f"{bench.name}: {failure.item_id}: {failure.reason}")
                which = f" (repeat {repeat} of {repeats})" if repeats > 1 else ""
                log(f"{bench.name}{which}: {result.n_generated} generated, {result.n_cached} from the cache, "
                    f"{len(result.failures)} failed")
                require_answers(result, redact(spec), f"{bench.name} ({len(items)} items x {len(asked)} conditions){which}")
                responses += result.responses
            if shard is not None:
                continue
            path = write_answers(bench, report, items, responses, out_dir, label)
            run.entries.append(answers_entry(bench, path, report))
    finally:
        model.close()
    if shard is None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / ENTRIES).write_text(json.dumps({"model": label, "entries": run.entries}, indent=1) + "\n", encoding="utf-8")
    return run


def judged(benchmarks: Sequence[Benchmark]) -> list[Benchmark]:
    """The benchmarks whose answers the LLM judge scores (``protocol = "judge"``)."""
    return [b for b in benchmarks if b.protocol == "judge"]


def judge_defaults(benchmarks: Sequence[Benchmark]) -> dict[str, Any]:
    """The ``[judge]`` keys the judged benchmarks' catalogue entries default to (``options["judge"]``,
    e.g. AIR-Bench's ``mode = "rubric"``), where every judged benchmark of the run agrees on a key:
    one ``[judge]`` section scores them all. The run's own ``judge.KEY=VALUE`` options win."""
    found = [dict(b.options.get("judge") or {}) for b in judged(benchmarks)]
    if not found:
        return {}
    return {k: v for k, v in found[0].items() if all(f.get(k, object()) == v for f in found[1:])}


def require_judge(benchmarks: Sequence[Benchmark], section: Mapping[str, Any], how: str) -> dict[str, Any]:
    """Refuse, before anything is prepared or generated, a run that asks a judged benchmark with no
    pinned judge: the ``[judge]`` section is checked as the judge protocol checks it at start-up
    (:meth:`musiceval.protocols.judge.protocol.JudgeProtocol.scorer`). ``how`` names where the judge
    is given (``--option judge.model=JUDGE``). Returns the judge's facts ({} without a judged benchmark)."""
    names = [b.name for b in judged(benchmarks)]
    if not names:
        return {}
    from musiceval.protocols import PROTOCOLS

    try:
        return PROTOCOLS.get("judge").scorer(section)
    except ValueError as exc:
        raise ValueError(f"{', '.join(names)} is scored by an LLM judge; [judge]: {exc}; {how}") from None


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value))


def write_suite_config(run: GeneratedRun, *, thresholds: Mapping[str, Mapping[str, Any]] | None = None) -> Path:
    """``<out>/musiceval.toml`` declaring the generated answers as the model's.

    A config's paths are read relative to the config's own folder, so answer files inside ``<out>``
    are written relative to it (the run folder can move, or travel as a CI artefact, whole); the
    others stay absolute."""
    lines = ["# written by `musiceval run`: the generated answers, declared as the model's", "[[model]]",
             f"name = {_toml_value(run.model)}", *([f"repeats = {run.repeats}"] if run.repeats != 1 else []), ""]
    base = Path(run.out_dir).resolve()
    for entry in run.entries:
        lines.append("[[model.answers]]")
        entry = {**entry, "file": _relative_to(Path(entry["file"]).resolve(), base)} if "file" in entry else entry
        lines += [f"{k} = {_toml_value(v)}" for k, v in entry.items()]
        lines.append("")
    for section, values in (thresholds or {}).items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in values.items()]
        lines.append("")
    path = run.out_dir / "musiceval.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _relative_to(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return str(path)


def run_gates(config: Path, results_dir: Path, pytest_args: Sequence[str] = ()) -> int:
    """``pytest <config>``: every release gate on the declared answers; returns pytest's exit status."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    command = [sys.executable, "-m", "pytest", str(config), f"--musiceval-config={config}",
               f"--musiceval-results-dir={results_dir}", "-p", "no:cacheprovider", "-p", "no:randomly",
               f"--rootdir={config.parent}", "-q", *pytest_args]
    return subprocess.call(command, cwd=str(config.parent), env=env)


def session_answers(spec: str, benchmarks: Sequence[Benchmark], *, data_root: Path, cache_dir: Path,
                    model_args: Mapping[str, Any], seed: int, worker: bool, progress: bool = True,
                    repeats: int = 1) -> tuple[str, list[dict]]:
    """The pytest path: ``(model label, answers entries)``; the controller generates, a worker reads
    what the controller wrote for the same request."""
    out_dir = Path(cache_dir) / "catalogue-runs" / run_key(spec, model_args, benchmarks, DEFAULT_CONDITIONS, seed, repeats)
    if worker:
        try:
            data = json.loads((out_dir / ENTRIES).read_text(encoding="utf-8"))
            return data["model"], list(data["entries"])
        except (OSError, ValueError, KeyError) as exc:
            raise PrepareError(f"{out_dir / ENTRIES}: the controller's generated answers are not readable ({exc}); "
                               "rerun the session") from None
    run = generate_answers(spec, benchmarks, data_root=data_root, cache_dir=cache_dir, out_dir=out_dir,
                           model_args=model_args, seed=seed, progress=progress, repeats=repeats,
                           repeats_flag="--musiceval-repeats", args_flag="--musiceval-model-args",
                           log=lambda line: print(f"musiceval: {line}", file=sys.stderr))
    return run.model, run.entries


__all__ = ["DEFAULT_CONDITIONS", "GeneratedRun", "answer_path", "generate_answers", "judged", "model_label",
           "require_judge", "run_gates", "run_key", "session_answers", "write_suite_config"]
