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
- **Outcomes**: a test may record several gates; it fails after all of them ran if any FAILed
  (INCONCLUSIVE: xfail, or fail under ``--musiceval-strict``). A test that recorded only FINDINGs
  is reported as *skipped* with the reason ``FINDING: ...`` (never as a passing test).
- **No silent green**: a session in which no gate decided (PASS or FAIL) anything about a declared
  model fails with one line, unless ``--musiceval-allow-empty``.
- **Release profile** (``[release] required``): under ``--strict`` every required check must PASS;
  other gates may be not applicable. Without a profile every skipped gate fails under ``--strict``
  except those that cannot apply to the declared model.
- **Results**: every process appends rows to ``<results-dir>/parts/<session>-<worker>.jsonl``; the
  controller merges this session's parts into ``results.json``, ``scores.jsonl``, ``report.md`` and
  ``report.html``. A results directory is held by one live session at a time (a lock file);
  nothing another session wrote is deleted.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from musiceval.gates import Gate, GateConfig
from musiceval.records import GateResult, Outcome, to_jsonable
from musiceval.suite.config import Source, SuiteConfig, config_for_answers, load_config
from musiceval.suite.schema import ConfigError

DATASET_HINTS = {
    "fma": "download fma_metadata.zip and fma_small.zip from https://github.com/mdeff/fma and unzip into <data-dir>/fma",
    "musicnet": "download MusicNet from https://zenodo.org/records/5120004 and unpack into <data-dir>/musicnet",
    "musicqa": "download MusicQA (MTG eval split) from https://huggingface.co/datasets/mu-llama/MusicQA into <data-dir>/musicqa",
    "muchomusic": "download muchomusic.csv and the audio from https://github.com/mulab-mir/muchomusic into <data-dir>/muchomusic",
    "nsynth": "download nsynth-test.jsonwav.tar.gz from https://magenta.tensorflow.org/datasets/nsynth into <data-dir>/nsynth",
    "cmi-bench": "clone https://github.com/nicolaus625/CMI-bench and follow its data instructions into <data-dir>/cmi-bench",
}
NOT_APPLICABLE = "not applicable: "
FINDING_PREFIX = "FINDING: "
REPORT_PREFIX = "REPORT: "
#: answers logged per source for the report's drill-down (samples.jsonl)
MAX_SAMPLES_PER_SOURCE = 5000
_DECIDED = ("PASS", "FAIL")


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
        help="how an INCONCLUSIVE gate is reported (default: [defaults] inconclusive, else xfail)")
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
    config._musiceval = {"results_dir": results_dir, "meta": meta, "suite": suite, "session": session,  # type: ignore[attr-defined]
                         "made": [] if _is_worker(config) else made}
    try:  # live-model fixtures (music_lm, response_cache) when the models package is present
        import musiceval.models.fixtures as model_fixtures
    except ImportError:
        pass
    else:
        if not config.pluginmanager.is_registered(model_fixtures):
            config.pluginmanager.register(model_fixtures, "musiceval-models")


def _load_suite(config: pytest.Config) -> SuiteConfig:
    suite = load_config(_opt(config, "musiceval_config"), config.rootpath, thresholds_file=_opt(config, "musiceval_thresholds"))
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
                raise ConfigError(f"--musiceval-model {spec}: no adapter for {prefix!r}; known: {', '.join(registered_prefixes())}")
            from musiceval.suite.config import ModelDecl

            suite = SuiteConfig(suite.path, suite.root, (ModelDecl(spec, live=spec),), suite.thresholds, suite.checks,
                                suite.required, suite.baseline)
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

    provenance = fingerprint(protocols=sorted({s.protocol for s in suite.sources()}), seed=seed,
                             model=live[0].live if live else ",".join(m.name for m in suite.models),
                             decoding=model_args_from_config(config) if live else None,
                             backend="live" if live else "recorded")
    return {
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "model": suite.models[0].name if len(suite.models) == 1 else "",
        "provenance": provenance,
        "baseline": (rel(Path(suite.baseline["results"])) if suite.baseline.get("results")
                     else suite.baseline["model"].name if suite.baseline.get("model") else None),
        "adjust": suite.thresholds["defaults"]["adjust"],
        "models": [{"name": m.name, "live": m.live, "answers": [s.id for s in suite.sources() if s.model == m.name]}
                   for m in suite.models],
        "config": rel(suite.path),
        "seed": seed,
        "strict": _strict(config),
        "required": list(suite.required),
        "versions": _versions(),
    }


# ----------------------------------------------------------------------------- parametrization


