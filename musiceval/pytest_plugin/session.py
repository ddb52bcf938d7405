"""Start of a session: the suite config loaded and checked, the results directory claimed, the run's
metadata.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import re
import sys
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from musiceval.pytest_plugin import progress
from musiceval.pytest_plugin.collection import _XdistGroupSuffix
from musiceval.pytest_plugin.options import _STATES, _group_sources_by_default, _is_worker, _opt, _state, _strict
from musiceval.redact import redact
from musiceval.suite.config import AnswerSource, SuiteConfig, apply_options, config_for_answers, load_config
from musiceval.suite.schema import ConfigError
from musiceval.writes import cannot_write

#: the fix a results directory that cannot be written names
RESULTS_DIR_FIX = "pass --musiceval-results-dir DIR on a writable disk"

# ----------------------------------------------------------------------------- configure


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped with the reason otherwise (fails under --strict)")
    config.addinivalue_line("markers", "llm(cassette=None): needs a recorded cassette; skipped with the recording command otherwise")
    config.addinivalue_line("markers", "dataset(name, path=None): needs <data-dir>/<name>; skipped with the download instruction otherwise")
    config.addinivalue_line("markers", "slow: slower than a few seconds; deselect with -m 'not slow'")
    config.addinivalue_line("markers", "musiceval_live_model: asks a declared live model (not applicable without one)")
    config.addinivalue_line("markers", "musiceval_self_check: checks the suite's own machinery (never a gate of the "
                                       "declared model); runs with [defaults] self_checks or --musiceval-self-checks")
    config.addinivalue_line("markers", "musiceval_scorer_check: a self-check of the scorer of a declared answer source "
                                       "(an LLM judge): always runs with that source; a failure makes the verdict ERROR")
    try:
        suite = _load_suite(config)
    except ConfigError as exc:
        pytest.exit(f"musiceval: {exc}", returncode=2)
    self_checks = _opt(config, "musiceval_self_checks")
    self_checks = bool(suite.thresholds["defaults"]["self_checks"] if self_checks is None else self_checks)
    if _is_worker(config):
        _share_cpus_between_workers(len(suite.sources()), self_checks)
        if config.workerinput.get("musiceval_loadgroup"):
            config.pluginmanager.register(_XdistGroupSuffix(), "musiceval-xdist-group-suffix")
        results_dir = Path(config.workerinput["musiceval_results_dir"])
        meta, session = config.workerinput["musiceval_meta"], config.workerinput["musiceval_session"]
    else:
        _group_sources_by_default(config)
        try:  # before the results folder is made: a refused config leaves nothing behind
            meta = _run_meta(config, suite)
        except ConfigError as exc:
            pytest.exit(f"musiceval: {exc}", returncode=2)
        session = f"{_dt.datetime.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:8]}"
        given = _opt(config, "musiceval_results_dir")
        results_dir = Path(given) if given else Path(config.rootpath) / ".musiceval" / "results" / session
        # the folders this session makes; a session that records nothing removes them again
        made = [d for d in (results_dir, *results_dir.parents) if not d.exists()]
        try:
            _claim_results_dir(results_dir, session)
        except ConfigError as exc:
            pytest.exit(f"musiceval: {exc}", returncode=2)
        except OSError as exc:  # nothing ran yet: a usage error, one line naming the file
            pytest.exit(f"musiceval: {cannot_write(exc.filename or results_dir, exc, RESULTS_DIR_FIX)}", returncode=2)
    config._musiceval = {"results_dir": results_dir, "meta": meta, "suite": suite, "session": session,  # type: ignore[attr-defined]
                         "self_checks": self_checks,
                         "errors": [], "deselected_self_checks": 0, "n_gate_tests": 0,
                         "made": [] if _is_worker(config) else made}
    _STATES.append(config._musiceval)  # type: ignore[attr-defined]
    if not _is_worker(config):
        progress.register(config, suite)
    try:  # live-model fixtures (music_lm, response_cache) when the models package is present
        import musiceval.models.fixtures as model_fixtures
    except ImportError:
        pass
    else:
        if not config.pluginmanager.is_registered(model_fixtures):
            config.pluginmanager.register(model_fixtures, "musiceval-models")


def rootpath(config: pytest.Config) -> Path:
    """The session's rootdir. An xdist worker works out its own from the raw arguments, where the value
    of an option (``--musiceval-results-dir /elsewhere``, created by then) can move it: workers use the
    controller's."""
    return Path(getattr(config, "workerinput", {}).get("musiceval_rootdir") or config.rootpath)


