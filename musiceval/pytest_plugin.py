"""The musiceval pytest plugin: options, markers, the ``gate`` fixture, and one merged report.

Registered under the ``pytest11`` entry point, so any repository that installs musiceval gets it.

Results flow: every process (the controller or each xdist worker) appends JSON rows to
``<results-dir>/parts/<worker>.jsonl`` through its gates; the controller, once all workers are
done, merges the parts into ``results.json``, ``report.md`` and ``report.html``
(:mod:`musiceval.report`). Gate values also go to ``record_property`` so JUnit XML carries them.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from musiceval.gates import Gate, GateConfig
from musiceval.records import GateResult, Outcome, to_jsonable
from musiceval.thresholds import load_thresholds

DATASET_HINTS = {
    "fma": "download fma_metadata.zip and fma_small.zip from https://github.com/mdeff/fma and unzip into <data-dir>/fma",
    "musicnet": "download MusicNet from https://zenodo.org/records/5120004 and unpack into <data-dir>/musicnet",
    "musicqa": "download MusicQA (MTG eval split) from https://huggingface.co/datasets/mu-llama/MusicQA into <data-dir>/musicqa",
    "muchomusic": "download muchomusic.csv and the audio from https://github.com/mulab-mir/muchomusic into <data-dir>/muchomusic",
    "nsynth": "download nsynth-test.jsonwav.tar.gz from https://magenta.tensorflow.org/datasets/nsynth into <data-dir>/nsynth",
    "cmi-bench": "clone https://github.com/nicolaus625/CMI-bench and follow its data instructions into <data-dir>/cmi-bench",
}

_STRICT_HELP = (
    "release-gate mode: every skipped or inconclusive gate fails, and a PASS that does not "
    "survive Holm correction across the run fails the session (also enables pytest's own strict mode)"
)


# ----------------------------------------------------------------------------- options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("musiceval", "musiceval: music LM evaluation gates")
    group.addoption("--model", default="recorded", help="model to evaluate: 'recorded' (embedded recorded responses, the default), recorded:FILE, hf:ID_OR_DIR, openai-compatible:URL#MODEL, text-only:SPEC")
    group.addoption("--data-dir", default=os.environ.get("MUSICEVAL_DATA"), help="root of downloaded datasets (env MUSICEVAL_DATA)")
    group.addoption("--thresholds", default=None, help="gate thresholds TOML (default: evals/thresholds.toml under the rootdir)")
    group.addoption("--results-dir", default=None, help="where results.json and the reports go (default: .musiceval/results/<timestamp>)")
    group.addoption("--seed", type=int, default=0, help="seed of every random choice in the run (default 0); written into the results")
    group.addoption("--inconclusive", choices=("xfail", "fail"), default=None, help="how an INCONCLUSIVE gate is reported (default from thresholds [defaults].inconclusive, else xfail)")
    group.addoption("--fixtures-dir", default=None, help="embedded data directory (default: fixtures/ under the rootdir)")
    group.addoption("--concurrency", type=int, default=8, help="requests in flight for openai-compatible models (default 8)")
    group.addoption("--cache-dir", default=os.environ.get("MUSICEVAL_CACHE"), help="embedding and response caches (default: .musiceval/cache; env MUSICEVAL_CACHE)")
    try:
        group.addoption("--strict", action="store_true", default=False, help=_STRICT_HELP)
    except ValueError:  # pytest >= 9 defines --strict itself: share it (its strictness is welcome too)
        group.addoption("--musiceval-strict", action="store_true", default=False, help=_STRICT_HELP + "; --strict does the same")


def _strict(config: pytest.Config) -> bool:
    return bool(config.getoption("strict", False) or config.getoption("musiceval_strict", False))


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _worker_id(config: pytest.Config) -> str:
    return getattr(config, "workerinput", {}).get("workerid", "main")


# ----------------------------------------------------------------------------- configure


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped with the reason otherwise (fails under --strict)")
    config.addinivalue_line("markers", "llm(cassette=None): needs a recorded cassette or OPENAI_API_KEY; skipped with the recording command otherwise")
    config.addinivalue_line("markers", "dataset(name, path=None): needs <data-dir>/<name>; skipped with the download instruction otherwise")
    config.addinivalue_line("markers", "slow: slower than a few seconds; deselect with -m 'not slow'")
    if _is_worker(config):
        _share_cpus_between_workers()
        results_dir = Path(config.workerinput["musiceval_results_dir"])
        meta = config.workerinput["musiceval_meta"]
    else:
        given = config.getoption("results_dir")
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        results_dir = Path(given) if given else Path(config.rootpath) / ".musiceval" / "results" / stamp
        shutil.rmtree(results_dir / "parts", ignore_errors=True)
        meta = _run_meta(config)
    config._musiceval = {"results_dir": results_dir, "meta": meta}  # type: ignore[attr-defined]
    try:  # live-model fixtures (music_lm, response_cache) when the models package is present
        import musiceval.models.fixtures as model_fixtures
    except ImportError:
        pass
    else:
        if not config.pluginmanager.is_registered(model_fixtures):
            config.pluginmanager.register(model_fixtures, "musiceval-models")


def _share_cpus_between_workers() -> None:
    """Give each xdist worker its share of the cores for torch/BLAS threads.

    Four workers each running torch with every core oversubscribe the CPU many times over (tiny
    models become ~20x slower). Set before torch is imported; an explicit OMP_NUM_THREADS wins.
    """
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    threads = str(max(1, (os.cpu_count() or 1) // max(workers, 1)))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


def pytest_configure_node(node: Any) -> None:  # xdist hook (controller side)
    state = node.config._musiceval
    node.workerinput["musiceval_results_dir"] = str(state["results_dir"])
    node.workerinput["musiceval_meta"] = state["meta"]


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for pkg in ("musiceval", "numpy", "torch", "transformers", "pytest"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _run_meta(config: pytest.Config) -> dict[str, Any]:
    return {
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "model": config.getoption("model"),
        "seed": config.getoption("seed"),
        "strict": _strict(config),
        "thresholds": str(_thresholds_path(config)),
        "versions": _versions(),
        "args": [a for a in config.invocation_params.args],
    }


def _thresholds_path(config: pytest.Config) -> Path:
    given = config.getoption("thresholds")
    return Path(given) if given else Path(config.rootpath) / "evals" / "thresholds.toml"


# ----------------------------------------------------------------------------- result sink


def _sink(config: pytest.Config):
    state = config._musiceval  # type: ignore[attr-defined]
    parts = state["results_dir"] / "parts"
    path = parts / f"{_worker_id(config)}.jsonl"

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
        if not have_cassette and not os.environ.get("OPENAI_API_KEY"):
            where = f"cassette {cassette!r} is missing" if cassette else "no cassette is configured"
            return (f"needs the suite's LLM: {where} and OPENAI_API_KEY is unset; record it with "
                    f"MUSICEVAL_RECORD=1 OPENAI_API_KEY=... pytest {item.nodeid}")
    for mark in item.iter_markers("dataset"):
        name = mark.args[0] if mark.args else mark.kwargs["name"]
        data_dir = config.getoption("data_dir")
        sub = mark.kwargs.get("path", name)
        if not data_dir or not (Path(data_dir) / sub).exists():
            hint = DATASET_HINTS.get(name, f"put it under <data-dir>/{sub}")
            where = f"{data_dir}/{sub}" if data_dir else "--data-dir (not given)"
            return f"dataset {name!r} not found at {where}: {hint}; then pass --data-dir"
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    reason = _marker_skip_reason(item)
    if reason:
        pytest.skip(reason)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    outcome = yield
    report = outcome.get_result()
    if "gate" not in getattr(item, "fixturenames", ()) or not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    _sink(item.config)({"type": "gate", "name": item.nodeid, "outcome": Outcome.SKIPPED.value, "detail": reason,
                        "nodeid": item.nodeid, "test": "skipped", "protocol": _protocol_of(item)})
    if _strict(item.config):
        report.outcome = "failed"
        report.longrepr = f"--strict: a release gate may not be skipped: {reason}"


def _protocol_of(item: pytest.Item) -> str:
    """The test module's ``PROTOCOL`` constant, else its file name without ``test_``."""
    protocol = getattr(getattr(item, "module", None), "PROTOCOL", None)
    return protocol if isinstance(protocol, str) else Path(str(item.fspath)).stem.removeprefix("test_")