def _protocols_of(module: Any) -> tuple[str, ...]:
    many = getattr(module, "PROTOCOLS", None)
    if many:
        return tuple(many)
    one = getattr(module, "PROTOCOL", None)
    return (one,) if isinstance(one, str) else ()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "source" not in metafunc.fixturenames:
        return
    suite: SuiteConfig = _state(metafunc.config)["suite"]
    protocols = _protocols_of(metafunc.module)
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
    scores) each source on one worker only."""
    for item in items:
        source = getattr(getattr(item, "callspec", None), "params", {}).get("source")
        if isinstance(source, Source):
            item.add_marker(pytest.mark.xdist_group(f"source:{source.id}"))


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
        parts.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, allow_nan=False, default=str) + "\n")

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
        have_cassette = cassette is not None and (Path(config.rootpath) / cassette).exists()
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
    if "gate" not in getattr(item, "fixturenames", ()) or hasattr(report, "wasxfail"):
        return report
    gate = getattr(item, "_musiceval_gate", None)
    if report.when == "call" and report.passed and gate is not None and (gate.results or gate.n_recorded):
        if all(r.outcome is Outcome.FINDING for r in gate.results):  # nothing decided: not a passing test
            names = "; ".join(f"{r.name} = {r.estimate:+.4f}" for r in gate.results[:3])
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
    _sink(item.config)({
        "type": "gate", "name": plain_nodeid(item), "outcome": "N/A" if not_applicable else Outcome.SKIPPED.value,
        "detail": reason, "nodeid": plain_nodeid(item), "test": "skipped", "protocol": _protocol_of(item),
        "check": check, "model": getattr(source, "model", ""), "source": getattr(source, "label", ""),
    })
    suite: SuiteConfig = _state(item.config)["suite"]
    required = any(_matches(check, p) for p in suite.required)
    if _strict(item.config) and (required or (not not_applicable and not suite.required)):
        report.outcome = "failed"
        report.longrepr = f"--strict: a {'required ' if required else ''}release gate may not be skipped: {reason}"
    return report


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
    protocol = getattr(getattr(item, "module", None), "PROTOCOL", None)
    return protocol if isinstance(protocol, str) else Path(str(item.fspath)).stem.removeprefix("test_")


# ----------------------------------------------------------------------------- fixtures


class PytestGate(Gate):
    """A :class:`~musiceval.gates.Gate` for one test: records every gate, then fails or xfails the
    test once it returns (so a test may check several gates), and skips on request."""

    def __init__(self, config: GateConfig, *, sink, nodeid: str, item: pytest.Item, inconclusive: str, strict: bool,
                 suite: SuiteConfig, subject: str = ""):
        self._item = item
        self._inconclusive = "fail" if strict else inconclusive
        self._suite = suite
        #: tables and bar series recorded (a test that records only these is not a passing gate)
        self.n_recorded = 0

        def tagged(row: dict[str, Any]) -> None:  # gates of a live model's tests are about that model
            sink({**row, "model": subject} if subject and row.get("type") == "gate" and not row.get("model") else row)

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
        prefix = f"gate[{result.name}]"
        self._item.user_properties.append((f"{prefix}.outcome", result.outcome.value))
        for key in ("estimate", "ci", "p_value", "n", "n_failed", "threshold", "test"):
            self._item.user_properties.append((f"{prefix}.{key}", json.dumps(to_jsonable(getattr(result, key)))))

    @staticmethod
    def summary(result: GateResult) -> str:
        return (f"{result.name}: {result.outcome.value} estimate={result.estimate:.4f} "
                f"CI=[{result.ci[0]:.4f}, {result.ci[1]:.4f}] threshold={result.threshold} n={result.n} "
                f"n_failed={result.n_failed} ({result.test}) {result.detail}")

    def finish(self) -> None:
        """Called after the test body: fail on any FAIL, then xfail/fail on any INCONCLUSIVE."""
        failed = [r for r in self.results if r.outcome is Outcome.FAIL]
        if failed:
            pytest.fail("\n".join(self.summary(r) for r in failed), pytrace=False)
        open_ = [r for r in self.results if r.outcome is Outcome.INCONCLUSIVE]
        if open_:
            text = "\n".join("INCONCLUSIVE " + self.summary(r) for r in open_)
            if self._inconclusive == "fail":
                pytest.fail(text, pytrace=False)
            pytest.xfail(text)

    def skip(self, reason: str, *, applicable: bool = True) -> None:
        """Skip this test's gates; ``applicable=False`` marks a gate that cannot apply to this model
        (never a failure under --strict unless the release profile requires it)."""
        pytest.skip(reason if applicable else NOT_APPLICABLE + reason)


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
    path = Path(given) if given else Path(pytestconfig.rootpath) / "fixtures"
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
            sink({"type": "source", "id": source.id, "protocol": source.protocol, "model": source.model,
                  "source": source.label, "items_sha256": run.items_sha256})
            for k, sample in enumerate(run.samples()):  # the per-sample drill-down (samples.jsonl)
                if k >= MAX_SAMPLES_PER_SOURCE:
                    break
                sink({"type": "sample", "protocol": source.protocol, "model": source.model, "source": source.label,
                      **sample})
        return built[source.id]

    return get


@pytest.fixture
def run(source: Source, musiceval_runs):
    """The :class:`~musiceval.protocols.base.Protocol` of this test's declared answer source; a
    source its protocol refuses as a whole (an EMO_valence file that holds arousal questions) is
    not applicable, with the reason."""
    from musiceval.metrics.mir import TaskError

    try:
        return musiceval_runs(source)
    except TaskError as exc:
        pytest.skip(f"{NOT_APPLICABLE}{source.id}: {exc}")


@pytest.fixture
def gate(request: pytest.FixtureRequest, musiceval_suite: SuiteConfig) -> PytestGate:
    """Record release gates for this test; see :class:`musiceval.gates.Gate` for the methods."""
    config = request.config
    defaults = musiceval_suite.thresholds["defaults"]
    inconclusive = _opt(config, "musiceval_inconclusive") or defaults["inconclusive"]
    gate_config = GateConfig(alpha=float(defaults["alpha"]), n_resamples=int(defaults["n_resamples"]),
                             ci_method=str(defaults["ci_method"]), seed=int(_opt(config, "musiceval_seed", 0)),
                             protocol=_protocol_of(request.node), power=float(defaults["power"]))
    live = musiceval_suite.live_models()
    subject = live[0].name if live and "live_music_lm" in request.fixturenames else ""
    g = PytestGate(gate_config, sink=_sink(config), nodeid=plain_nodeid(request.node), item=request.node,
                   inconclusive=inconclusive, strict=_strict(config), suite=musiceval_suite, subject=subject)
    request.node._musiceval_gate = g
    return g


# ----------------------------------------------------------------------------- merge and report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = getattr(config, "_musiceval", None)
    if state is None or _is_worker(config):
        return
    from musiceval.report import write_run

    parts = state["results_dir"] / "parts"
    if not parts.is_dir() or not any(parts.glob(f"{state['session']}-*.jsonl")):
        _release_unused_results_dir(state)
        return
    meta = {**state["meta"], "session": state["session"],
            "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "exitstatus": int(exitstatus)}
    run = write_run(state["results_dir"], meta, session=state["session"])
    state["run"] = run
    suite: SuiteConfig = state["suite"]
    declared = {m.name for m in suite.models}
    decided = [g for g in run["gates"] if g["outcome"] in _DECIDED and g.get("model") in declared]
    state["empty"] = not decided and not _opt(config, "musiceval_allow_empty", False)
    if state["empty"] and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    state["missing_required"] = [p for p in suite.required
                                 if not any(g["outcome"] == "PASS" and _matches(g.get("check", ""), p) for g in run["gates"])]
    if _strict(config) and session.exitstatus == 0 and (run["holm_failures"] or state["missing_required"]):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    try:
        (state["results_dir"] / ".session.lock").unlink()
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


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = getattr(config, "_musiceval", None)
    if not state or "run" not in state:
        return
    run = state["run"]
    tr = terminalreporter
    tr.section("musiceval gates")
    for g in run["gates"]:
        est = g.get("estimate")
        est_s = f"{est:+.4f}" if isinstance(est, (int, float)) else "   -   "
        n_failed = f" (n_failed={g['n_failed']})" if g.get("n_failed") else ""
        tr.write_line(f"{g['outcome']:<12} {est_s}  {g.get('protocol', ''):<14} {g['name']}{n_failed}")
    tr.write_line(", ".join(f"{v} {k}" for k, v in run["counts"].items()))
    strict = _strict(config)
    for name in run["holm_failures"]:
        tr.write_line(f"PASS not significant after Holm correction: {name}" + (" (fails under --strict)" if strict else ""))
    for pattern in state.get("missing_required", []):
        tr.write_line(f"required check without a PASS: {pattern}" + (" (fails under --strict)" if strict else ""))
    if state.get("empty"):
        tr.write_line("musiceval: FAILED: no gate decided anything about the declared model(s) "
                      f"({', '.join(m.name for m in state['suite'].models) or 'none declared'}): everything skipped, "
                      "INCONCLUSIVE or a FINDING; pass --musiceval-allow-empty to accept that", red=True, bold=True)
    tr.write_line(f"results: {state['results_dir'] / 'results.json'}")
    tr.write_line(f"report:  {state['results_dir'] / 'report.html'}")