def _load_suite(config: pytest.Config) -> SuiteConfig:
    suite = load_config(_opt(config, "musiceval_config"), rootpath(config),
                        thresholds_file=_opt(config, "musiceval_thresholds"))
    data_dir = _opt(config, "musiceval_data_dir")
    if data_dir and not Path(data_dir).is_dir():
        raise ConfigError(f"--musiceval-data-dir {data_dir}: no such directory; pass the root of the downloaded datasets")
    spec = _opt(config, "musiceval_model")
    if spec:
        prefix, _, rest = spec.partition(":")
        suite = _rules_for_a_model_given_here(config, suite)
        if prefix == "recorded":
            if not rest:
                raise ConfigError("--musiceval-model recorded needs a path: recorded:<answer file or CMI-Bench outputs dir>")
            suite = config_for_answers(rest, base=suite)
        else:
            from musiceval.models.base import registered_prefixes

            if prefix not in registered_prefixes():
                raise ConfigError(f"--musiceval-model {redact(spec)}: no adapter for {prefix!r}; known: "
                                  f"{', '.join(registered_prefixes())}")
            from musiceval.suite.config import ModelDecl

            # the spec loads the model; a name without its credentials labels it everywhere
            suite = replace(suite, models=(ModelDecl(live_model_name(spec), live=spec),))
    benchmarks = _opt(config, "musiceval_benchmarks") or suite.benchmarks
    repeats = _opt(config, "musiceval_repeats")
    if repeats is not None:
        if repeats < 1:
            raise ConfigError(f"--musiceval-repeats {repeats}: expected a whole number >= 1 (1: one answer per item)")
        if repeats > 1 and not suite.live_models():
            raise ConfigError(f"--musiceval-repeats {repeats} asks a live model each item {repeats} times, and no model "
                              "here is live: pass --musiceval-model hf:DIR (or openai-compatible:URL#MODEL) with "
                              "--musiceval-benchmarks, or drop --musiceval-repeats")
        suite = replace(suite, models=tuple(replace(m, repeats=repeats) if m.live else m for m in suite.models))
    asked = [m for m in suite.live_models() if m.repeats > 1]
    if asked and not benchmarks:  # the repeats are asked on the catalogue benchmarks, nowhere else
        raise ConfigError(f"model {asked[0].name}: repeats = {asked[0].repeats} asks the catalogue benchmarks "
                          "several times, and none is named: pass --musiceval-benchmarks A,B (or benchmarks = [...] "
                          "in the config), or drop the repeats")
    if benchmarks:
        suite = _with_benchmark_answers(config, suite, benchmarks)
    options = _opt(config, "musiceval_option", []) or []
    if options:
        suite = apply_options(suite, options)
    if not _is_worker(config):  # the controller checks them before it starts the workers
        for source in suite.sources():  # readable as their protocol's answers, each one model's single run
            _check_format(source)
        for source in suite.baseline_sources():  # a baseline's unusable answer file is refused now, not per test
            _check_format(source, whose="baseline")
    from musiceval.models.args import coerce_model_args, parse_model_args

    try:  # model arguments are checked before any model loads
        for model in suite.live_models():
            coerce_model_args(model.args)
        parse_model_args(str(_opt(config, "musiceval_model_args", "") or ""))
    except ValueError as exc:
        raise ConfigError(f"model arguments: {exc}") from None
    return suite


#: what the session notes when ``--musiceval-model`` replaces the models of a config found in the rootdir
RULES_NOT_INHERITED = ("{config} declares its own models; its rules (thresholds, [checks], [release], caps, "
                       "self-checks, baseline) were written for them and do not apply to --musiceval-model: the "
                       "built-in defaults do (pass --musiceval-config {config} to apply its rules)")


def _rules_for_a_model_given_here(config: pytest.Config, suite: SuiteConfig) -> SuiteConfig:
    """The rules a model named by ``--musiceval-model`` is judged by: those of a config passed
    explicitly (``--musiceval-config``), else the built-in defaults (with ``--musiceval-thresholds``),
    never the rules the rootdir's config wrote for the models it declares (the embedded default's
    demo rules: coverage as a finding, capped tagging, self-checks)."""
    if _opt(config, "musiceval_config") or suite.path is None or not any(m.answers or m.live for m in suite.models):
        return suite  # a config that declares no answers or live model has no models of its own to replace
    from musiceval.suite.config import read_toml
    from musiceval.suite.schema import validate_thresholds

    overlay = _opt(config, "musiceval_thresholds")  # checked by load_config already
    config._musiceval_rules_note = RULES_NOT_INHERITED.format(config=suite.path.name)  # type: ignore[attr-defined]
    return SuiteConfig(None, suite.root, thresholds=validate_thresholds(read_toml(Path(overlay)) if overlay else {},
                                                                        str(overlay or "defaults")))