# ----------------------------------------------------------------------------- fixtures


class PytestGate(Gate):
    """A :class:`~musiceval.gates.Gate` that fails, xfails or skips the running test."""

    def __init__(self, config: GateConfig, *, sink, nodeid: str, record_property, inconclusive: str, strict: bool):
        self._record_property = record_property
        self._inconclusive = "fail" if strict else inconclusive
        self._strict = strict
        super().__init__(config, sink=sink, on_result=self._on_result, nodeid=nodeid)

    def _on_result(self, result: GateResult) -> None:
        prefix = f"gate[{result.name}]"
        self._record_property(f"{prefix}.outcome", result.outcome.value)
        for key in ("estimate", "ci", "p_value", "n", "threshold", "test", "seed"):
            self._record_property(f"{prefix}.{key}", to_jsonable(getattr(result, key)))
        summary = (f"{result.name}: {result.outcome.value} estimate={result.estimate:.4f} "
                   f"CI=[{result.ci[0]:.4f}, {result.ci[1]:.4f}] threshold={result.threshold} "
                   f"n={result.n} ({result.test}) {result.detail}")
        if result.outcome is Outcome.FAIL:
            pytest.fail(summary, pytrace=False)
        if result.outcome is Outcome.INCONCLUSIVE:
            if self._inconclusive == "fail":
                pytest.fail("INCONCLUSIVE " + summary, pytrace=False)
            pytest.xfail("inconclusive: " + summary)

    def skip(self, reason: str) -> None:
        """Skip this gate with a reason; the plugin turns it into a failure under --strict."""
        pytest.skip(reason)


