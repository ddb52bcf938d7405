"""The musiceval pytest plugin: options, the suite config, parametrization over the declared answers,
the ``gate`` fixture, and one merged report per session.

Registered under the ``pytest11`` entry point, so any project that installs musiceval gets it. Every
option is namespaced (``--musiceval-*``) so a project's own ``conftest.py`` may define ``--model``
or ``--seed``; the plugin works with or without pytest-xdist (``-p no:xdist``).

- **Suite config** (:mod:`musiceval.suite.config`): loaded and validated when pytest starts; an
  unknown key, a missing answer file or a file given to the wrong protocol stops the session with
  one line (exit code 2) before any test runs.
- **Parametrization**: a test that asks for the ``source`` fixture runs once per declared answer
  set of its module's protocol(s) (``PROTOCOL = "choice"`` or ``PROTOCOLS = (...)``); the ``run``
  fixture is that source's :class:`~musiceval.protocols.base.Protocol`, built once per worker
  (tests of one source share an xdist group, so ``--dist loadgroup`` scores it once per run).
  With no declared answers for a protocol its tests are reported as not applicable.
- **Outcomes**: a test may record several gates; it fails after all of them ran if any FAILed, or
  if a required gate is INCONCLUSIVE (``--musiceval-inconclusive xfail`` opts out: xfail). A test
  that recorded only FINDINGs is reported as *skipped* with the reason ``FINDING: ...`` (never as a
  passing test).
- **Self-checks** (tests marked ``musiceval_self_check``, and the live tests on the suite's own tiny
  model when no live model is declared) check the suite's machinery, never the declared model:
  they run where the config sets ``[defaults] self_checks = true`` (the embedded default) or with
  ``--musiceval-self-checks``, and are reported apart.
- **One verdict** (:mod:`musiceval.verdict`): PASSED, FAILED, INCONCLUSIVE, NOTHING DECIDED or
  ERROR, computed once at the end from the gates about the declared model, the errored or timed-out
  tests, refused baselines and artefacts that could not be written; the terminal's last line,
  ``results.json``, the reports, the JUnit file (testsuite property ``musiceval_verdict``) and the
  exit code say the same word.
- **Release profile** (``[release] required``): the gates a release needs; under ``--strict`` every
  required check must PASS. Without a profile every gate about the declared model is required.
- **Results**: every process appends rows to ``<results-dir>/parts/<session>-<worker>.jsonl``; the
  controller merges this session's parts and writes ``scores.jsonl``, ``samples.jsonl``, the reports
  and, last, ``results.json``, each to a temporary file renamed into place, so a full disk leaves
  no torn artefact beside a verdict. A results directory is held by one live session at a time (a
  lock file); nothing another session wrote is deleted.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import re
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from musiceval.gates import Gate, GateConfig
from musiceval.records import GateResult, Outcome, to_jsonable
from musiceval.redact import redact, redact_meta
from musiceval.suite.config import Source, SuiteConfig, apply_options, config_for_answers, load_config
from musiceval.suite.schema import ConfigError
from musiceval.verdict import MODEL, SELF_CHECK, subject_of

DATASET_HINTS = {
    "fma": "download fma_metadata.zip and fma_small.zip from https://github.com/mdeff/fma and unzip into <data-dir>/fma",
    "musicnet": "download MusicNet from https://zenodo.org/records/5120004 and unpack into <data-dir>/musicnet",
    "musicqa": "download MusicQA (MTG eval split) from https://huggingface.co/datasets/mu-llama/MusicQA into <data-dir>/musicqa",
    "muchomusic": "download muchomusic.csv and the audio from https://github.com/mulab-mir/muchomusic into <data-dir>/muchomusic",
    "nsynth": "download nsynth-test.jsonwav.tar.gz from https://magenta.tensorflow.org/datasets/nsynth into <data-dir>/nsynth",
    "cmi-bench": "clone https://github.com/nicolaus625/CMI-bench and follow its data instructions into <data-dir>/cmi-bench",
}
NOT_APPLICABLE = "not applicable: "
#: the subject of a test about something the config does not give (deselected outside the demo)
NOT_GIVEN = "n/a"
#: the session states of this process, innermost last (an in-process pytester run nests one), for
#: the report hooks that get no config
_STATES: list[dict[str, Any]] = []
FINDING_PREFIX = "FINDING: "
REPORT_PREFIX = "REPORT: "
#: answers logged per source for the report's drill-down (samples.jsonl)
MAX_SAMPLES_PER_SOURCE = 5000


# ----------------------------------------------------------------------------- options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("musiceval", "musiceval: music LM release gates")
    add = group.addoption
    add("--musiceval-config", default=None, metavar="FILE",
        help="suite config (default: musiceval.toml in the rootdir, else [tool.musiceval] in pyproject.toml)")
    add("--musiceval-model", default=None, metavar="SPEC",
        help="override the config's model under test: recorded:FILE (an answer file, protocol detected from its "
             "content), recorded:DIR (CMI-Bench outputs), or a live spec hf:ID_OR_DIR, openai-compatible:URL#MODEL, "
             "text-only:SPEC")
    add("--musiceval-model-args", default=None, metavar="K=V,...",
        help="model arguments of a live spec: dtype=bfloat16,device_map=auto,revision=...,max_new_tokens=...")
    add("--musiceval-data-dir", default=os.environ.get("MUSICEVAL_DATA"), metavar="DIR",
        help="root of downloaded datasets (env MUSICEVAL_DATA)")
    add("--musiceval-thresholds", default=None, metavar="FILE", help="a TOML file overlaying the config's threshold sections")
    add("--musiceval-results-dir", default=None, metavar="DIR",
        help="where results.json and the reports go (default: .musiceval/results/<timestamp>-<id>)")
    add("--musiceval-seed", type=int, default=0, help="seed of every random choice in the run (default 0)")
    add("--musiceval-inconclusive", choices=("xfail", "fail"), default=None,
        help="a required gate that is INCONCLUSIVE: fail (the default: verdict INCONCLUSIVE, exit 1) or xfail "
             "(opt-in: the same verdict, exit 0)")
    add("--musiceval-fixtures-dir", default=None, metavar="DIR", help="embedded data directory (default: fixtures/)")
    add("--musiceval-concurrency", type=int, default=8, help="requests in flight for openai-compatible models")
    add("--musiceval-cache-dir", default=os.environ.get("MUSICEVAL_CACHE"), metavar="DIR",
        help="embedding and response caches (default: $MUSICEVAL_CACHE, else the platform cache dir, as for the CLI)")
    add("--musiceval-strict", action="store_true", default=False,
        help="release mode: a required gate (or, without a release profile, any gate) that skips or is "
             "INCONCLUSIVE fails, and a PASS that does not survive Holm correction fails the session; "
             "pytest's own --strict does the same")
    add("--musiceval-allow-empty", action="store_true", default=False,
        help="accept a session in which no gate decided anything about the declared model")
    add("--musiceval-record-mode", choices=("none", "once", "new_episodes", "all"), default="none",
        help="cassette record mode of the suite's LLM calls (default none: replay only)")
    add("--musiceval-option", action="append", default=[], metavar="PROTOCOL.KEY=VALUE",
        help="set a protocol option or threshold for this run, e.g. factual.vocab=nsynth, mir.compat=cmi-bench, "
             "choice.min_parse_rate=0.95, defaults.alpha=0.01 (repeatable; checked like the config)")
    add("--musiceval-benchmarks", default=None, metavar="A,B",
        help="catalogue benchmarks to ask the live --musiceval-model (`musiceval data list`): prepared (cached) under "
             "--musiceval-data-dir, answered once, and gated as the model's answers (also `benchmarks = [...]` in the config)")
    add("--musiceval-self-checks", action="store_true", default=None,
        help="also run the suite's self-checks (its tiny live model, text encoders, machinery); on by default "
             "only where the config sets [defaults] self_checks = true")


def _opt(config: pytest.Config, name: str, default: Any = None) -> Any:
    try:
        value = config.getoption(name)
    except ValueError:
        return default
    return default if value is None else value


def _strict(config: pytest.Config) -> bool:
    return bool(_opt(config, "musiceval_strict", False) or _opt(config, "strict", False))


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _group_sources_by_default(config: pytest.Config) -> None:
    """``pytest -n N`` without ``--dist`` distributes as ``loadgroup``, not ``load``: the tests of
    one answer source then run on one worker, which builds and scores it once (``load`` would
    have every worker build every source). An explicit ``--dist`` (on the command line, in
    ``addopts`` or ``PYTEST_ADDOPTS``) is kept."""
    given = [*config.invocation_params.args, *config.getini("addopts"), *os.environ.get("PYTEST_ADDOPTS", "").split()]
    explicit = any(a == "-d" or a.startswith("--dist") for a in given)
    if not explicit and getattr(config.option, "dist", None) == "load" and getattr(config.option, "tx", None):
        config.option.dist = "loadgroup"


def _worker_id(config: pytest.Config) -> str:
    return getattr(config, "workerinput", {}).get("workerid", "main")


def _state(config: pytest.Config) -> dict[str, Any]:
    return config._musiceval  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------- configure


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped with the reason otherwise (fails under --strict)")
    config.addinivalue_line("markers", "llm(cassette=None): needs a recorded cassette; skipped with the recording command otherwise")
    config.addinivalue_line("markers", "dataset(name, path=None): needs <data-dir>/<name>; skipped with the download instruction otherwise")
    config.addinivalue_line("markers", "slow: slower than a few seconds; deselect with -m 'not slow'")
    config.addinivalue_line("markers", "musiceval_live_model: asks a declared live model (not applicable without one)")
    config.addinivalue_line("markers", "musiceval_self_check: checks the suite's own machinery (never a gate of the "
                                       "declared model); runs with [defaults] self_checks or --musiceval-self-checks")
    try:
        suite = _load_suite(config)
    except ConfigError as exc:
        pytest.exit(f"musiceval: {exc}", returncode=2)
    if _is_worker(config):
        _share_cpus_between_workers()
        if config.workerinput.get("musiceval_loadgroup"):
            config.pluginmanager.register(_XdistGroupSuffix(), "musiceval-xdist-group-suffix")
        results_dir = Path(config.workerinput["musiceval_results_dir"])
        meta, session = config.workerinput["musiceval_meta"], config.workerinput["musiceval_session"]
    else:
        _group_sources_by_default(config)
        session = f"{_dt.datetime.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:8]}"
        given = _opt(config, "musiceval_results_dir")
        results_dir = Path(given) if given else Path(config.rootpath) / ".musiceval" / "results" / session
        # the folders this session makes; a session that records nothing removes them again
        made = [d for d in (results_dir, *results_dir.parents) if not d.exists()]
        try:
            _claim_results_dir(results_dir, session)
        except ConfigError as exc:
            pytest.exit(f"musiceval: {exc}", returncode=2)
        except OSError as exc:
            pytest.exit(f"musiceval: cannot write the results directory {results_dir}: {exc.strerror or exc}; "
                        "pass --musiceval-results-dir DIR on a writable disk", returncode=2)
        meta = _run_meta(config, suite)
    self_checks = _opt(config, "musiceval_self_checks")
    config._musiceval = {"results_dir": results_dir, "meta": meta, "suite": suite, "session": session,  # type: ignore[attr-defined]
                         "self_checks": bool(suite.thresholds["defaults"]["self_checks"] if self_checks is None else self_checks),
                         "errors": [], "deselected_self_checks": 0, "n_gate_tests": 0,
                         "made": [] if _is_worker(config) else made}
    _STATES.append(config._musiceval)  # type: ignore[attr-defined]
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
            suite = SuiteConfig(suite.path, suite.root, (ModelDecl(live_model_name(spec), live=spec),), suite.thresholds,
                                suite.checks, suite.required, suite.baseline, suite.benchmarks)
    benchmarks = _opt(config, "musiceval_benchmarks") or suite.benchmarks
    if benchmarks:
        suite = _with_benchmark_answers(config, suite, benchmarks)
    options = _opt(config, "musiceval_option", []) or []
    if options:
        suite = apply_options(suite, options)
    for source in [*suite.sources(), *suite.baseline_sources()]:  # readable as their protocol's answers
        _check_format(source)
    from musiceval.models.args import coerce_model_args, parse_model_args

    try:  # model arguments are checked before any model loads
        for model in suite.live_models():
            coerce_model_args(model.args)
        parse_model_args(str(_opt(config, "musiceval_model_args", "") or ""))
    except ValueError as exc:
        raise ConfigError(f"model arguments: {exc}") from None
    return suite


def _with_benchmark_answers(config: pytest.Config, suite: SuiteConfig, benchmarks: Any) -> SuiteConfig:
    """The suite whose model's answers are what the live model answered on the catalogue benchmarks
    (:func:`musiceval.commands.run_benchmarks.session_answers`: generated once by the controller)."""
    from musiceval.cache_dir import default_cache_dir
    from musiceval.data.catalogue.prepare import data_root
    from musiceval.data.catalogue.spec import benchmark_names
    from musiceval.commands.run_benchmarks import session_answers
    from musiceval.models.args import coerce_model_args, parse_model_args
    from musiceval.suite.config import ModelDecl

    live = suite.live_models()
    if not live:
        raise ConfigError("--musiceval-benchmarks needs a live model to ask: pass --musiceval-model hf:DIR (or "
                          "openai-compatible:URL#MODEL), or declare live = \"...\" for the model in the config")
    try:
        benches = benchmark_names(benchmarks)
        args = {**coerce_model_args(live[0].args), **parse_model_args(str(_opt(config, "musiceval_model_args", "") or ""))}
        name, entries = session_answers(live[0].live, benches, data_root=data_root(_opt(config, "musiceval_data_dir")),
                                        cache_dir=Path(_opt(config, "musiceval_cache_dir") or default_cache_dir()),
                                        model_args=args, seed=int(_opt(config, "musiceval_seed", 0)), worker=_is_worker(config))
    except (ValueError, OSError) as exc:
        raise ConfigError(f"--musiceval-benchmarks: {exc}") from None
    # the answers are the model's: declared like recorded ones, so the model is not loaded again
    model = ModelDecl(live[0].name, answers=tuple(entries))
    return SuiteConfig(suite.path, suite.root, (model,), suite.thresholds, suite.checks, suite.required, suite.baseline)


def live_model_name(spec: str) -> str:
    """The label of a live spec: its served model name (``...#qwen2``), else the last part of its
    hub id or directory (``hf:Qwen/Qwen2-Audio-7B-Instruct`` -> ``Qwen2-Audio-7B-Instruct``);
    never its credentials."""
    rest = spec.partition(":")[2]
    name = rest.partition("#")[2] or redact(rest).split("?")[0].rstrip("/").rpartition("/")[2] or redact(spec)
    return re.sub(r"[/\[\]*?\n]", "_", name)[:80]


def _check_format(source: Source) -> None:
    from musiceval.data.formats import FORMATS, FormatError, detect_format

    try:
        if source.format:
            fmt = FORMATS.get(source.format)
            if source.protocol not in fmt.protocols:
                raise FormatError(f"{source.path}: format {source.format!r} feeds {', '.join(fmt.protocols)}, not {source.protocol!r}")
        else:
            detect_format(source.path, source.protocol)
    except (FormatError, KeyError) as exc:
        raise ConfigError(f"model {source.model!r}: {str(exc).strip(chr(34))}") from None


def _share_cpus_between_workers() -> None:
    """Give each xdist worker its share of the cores for torch/BLAS threads (set before torch loads)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    threads = str(max(1, (os.cpu_count() or 1) // max(workers, 1)))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, threads)
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
    lock.write_text(json.dumps({"pid": os.getpid(), "session": session}), encoding="utf-8")


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
    from musiceval.models.fixtures import model_args_from_config
    from musiceval.suite.files import answer_files, data_files

    provenance = fingerprint(protocols=sorted({s.protocol for s in suite.sources()}), seed=seed,
                             model=live[0].live if live else ",".join(m.name for m in suite.models),
                             decoding=model_args_from_config(config) if live else None,
                             backend="live" if live else "recorded",
                             data_files=data_files(suite), answer_files=answer_files(suite))
    return {
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


# ----------------------------------------------------------------------------- the gates of the package


class ReleaseGates(pytest.Module):
    """The suite config file collected as the module of musiceval's release gates
    (:mod:`musiceval.evals.release_gates`): in a repository that holds only a ``musiceval.toml`` and
    its answer files, ``pytest`` runs every gate on the model the config declares. A repository that
    also has an entry module (``evals/test_musiceval.py``, which ``musiceval init`` writes) runs them
    once: the entry module's wins."""

    def _getobj(self):
        import importlib

        return importlib.import_module("musiceval.evals.release_gates")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = getattr(parent.config, "_musiceval", None)
    suite = state["suite"] if state else None
    if suite is None or suite.path is None or not suite.models:
        return None
    if file_path.resolve() != Path(suite.path).resolve():
        return None
    return ReleaseGates.from_parent(parent, path=file_path)


def _from_package(item: pytest.Item) -> bool:
    return str(getattr(getattr(item, "function", None), "__module__", "")).startswith("musiceval.evals.")


def _dedupe_release_gates(items: list[pytest.Item]) -> list[pytest.Item]:
    """Drop the gates collected from the config file when an entry module collected them too."""
    via_entry = any(_from_package(i) and not isinstance(i.parent, ReleaseGates) for i in items)
    return [i for i in items if not (via_entry and isinstance(i.parent, ReleaseGates))]


# ----------------------------------------------------------------------------- parametrization


def defining_module(function: Any, fallback: Any = None) -> Any:
    """The module that defines a test function: a gate imported into a repository's entry module
    (``from musiceval.evals.release_gates import *``) keeps its own ``PROTOCOL(S)`` and ``pytestmark``."""
    return sys.modules.get(getattr(function, "__module__", ""), fallback) or fallback


def _protocols_of(module: Any) -> tuple[str, ...]:
    """The protocols a gate module is about: ``PROTOCOL = "choice"``, ``PROTOCOLS = (...)``, or
    ``PROTOCOLS = "*"``: every registered protocol that reads answer files (a plugin's too)."""
    many = getattr(module, "PROTOCOLS", None)
    if many == "*":
        from musiceval.protocols.base import answer_protocols

        return tuple(answer_protocols())
    if many:
        return tuple(many)
    one = getattr(module, "PROTOCOL", None)
    return (one,) if isinstance(one, str) else ()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "source" not in metafunc.fixturenames:
        return
    suite: SuiteConfig = _state(metafunc.config)["suite"]
    protocols = _protocols_of(defining_module(metafunc.function, metafunc.module))
    sources = [s for p in protocols for s in suite.sources(p)]
    if sources:
        metafunc.parametrize("source", [pytest.param(s, id=s.id) for s in sources])
        return
    reason = (f"{NOT_APPLICABLE}the suite config ({suite.where}) declares no {'/'.join(protocols) or 'answer'} "
              "answers for any model")
    metafunc.parametrize("source", [pytest.param(None, id="no-answers", marks=pytest.mark.skip(reason=reason))])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test of one answer source shares an xdist group, so ``--dist loadgroup`` builds (and
    scores) each source on one worker only. Tests that are not about the declared model (the
    suite's self-checks; tests of protocols the config gives no answers for) are deselected unless
    self-checks are on."""
    state = _state(config)
    items[:] = _dedupe_release_gates(items)
    keep, dropped = [], []
    for item in items:
        _inherit_module_marks(item)
        subject, _ = _subject_of(item, state["suite"])
        source = getattr(getattr(item, "callspec", None), "params", {}).get("source")
        if subject in (SELF_CHECK, NOT_GIVEN) and not state["self_checks"] and state["suite"].models:
            dropped.append(item)
            continue
        keep.append(item)
        if isinstance(source, Source):
            item.add_marker(pytest.mark.xdist_group(f"source:{source.id}"))
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
        state["deselected_self_checks"] = len(dropped)
        if _is_worker(config):
            config.workeroutput["musiceval_deselected"] = len(dropped)  # type: ignore[attr-defined]


def _inherit_module_marks(item: pytest.Item) -> None:
    """An imported gate gets the ``pytestmark`` of the module that defines it (an xdist group, the
    self-check mark) as if it were collected there."""
    function = getattr(item, "function", None)
    module = defining_module(function)
    if module is None or module is getattr(item, "module", None):
        return
    marks = getattr(module, "pytestmark", [])
    for mark in marks if isinstance(marks, list) else [marks]:
        item.add_marker(mark)


def _subject_of(item: pytest.Item, suite: SuiteConfig) -> tuple[str, str]:
    """``(subject, model)`` of a test's gates:

    - ``("self-check", "")``: the suite's own machinery (marked ``musiceval_self_check``, or a live
      test on the suite's tiny model because no live model is declared);
    - ``("n/a", "")``: a test about something the config does not give (a protocol without
      answers, a live model that is not declared): not applicable;
    - ``("model", name)``: everything else, a test about the declared model (an answer source, a
      declared live model, or a project's own test of its one declared model).
    """
    if item.get_closest_marker("musiceval_self_check") is not None:
        return SELF_CHECK, ""
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "source" in params:
        source = params["source"]
        return (MODEL, source.model) if isinstance(source, Source) else (NOT_GIVEN, "")
    live = suite.live_models()
    names = set(getattr(item, "fixturenames", ()))
    if "live_music_lm" in names:
        return (MODEL, live[0].name) if live else (SELF_CHECK, "")
    if ("music_lm" in names or item.get_closest_marker("musiceval_live_model") is not None) and not live:
        return NOT_GIVEN, ""
    return MODEL, live[0].name if live else suite.models[0].name if len(suite.models) == 1 else ""


def plain_nodeid(node: pytest.Item) -> str:
    """The node id without xdist's ``@<group>`` suffix (xdist's own rule: an ``@`` after the last
    ``]``): what ``pytest <id>`` selects and what cassettes and results are keyed by."""
    nodeid = node.nodeid
    at = nodeid.rfind("@")
    return nodeid[:at] if at > nodeid.rfind("]") else nodeid


class _XdistGroupSuffix:
    """Give each grouped test the ``@<group>`` suffix that xdist's ``loadgroup`` scheduler reads,
    after xdist's own hook and only where it did not. xdist suffixes only when the worker itself
    parsed ``--dist loadgroup`` (not when the controller chose it: :func:`_group_sources_by_default`),
    and it writes ``item._nodeid``, while from pytest 9.2 on ``nodeid`` is read from ``item._id``:
    without the suffix every group is spread over the workers, each building the same source.
    Registered on xdist workers whose controller distributes with ``loadgroup``."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            groups = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                             for m in item.iter_markers("xdist_group")})
            if not groups or item.nodeid.rpartition("@")[2] == "_".join(groups):
                continue
            nodeid = f"{item.nodeid}@{'_'.join(groups)}"
            try:
                from _pytest.nodeid import NodeId  # pytest >= 9.2
            except ImportError:
                item._nodeid = nodeid  # type: ignore[attr-defined]
            else:
                item._id = NodeId.parse(nodeid)  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------- result sink


def _sink(config: pytest.Config):
    state = _state(config)
    parts = state["results_dir"] / "parts"
    path = parts / f"{state['session']}-{_worker_id(config)}.jsonl"

    def write(row: dict[str, Any]) -> None:
        if row.get("type") != "scores":  # names, details, tables and answers may quote a model spec
            row = redact_meta(row)
        try:
            parts.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row, allow_nan=False, default=str) + "\n")
        except OSError as exc:  # a full disk mid-run: this test errors, the verdict is ERROR
            pytest.fail(f"musiceval: cannot write {path}: {exc.strerror or exc}; free space or pass "
                        "--musiceval-results-dir DIR on a writable disk", pytrace=False)

    return write


# ----------------------------------------------------------------------------- markers


def _marker_skip_reason(item: pytest.Item) -> str | None:
    config = item.config
    if item.get_closest_marker("gpu") is not None:
        try:
            import torch

            has_cuda = torch.cuda.is_available()
        except ImportError:
            has_cuda = False
        if not has_cuda:
            return "needs a CUDA GPU (marker 'gpu'); run on a machine with one"
    mark = item.get_closest_marker("llm")
    if mark is not None:
        cassette = mark.kwargs.get("cassette")
        have_cassette = cassette is not None and (rootpath(config) / cassette).exists()
        recording = _opt(config, "musiceval_record_mode", "none") != "none" and os.environ.get("OPENAI_API_KEY")
        if not have_cassette and not recording:
            where = f"cassette {cassette!r} is missing" if cassette else "no cassette is configured"
            return (f"needs the suite's LLM: {where}; record it with OPENAI_API_KEY=... pytest {plain_nodeid(item)} "
                    "--musiceval-record-mode once")
    for mark in item.iter_markers("dataset"):
        name = mark.args[0] if mark.args else mark.kwargs["name"]
        data_dir = _opt(config, "musiceval_data_dir")
        sub = mark.kwargs.get("path", name)
        if not data_dir or not (Path(data_dir) / sub).exists():
            hint = DATASET_HINTS.get(name, f"put it under <data-dir>/{sub}")
            where = f"{data_dir}/{sub}" if data_dir else "--musiceval-data-dir (not given)"
            return f"{NOT_APPLICABLE}dataset {name!r} not found at {where}: {hint}; then pass --musiceval-data-dir"
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    reason = _marker_skip_reason(item)
    if reason:
        pytest.skip(reason)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    result = yield
    gate = getattr(item, "_musiceval_gate", None)
    if gate is not None:
        gate.finish()
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    if getattr(item, "_musiceval_gate", None) is not None or isinstance(
            getattr(getattr(item, "callspec", None), "params", {}).get("source"), Source):
        report.user_properties.append(("musiceval_gate_test", _subject_of(item, _state(item.config)["suite"])[0]))
    if report.failed and report.when == "call" and getattr(item, "_musiceval_gate_failed", False):
        report.user_properties.append(("musiceval_gate_failure", "1"))  # a FAIL of a gate, not an error
    if "gate" not in getattr(item, "fixturenames", ()) or hasattr(report, "wasxfail"):
        return report
    gate = getattr(item, "_musiceval_gate", None)
    if report.when == "call" and report.passed and gate is not None and (gate.results or gate.n_recorded):
        if all(r.outcome is Outcome.FINDING for r in gate.results):  # nothing decided: not a passing test
            names = redact("; ".join(f"{r.name} = {r.estimate:+.4f}" for r in gate.results[:3]))
            text = FINDING_PREFIX + names if names else f"{REPORT_PREFIX}{gate.n_recorded} table(s) recorded"
            report.outcome = "skipped"
            report.longrepr = (str(item.fspath), item.location[1] or 0, text)
        return report
    if not report.skipped:
        return report
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    if reason.startswith((FINDING_PREFIX, REPORT_PREFIX)):
        return report
    not_applicable = reason.startswith(NOT_APPLICABLE)
    source = getattr(getattr(item, "callspec", None), "params", {}).get("source")
    check = _skip_check_id(item, source)
    subject, model = _subject_of(item, _state(item.config)["suite"])
    _sink(item.config)({
        "type": "gate", "name": plain_nodeid(item).rpartition("::")[2],
        "outcome": "N/A" if not_applicable else Outcome.SKIPPED.value,
        "detail": reason, "nodeid": plain_nodeid(item), "test": "skipped", "protocol": _protocol_of(item),
        "check": check, "model": model, "source": getattr(source, "label", ""),
        "subject": SELF_CHECK if subject == SELF_CHECK else MODEL,
    })
    suite: SuiteConfig = _state(item.config)["suite"]
    required = any(_matches(check, p) for p in suite.required)
    if _strict(item.config) and (required or (not not_applicable and not suite.required)):
        report.outcome = "failed"
        report.longrepr = f"--strict: a {'required ' if required else ''}release gate may not be skipped: {reason}"
    return report


def pytest_sessionstart(session: pytest.Session) -> None:
    if _is_worker(session.config):
        session.config.workeroutput["musiceval_deselected"] = 0  # type: ignore[attr-defined]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:  # xdist (controller): a worker's deselected tests
    state = getattr(node.config, "_musiceval", None)
    if state is not None:
        state["deselected_self_checks"] = max(state["deselected_self_checks"],
                                              int(getattr(node, "workeroutput", {}).get("musiceval_deselected", 0)))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collect what went wrong outside the gates (on the controller: xdist forwards the reports):
    an error in setup or teardown, a test that failed other than by a gate's FAIL (an exception, a
    timeout, a refused baseline). Each makes the verdict ERROR."""
    if not _STATES:
        return
    state = _STATES[-1]
    props = dict(report.user_properties)
    if report.when == "setup" and "musiceval_gate_test" in props:
        state["n_gate_tests"] += 1
    if not report.failed or (report.when == "call" and props.get("musiceval_gate_failure") == "1"):
        return
    text = _first_line(report.longrepr)
    what = ("timed out" if "Timeout" in text else "errored in " + report.when if report.when != "call"
            else "baseline refused" if text.startswith("baseline refused") else "raised")
    state["errors"].append(f"{report.nodeid.split('@')[0]} {what}: {text}")


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed and _STATES:
        _STATES[-1]["errors"].append(f"collecting {report.nodeid or 'the tests'} failed: {_first_line(report.longrepr)}")


def _first_line(longrepr: Any) -> str:
    crash = getattr(longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) or (longrepr[2] if isinstance(longrepr, tuple) else str(longrepr))
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return redact(lines[0][:300] if lines else "no message")


def _skip_check_id(item: pytest.Item, source: Source | None) -> str:
    name = getattr(item, "originalname", item.name).removeprefix("test_")
    parts = [_protocol_of(item), name] + ([source.model, source.label] if source is not None else [])
    return "/".join(parts) + "/*"


def _matches(check: str, pattern: str) -> bool:
    import fnmatch

    return fnmatch.fnmatchcase(check, pattern) or fnmatch.fnmatchcase(pattern, check)


def _protocol_of(item: pytest.Item) -> str:
    """The source's protocol, else the test module's ``PROTOCOL``, else its file name without ``test_``."""
    source = getattr(getattr(item, "callspec", None), "params", {}).get("source")
    if isinstance(source, Source):
        return source.protocol
    module = defining_module(getattr(item, "function", None), getattr(item, "module", None))
    protocol = getattr(module, "PROTOCOL", None)
    if isinstance(protocol, str):
        return protocol
    return Path(str(getattr(module, "__file__", None) or item.fspath)).stem.removeprefix("test_")


# ----------------------------------------------------------------------------- fixtures


class PytestGate(Gate):
    """A :class:`~musiceval.gates.Gate` for one test: records every gate, then fails or xfails the
    test once it returns (so a test may check several gates), and skips on request."""

    def __init__(self, config: GateConfig, *, sink, nodeid: str, item: pytest.Item, inconclusive: str, strict: bool,
                 suite: SuiteConfig, subject: str = MODEL, model: str = "", provenance: Any = None):
        self._item = item
        self._inconclusive = "fail" if strict else inconclusive
        self._suite = suite
        #: the run's provenance fingerprint (what a baseline must be comparable with)
        self.provenance = provenance
        #: tables and bar series recorded (a test that records only these is not a passing gate)
        self.n_recorded = 0

        def tagged(row: dict[str, Any]) -> None:  # every row says whom it is about
            if row.get("type") in ("gate", "scores"):
                row = {**row, "subject": subject if subject == SELF_CHECK else MODEL}
                if subject == SELF_CHECK:
                    row["model"] = ""
                elif model and not row.get("model"):
                    row["model"] = model
            sink(row)

        super().__init__(config, sink=tagged, on_result=self._on_result, nodeid=nodeid)

    def record_table(self, *args, **kwargs) -> None:
        self.n_recorded += 1
        super().record_table(*args, **kwargs)

    def record_bars(self, *args, **kwargs) -> None:
        self.n_recorded += 1
        super().record_bars(*args, **kwargs)

    def rule_for(self, check: str):
        """The suite config's ``[checks]`` rule for ``check`` (used by musiceval.suite.checks)."""
        return self._suite.rule(check)

    def _on_result(self, result: GateResult) -> None:
        prefix = f"gate[{redact(result.name)}]"
        self._item.user_properties.append((f"{prefix}.outcome", result.outcome.value))
        for key in ("estimate", "ci", "p_value", "n", "n_failed", "threshold", "test"):
            self._item.user_properties.append((f"{prefix}.{key}", redact(json.dumps(to_jsonable(getattr(result, key))))))

    @staticmethod
    def summary(result: GateResult) -> str:
        return redact(f"{result.name}: {result.outcome.value} estimate={result.estimate:.4f} "
                      f"CI=[{result.ci[0]:.4f}, {result.ci[1]:.4f}] threshold={result.threshold} n={result.n} "
                      f"n_failed={result.n_failed} ({result.test}) {result.detail}")

    def _required(self, result: GateResult) -> bool:
        return not self._suite.required or any(_matches(result.check, p) for p in self._suite.required)

    def finish(self) -> None:
        """Called after the test body: fail on any FAIL, then fail on a required INCONCLUSIVE (xfail
        with ``--musiceval-inconclusive xfail``, and for gates outside the release profile)."""
        failed = [r for r in self.results if r.outcome is Outcome.FAIL]
        if failed:
            self._item._musiceval_gate_failed = True  # type: ignore[attr-defined]
            pytest.fail("\n".join(self.summary(r) for r in failed), pytrace=False)
        open_ = [r for r in self.results if r.outcome is Outcome.INCONCLUSIVE]
        if open_:
            text = "\n".join("INCONCLUSIVE " + self.summary(r) for r in open_)
            if self._inconclusive == "fail" and any(self._required(r) for r in open_):
                self._item._musiceval_gate_failed = True  # type: ignore[attr-defined]
                pytest.fail(text, pytrace=False)
            pytest.xfail(text)

    def skip(self, reason: str, *, applicable: bool = True) -> None:
        """Skip this test's gates; ``applicable=False`` marks a gate that cannot apply to this model
        (never a failure under --strict unless the release profile requires it)."""
        pytest.skip(redact(reason) if applicable else NOT_APPLICABLE + redact(reason))


@pytest.fixture(scope="session")
def musiceval_suite(pytestconfig: pytest.Config) -> SuiteConfig:
    """The validated suite config in force (model(s) under test, thresholds, check rules)."""
    return _state(pytestconfig)["suite"]


@pytest.fixture(scope="session")
def thresholds(musiceval_suite: SuiteConfig) -> dict[str, Any]:
    """The validated threshold sections (built-in defaults overlaid with the config)."""
    return musiceval_suite.thresholds


@pytest.fixture(scope="session")
def musiceval_seed(pytestconfig: pytest.Config) -> int:
    return int(_opt(pytestconfig, "musiceval_seed", 0))


@pytest.fixture(scope="session")
def model_spec(musiceval_suite: SuiteConfig) -> str:
    """The live spec in force (``--musiceval-model`` or the config's first ``live``), else ``recorded``."""
    live = musiceval_suite.live_models()
    return live[0].live if live else "recorded"  # type: ignore[return-value]


@pytest.fixture(scope="session")
def strict(pytestconfig: pytest.Config) -> bool:
    return _strict(pytestconfig)


@pytest.fixture(scope="session")
def data_dir(pytestconfig: pytest.Config) -> Path | None:
    given = _opt(pytestconfig, "musiceval_data_dir")
    return Path(given) if given else None


@pytest.fixture(scope="session")
def fixtures_dir(pytestconfig: pytest.Config) -> Path:
    given = _opt(pytestconfig, "musiceval_fixtures_dir")
    path = Path(given) if given else rootpath(pytestconfig) / "fixtures"
    if not path.is_dir():
        raise FileNotFoundError(f"embedded data directory {path} not found; pass --musiceval-fixtures-dir")
    return path


@pytest.fixture(scope="session")
def musiceval_cache_dir(pytestconfig: pytest.Config) -> Path:
    from musiceval.cache_dir import default_cache_dir

    given = _opt(pytestconfig, "musiceval_cache_dir")
    return Path(given) if given else Path(default_cache_dir())


@pytest.fixture(scope="session")
def embedding_cache(musiceval_cache_dir: Path):
    from musiceval.encoders import EmbeddingCache

    return EmbeddingCache(musiceval_cache_dir / "embeddings")


@pytest.fixture(scope="session")
def musiceval_runs(pytestconfig: pytest.Config, musiceval_suite: SuiteConfig, musiceval_seed: int,
                   musiceval_cache_dir: Path):
    """``source -> Protocol``, each source built once per worker; every built source is recorded
    (a ``source`` row with the fingerprint of what its answers are scored against)."""
    from musiceval.suite.runs import build_protocol

    built: dict[str, Any] = {}
    sink = _sink(pytestconfig)

    def get(source: Source):
        if source.id not in built:
            run = build_protocol(source, musiceval_suite, seed=musiceval_seed, cache_dir=musiceval_cache_dir / "embeddings")
            built[source.id] = run
            excluded = run.evaluate().get("excluded") or {}
            sink({"type": "source", "id": source.id, "protocol": source.protocol, "model": source.model,
                  "source": source.label, "items_sha256": run.items_sha256, "file": source.path.name,
                  **run.accounting.as_row(), "excluded": excluded})
            for k, sample in enumerate(run.samples()):  # the per-sample drill-down (samples.jsonl)
                if k >= MAX_SAMPLES_PER_SOURCE:
                    break
                sink({"type": "sample", "protocol": source.protocol, "model": source.model, "source": source.label,
                      **sample})
        return built[source.id]

    return get


@pytest.fixture
def run(request: pytest.FixtureRequest, source: Source, musiceval_runs):
    """The :class:`~musiceval.protocols.base.Protocol` of this test's declared answer source; a
    source its protocol refuses as a whole (an EMO_valence file that holds arousal questions) is
    not applicable, with the reason. Building a source (read, parse, score once per worker) is not
    cut by one test's pytest-timeout: the timer pauses while it runs."""
    from musiceval.metrics.mir import TaskError

    with _timeout_paused(request.node):
        try:
            return musiceval_runs(source)
        except TaskError as exc:
            pytest.skip(f"{NOT_APPLICABLE}{source.id}: {exc}")


class _timeout_paused:
    """Pause pytest-timeout's timer of ``item`` (when the plugin is active) and re-arm it after."""

    def __init__(self, item: pytest.Item):
        self.item = item
        self.settings = getattr(item, "_musiceval_timeout_settings", None)

    def __enter__(self) -> None:
        if self.settings is not None:
            self.item.config.hook.pytest_timeout_cancel_timer(item=self.item)

    def __exit__(self, *exc: Any) -> None:
        if self.settings is not None:
            self.item.config.hook.pytest_timeout_set_timer(item=self.item, settings=self.settings)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> None:
    """Remember the timer settings of ``item`` so that :class:`_timeout_paused` can re-arm it."""
    item._musiceval_timeout_settings = settings  # type: ignore[attr-defined]


@pytest.fixture
def musiceval_refuse(request: pytest.FixtureRequest):
    """``refuse(reason)``: stop this test because its input cannot be used (a baseline scored
    differently): the test errors and the session's verdict is ERROR, the reason in every artefact."""

    def refuse(reason: str) -> None:
        request.node._musiceval_refused = True  # type: ignore[attr-defined]
        pytest.fail(f"baseline refused: {reason}", pytrace=False)

    return refuse


@pytest.fixture
def gate(request: pytest.FixtureRequest, musiceval_suite: SuiteConfig) -> PytestGate:
    """Record release gates for this test; see :class:`musiceval.gates.Gate` for the methods."""
    config = request.config
    defaults = musiceval_suite.thresholds["defaults"]
    inconclusive = _opt(config, "musiceval_inconclusive") or defaults["inconclusive"]
    gate_config = GateConfig(alpha=float(defaults["alpha"]), n_resamples=int(defaults["n_resamples"]),
                             ci_method=str(defaults["ci_method"]), seed=int(_opt(config, "musiceval_seed", 0)),
                             protocol=_protocol_of(request.node), power=float(defaults["power"]))
    subject, model = _subject_of(request.node, musiceval_suite)
    g = PytestGate(gate_config, sink=_sink(config), nodeid=plain_nodeid(request.node), item=request.node,
                   inconclusive=inconclusive, strict=_strict(config), suite=musiceval_suite, subject=subject,
                   model=model, provenance=_state(config)["meta"].get("provenance"))
    request.node._musiceval_gate = g
    return g


# ----------------------------------------------------------------------------- merge and report


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Merge the parts, decide the one verdict, write the artefacts (results.json last), and make the
    exit status and the JUnit file say the same. Runs before junitxml writes its file."""
    config = session.config
    state = getattr(config, "_musiceval", None)
    if state is None or _is_worker(config):
        return
    from musiceval.report import ArtefactError, merge, read_parts, write_artefacts, write_error_results

    results_dir = state["results_dir"]
    rows = read_parts(results_dir, state["session"]) if (results_dir / "parts").is_dir() else []
    if not rows and not state["n_gate_tests"]:  # no musiceval test ran in this session (e.g. a project's unit tests)
        _release_unused_results_dir(state)
        suite = state["suite"]
        if suite.models and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            state["no_gates"] = (
                f"musiceval: {suite.where} declares {', '.join(m.name for m in suite.models)} but no musiceval gate was "
                f"collected: run pytest in the directory of {Path(suite.path).name if suite.path else 'musiceval.toml'} "
                "(the config collects the gates), or add them with `musiceval init` (evals/test_musiceval.py)")
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    meta = {**state["meta"], "session": state["session"],
            "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "exitstatus": int(exitstatus),
            "deselected_self_checks": state["deselected_self_checks"], "self_checks": state["self_checks"]}
    run = merge(rows, meta)
    verdict = _decide(config, run, state["errors"], int(exitstatus))
    run["verdict"], run["verdict_detail"] = verdict.word, verdict.as_dict()
    try:
        write_artefacts(results_dir, run, rows)
    except Exception as exc:  # a full disk, or a report that cannot be rendered: never a verdict beside torn files
        state["errors"].append(str(exc) if isinstance(exc, ArtefactError) else
                               f"the report could not be written ({type(exc).__name__}: {exc}); results.json says ERROR")
        verdict = _decide(config, run, state["errors"], int(exitstatus))
        run["verdict"], run["verdict_detail"] = verdict.word, verdict.as_dict()
        write_error_results(results_dir, run)
    state["run"], state["verdict"] = run, verdict
    if verdict.exit_code != 0 or session.exitstatus in (0, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = verdict.exit_code if verdict.exit_code else session.exitstatus
    xml = getattr(config, "stash", {}).get(_junit_key(), None) if _junit_key() is not None else None
    if xml is not None:
        xml.add_global_property("musiceval_verdict", verdict.word)
        xml.add_global_property("musiceval_verdict_line", verdict.line)
    _release_lock(results_dir)


def _release_lock(results_dir: Path) -> None:
    try:
        (results_dir / ".session.lock").unlink()
    except OSError:
        pass


def _release_unused_results_dir(state: dict[str, Any]) -> None:
    """A session that recorded nothing (``pytest tests/``, a collection error) leaves no trace: its
    lock goes, and so do the folders it made, where they are empty."""
    try:
        (state["results_dir"] / ".session.lock").unlink()
    except OSError:
        pass
    for folder in state.get("made", []):  # deepest first
        try:
            folder.rmdir()
        except OSError:  # not empty (another session's results) or already gone
            break


def _junit_key() -> Any:
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - junitxml is part of pytest
        return None
    return xml_key


def _decide(config: pytest.Config, run: dict[str, Any], errors: list[str], exitstatus: int):
    from musiceval.verdict import decide

    suite: SuiteConfig = _state(config)["suite"]
    inconclusive = _opt(config, "musiceval_inconclusive") or suite.thresholds["defaults"]["inconclusive"]
    return decide(run["gates"], declared=[m.name for m in suite.models], required=suite.required,
                  errors=[*errors, *(e["detail"] for e in run["errors"])], strict=_strict(config),
                  holm_failures=run["holm_failures"], inconclusive=inconclusive,
                  allow_empty=bool(_opt(config, "musiceval_allow_empty", False)), pytest_exit=exitstatus,
                  capped=[f"{r['id']}: first {r['cap']} of {r['records']} records" for r in run["sources"]
                          if isinstance(r.get("cap"), int) and isinstance(r.get("records"), int) and r["records"] > r["cap"]])


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = getattr(config, "_musiceval", None)
    if not state or "run" not in state:
        return
    run = state["run"]
    tr = terminalreporter
    tr.section("musiceval gates")
    declared = {m.name for m in state["suite"].models}
    for title, about_model in (("about the declared model", True), ("self-checks of the suite (never gates of the model)", False)):
        gates = [g for g in run["gates"] if (subject_of(g, declared) == MODEL) == about_model]
        if not gates:
            continue
        tr.write_line(f"-- {title}")
        for g in gates:
            est = g.get("estimate")
            est_s = f"{est:+.4f}" if isinstance(est, (int, float)) else "   -   "
            n_failed = f" (n_failed={g['n_failed']})" if g.get("n_failed") else ""
            tr.write_line(f"{g['outcome']:<12} {est_s}  {g.get('protocol', ''):<14} {g['name']}{n_failed}")
    if state["deselected_self_checks"]:
        tr.write_line(f"{state['deselected_self_checks']} tests not about the declared model were not run "
                      "(self-checks: pass --musiceval-self-checks)")
    for reason in state["verdict"].reasons:
        tr.write_line(f"  {reason}")
    tr.write_line(f"results: {state['results_dir'] / 'results.json'}")
    tr.write_line(f"report:  {state['results_dir'] / 'report.html'}")


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """The verdict line, last: after pytest's own summary line."""
    state = getattr(config, "_musiceval", None)
    if state and _STATES and _STATES[-1] is state:
        _STATES.pop()
    if state and state.get("no_gates") and not _is_worker(config):
        tr = config.pluginmanager.get_plugin("terminalreporter")
        tr.write_line(state["no_gates"], red=True, bold=True) if tr is not None else print(state["no_gates"])
    if not state or "verdict" not in state or _is_worker(config):
        return
    verdict = state["verdict"]
    tr = config.pluginmanager.get_plugin("terminalreporter")
    line = f"{verdict.line}; report: {state['results_dir'] / 'report.html'}"
    colour = {"PASSED": "green", "FAILED": "red", "ERROR": "red"}.get(verdict.word, "yellow")
    if tr is not None:
        tr.write_line(line, **{colour: True, "bold": True})
    else:
        print(line)