def pytest_report_header(config: pytest.Config) -> str | None:
    return getattr(config, "_musiceval_rules_note", None) and f"musiceval: {config._musiceval_rules_note}"


def _with_benchmark_answers(config: pytest.Config, suite: SuiteConfig, benchmarks: Any) -> SuiteConfig:
    """The suite whose model's answers are what the live model answered on the catalogue benchmarks
    (:func:`musiceval.suite.benchmark_runs.session_answers`: generated once by the controller)."""
    from musiceval.cache_dir import default_cache_dir
    from musiceval.suite.benchmark_runs import judged, require_judge, session_answers
    from musiceval.catalogue.prepare import data_root
    from musiceval.catalogue.spec import benchmark_names
    from musiceval.models.args import coerce_model_args, parse_model_args
    from musiceval.suite.config import ModelDecl

    live = suite.live_models()
    if not live:
        raise ConfigError("--musiceval-benchmarks needs a live model to ask: pass --musiceval-model hf:DIR (or "
                          "openai-compatible:URL#MODEL), or declare live = \"...\" for the model in the config")
    try:
        benches = benchmark_names(benchmarks)
        if judged(benches):  # no pinned judge: refused before the model is loaded and asked
            thresholds = apply_options(suite, list(_opt(config, "musiceval_option", []) or [])).thresholds
            require_judge(benches, thresholds.get("judge", {}),
                          "set [judge] model in the config, or pass --musiceval-option judge.model=JUDGE, as "
                          "docs/judge.md says")
        args = {**coerce_model_args(live[0].args), **parse_model_args(str(_opt(config, "musiceval_model_args", "") or ""))}
        name, entries = session_answers(live[0].live, benches, data_root=data_root(_opt(config, "musiceval_data_dir")),
                                        cache_dir=Path(_opt(config, "musiceval_cache_dir") or default_cache_dir()),
                                        model_args=args, seed=int(_opt(config, "musiceval_seed", 0)), worker=_is_worker(config),
                                        repeats=live[0].repeats)
    except (ValueError, OSError) as exc:
        raise ConfigError(f"--musiceval-benchmarks: {exc}") from None
    # the answers are the model's: declared like recorded ones, so the model is not loaded again
    model = ModelDecl(live[0].name, answers=tuple(entries), repeats=live[0].repeats)
    return SuiteConfig(suite.path, suite.root, (model,), suite.thresholds, suite.checks, suite.required, suite.baseline)


def live_model_name(spec: str) -> str:
    """The label of a live spec: its served model name (``...#qwen2``), else the last part of its
    hub id or directory (``hf:Qwen/Qwen2-Audio-7B-Instruct`` -> ``Qwen2-Audio-7B-Instruct``);
    never its credentials."""
    rest = spec.partition(":")[2]
    name = rest.partition("#")[2] or redact(rest).split("?")[0].rstrip("/").rpartition("/")[2] or redact(spec)
    return re.sub(r"[/\[\]*?\n]", "_", name)[:80]


def _check_format(source: AnswerSource, whose: str = "model") -> None:
    from musiceval.data.formats import FORMATS, FormatError, detect_format

    try:
        if source.format:
            fmt = FORMATS.get(source.format)
            if source.protocol not in fmt.protocols:
                raise FormatError(f"{source.path}: format {source.format!r} feeds {', '.join(fmt.protocols)}, not {source.protocol!r}")
        else:
            detect_format(source.path, source.protocol)
        from musiceval.suite.runs import load_source

        load_source(source)  # one model's single run, or refused now (several models, more items than the benchmark)
    except (FormatError, KeyError) as exc:
        raise ConfigError(f"{whose} {source.model!r}: {str(exc).strip(chr(34))}") from None


def _share_cpus_between_workers(sources: int, self_checks: bool) -> None:
    """Give each xdist worker its torch/BLAS threads (set before torch loads). Each answer source
    is built on one worker (its xdist group):

    - fewer sources than workers: the others idle, so the cores are divided among the workers that
      have a source (one MusicQA file on ``-n 4`` is one worker's work, and it gets every core);
    - more sources than workers: every worker gets every core. While all are busy they share the
      cores; at the end, when the largest source's worker runs alone, it uses them all instead of
      one (LTU's 19-file CMI-Bench folder on ``-n 4``, 2 cores, cold: one thread each 323 s at
      load 6.9, MusicCaps 219 s of it; two each 149-240 s, MusicCaps 88-136 s; 236-253 CPU-s
      either way, results equal; docs/performance.md, "Cold one-file runs");
    - the self-checks spread over every worker: the cores divided among all of them.

    With more than one thread, idle OpenMP threads sleep instead of spinning
    (``OMP_WAIT_POLICY=PASSIVE``, the OpenMP specification's wait policy): a core that another
    worker or process holds then costs a thread's wait, not a core spinning against the thread it
    waits for (MiniLM on 2 cores with one held by another job: 57 s with two spinning threads, 46 s
    with two sleeping ones, 43-47 s with one). A variable already set in the environment is kept."""
    workers = max(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")), 1)
    cores = os.cpu_count() or 1
    if self_checks:
        threads = cores // workers
    elif sources > workers:
        threads = cores
    else:
        threads = cores // max(sources, 1)
    threads = max(1, threads)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, str(threads))
    if threads > 1:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