@pytest.fixture(scope="session")
def thresholds(pytestconfig: pytest.Config) -> dict[str, Any]:
    """The parsed thresholds TOML (``--thresholds``, default ``evals/thresholds.toml``)."""
    return load_thresholds(_thresholds_path(pytestconfig))


@pytest.fixture(scope="session")
def musiceval_seed(pytestconfig: pytest.Config) -> int:
    return int(pytestconfig.getoption("seed"))


@pytest.fixture(scope="session")
def model_spec(pytestconfig: pytest.Config) -> str:
    return str(pytestconfig.getoption("model"))


@pytest.fixture(scope="session")
def strict(pytestconfig: pytest.Config) -> bool:
    return _strict(pytestconfig)


@pytest.fixture(scope="session")
def data_dir(pytestconfig: pytest.Config) -> Path | None:
    given = pytestconfig.getoption("data_dir")
    return Path(given) if given else None


@pytest.fixture(scope="session")
def fixtures_dir(pytestconfig: pytest.Config) -> Path:
    given = pytestconfig.getoption("fixtures_dir")
    path = Path(given) if given else Path(pytestconfig.rootpath) / "fixtures"
    if not path.is_dir():
        raise FileNotFoundError(f"embedded data directory {path} not found; pass --fixtures-dir")
    return path


@pytest.fixture(scope="session")
def musiceval_cache_dir(pytestconfig: pytest.Config) -> Path:
    given = pytestconfig.getoption("cache_dir")
    return Path(given) if given else Path(pytestconfig.rootpath) / ".musiceval" / "cache"


@pytest.fixture(scope="session")
def embedding_cache(musiceval_cache_dir: Path):
    from musiceval.encoders import EmbeddingCache

    return EmbeddingCache(musiceval_cache_dir / "embeddings")


@pytest.fixture
def gate(request: pytest.FixtureRequest, thresholds: dict[str, Any], record_property) -> PytestGate:
    """Record release gates for this test; see :class:`musiceval.gates.Gate` for the methods."""
    config = request.config
    defaults = thresholds.get("defaults", {})
    inconclusive = config.getoption("inconclusive") or defaults.get("inconclusive", "xfail")
    gate_config = GateConfig.from_thresholds(thresholds, seed=int(config.getoption("seed")))
    gate_config = GateConfig(**{**gate_config.__dict__, "protocol": _protocol_of(request.node)})
    return PytestGate(gate_config, sink=_sink(config), nodeid=request.node.nodeid,
                      record_property=record_property, inconclusive=inconclusive, strict=_strict(config))


# ----------------------------------------------------------------------------- merge and report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if _is_worker(config):
        return
    from musiceval.report import write_run

    state = config._musiceval  # type: ignore[attr-defined]
    parts = state["results_dir"] / "parts"
    if not parts.is_dir():
        return
    meta = {**state["meta"], "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "exitstatus": int(exitstatus)}
    run = write_run(state["results_dir"], meta)
    state["run"] = run
    if _strict(config) and run["holm_failures"] and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


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
        tr.write_line(f"{g['outcome']:<12} {est_s}  {g.get('protocol', ''):<14} {g['name']}")
    counts = run["counts"]
    tr.write_line(", ".join(f"{v} {k}" for k, v in counts.items()))
    for name in run["holm_failures"]:
        tr.write_line(f"PASS not significant after Holm correction: {name}" + (" (fails under --strict)" if _strict(config) else ""))
    tr.write_line(f"results: {state['results_dir'] / 'results.json'}")
    tr.write_line(f"report:  {state['results_dir'] / 'report.html'}")