def _claim_results_dir(results_dir: Path, session: str) -> None:
    """Hold ``results_dir`` for this session: refuse one that another live session holds."""
    results_dir.mkdir(parents=True, exist_ok=True)
    lock = results_dir / ".session.lock"
    try:
        holder = json.loads(lock.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        holder = None
    if isinstance(holder, dict) and _alive(holder.get("pid")) and holder.get("session") != session:
        raise ConfigError(f"results directory {results_dir} is in use by another running session (pid {holder['pid']}); "
                          "pass another --musiceval-results-dir or wait for it to finish")
    try:
        lock.write_text(json.dumps({"pid": os.getpid(), "session": session}), encoding="utf-8")
    except OSError as exc:  # a full disk: no torn lock is left, and the error names it
        lock.unlink(missing_ok=True)
        exc.filename = exc.filename or str(lock)
        raise


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:  # xdist hook (controller side)
    state = _state(node.config)
    node.workerinput["musiceval_results_dir"] = str(state["results_dir"])
    node.workerinput["musiceval_rootdir"] = str(node.config.rootpath)
    node.workerinput["musiceval_meta"] = state["meta"]
    node.workerinput["musiceval_session"] = state["session"]
    node.workerinput["musiceval_loadgroup"] = node.config.getvalue("dist") == "loadgroup"


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for pkg in ("musiceval", "numpy", "torch", "transformers", "pytest"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def scorers(suite: SuiteConfig) -> dict[str, dict[str, Any]]:
    """``{protocol: {"scorer": ...}}`` of every protocol the suite's sources use: what each one's config
    section decides of its scores (:meth:`~musiceval.protocols.base.Protocol.scorer`), for the provenance."""
    from musiceval.protocols import PROTOCOLS

    out: dict[str, dict[str, Any]] = {}
    for name in sorted({s.protocol for s in suite.sources()}):
        try:
            scorer = PROTOCOLS.get(name).scorer(suite.thresholds.get(name, {}))
        except ValueError as exc:  # a section that cannot score (no judge named): refused at start-up
            raise ConfigError(f"{suite.where}: [{name}]: {exc}") from None
        out[name] = {"scorer": scorer} if scorer else {}
    return out


def _run_meta(config: pytest.Config, suite: SuiteConfig) -> dict[str, Any]:
    root = Path(config.rootpath)

    def rel(path: Path | None) -> str | None:
        if path is None:
            return None
        try:
            return str(Path(path).resolve().relative_to(root.resolve()))
        except ValueError:
            return Path(path).name

    from musiceval.provenance import fingerprint

    live = suite.live_models()
    seed = int(_opt(config, "musiceval_seed", 0))
    repeats = max((m.repeats for m in suite.models), default=1)
    from musiceval.models.fixtures import model_args_from_config
    from musiceval.suite.files import answer_files, data_files

    provenance = fingerprint(protocols=scorers(suite), seed=seed,
                             model=live[0].live if live else ",".join(m.name for m in suite.models),
                             decoding=model_args_from_config(config) if live else None,
                             backend="live" if live else "recorded",
                             data_files=data_files(suite), answer_files=answer_files(suite), repeats=repeats)
    meta = {
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "model": suite.models[0].name if len(suite.models) == 1 else "",
        "provenance": provenance,
        "baseline": (rel(Path(suite.baseline["results"])) if suite.baseline.get("results")
                     else suite.baseline["model"].name if suite.baseline.get("model") else None),
        "adjust": suite.thresholds["defaults"]["adjust"],
        # the margins and options every gate used (musiceval compare reads its regression margins here)
        "thresholds": suite.thresholds,
        "models": [{"name": m.name, "live": redact(m.live) if m.live else None,
                    "answers": [s.id for s in suite.sources() if s.model == m.name]}
                   for m in suite.models],
        "config": rel(suite.path),
        "seed": seed,
        "strict": _strict(config),
        "required": list(suite.required),
        "versions": _versions(),
    }
    if repeats != 1:  # sampled answers per item (musiceval.suite.repeats)
        meta["repeats"] = repeats
    return meta


