"""The fixtures a gate test asks for: ``gate``, ``run``, ``source`` and the session's config, seed,
data and caches.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from musiceval.gates import Gate, GateConfig
from musiceval.pytest_plugin.collection import _subject_of, is_scorer_check, plain_nodeid
from musiceval.pytest_plugin.options import MAX_SAMPLES_PER_SOURCE, NOT_APPLICABLE, _opt, _state, _strict
from musiceval.pytest_plugin.outcomes import _matches, _protocol_of, _sink
from musiceval.pytest_plugin.progress import ITEMS_PROPERTY
from musiceval.pytest_plugin.session import rootpath
from musiceval.records import GateResult, Outcome, to_jsonable
from musiceval.redact import redact
from musiceval.suite.config import AnswerSource, SuiteConfig
from musiceval.verdict import MODEL, SELF_CHECK

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

        scorer_check = is_scorer_check(item)

        def tagged(row: dict[str, Any]) -> None:  # every row says whom it is about
            if row.get("type") in ("gate", "scores"):
                row = {**row, "subject": subject if subject == SELF_CHECK else MODEL}
                if scorer_check:  # a self-check of the scorer of the declared model's answers (an LLM judge)
                    row["scorer_check"] = True
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
        """The suite config's ``[checks]`` rule for ``check`` (used by musiceval.protocols.checks)."""
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
def musiceval_rootdir(pytestconfig: pytest.Config) -> Path:
    """The session's rootdir, the same on every xdist worker (:func:`~musiceval.pytest_plugin.session.rootpath`)."""
    return rootpath(pytestconfig)


@pytest.fixture
def musiceval_test_id(request: pytest.FixtureRequest) -> str:
    """The test's node id as ``pytest <id>`` selects it (no xdist group suffix): what cassettes are keyed by."""
    return plain_nodeid(request.node)


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

    def get(source: AnswerSource):
        if source.id not in built:
            run = build_protocol(source, musiceval_suite, seed=musiceval_seed, cache_root=musiceval_cache_dir,
                                 record_mode=_opt(pytestconfig, "musiceval_record_mode", "none"))
            built[source.id] = run
            evaluated = run.evaluate()
            excluded = evaluated.get("excluded") or {}
            sink({"type": "source", "id": source.id, "protocol": source.protocol, "model": source.model,
                  "source": source.label, "items_sha256": run.items_sha256, "file": source.path.name,
                  **run.accounting.as_row(), "excluded": excluded})
            declared = source.model in {m.name for m in musiceval_suite.models}
            if declared:  # every metric's per-item scores (scores.jsonl.xz), of the declared model's answers
                record_scored(run, evaluated, sink)
            # the per-sample drill-down (samples.jsonl), of the declared model's answers (not the baseline's)
            for k, sample in enumerate(run.samples() if declared else ()):
                if k >= MAX_SAMPLES_PER_SOURCE:
                    break
                sink({"type": "sample", "protocol": source.protocol, "model": source.model, "source": source.label,
                      **sample})
        return built[source.id]

    return get


def record_scored(run: Any, evaluated: dict[str, Any], sink) -> None:
    """Record the Correct per-item scores of every metric ``run`` scored (those
    :meth:`~musiceval.protocols.base.Protocol.evaluate` gave a mean for), as ``scores`` rows of the
    declared model's source: a later run's regression gates against this results directory
    (``[baseline] results``) and ``musiceval compare`` pair every metric by item, not only the ones a
    gate of this run consumed (a captioning task's BLEU, CIDEr-D ... beside its headline BERTScore;
    docs/regression-gates.md). No gate name: the rows are what was scored, not a gate's inputs."""
    import math

    def tagged(row: dict[str, Any]) -> None:
        sink({**row, "model": run.model, "source": run.source, "subject": MODEL,
              "higher_is_better": run.metric_info(row["metric"]).higher_is_better})

    recorder = Gate(GateConfig(protocol=run.name), sink=tagged)
    for metric in run.metrics:
        mean = evaluated.get(metric)
        if not isinstance(mean, (int, float)) or isinstance(mean, bool) or not math.isfinite(mean):
            continue  # not scored here (a model or input it needs is absent: evaluate() says why)
        try:
            scores = run.scores(metric, "correct")
        except (FileNotFoundError, ImportError, KeyError, ValueError):
            continue
        recorder.record_scores(scores, protocol=run.name)


@pytest.fixture
def run(request: pytest.FixtureRequest, source: AnswerSource, musiceval_runs):
    """The :class:`~musiceval.protocols.base.Protocol` of this test's declared answer source; a
    source its protocol refuses as a whole (an EMO_valence file that holds arousal questions) is
    not applicable, with the reason. Building a source (read, parse, score once per worker) is not
    cut by one test's pytest-timeout: the timer pauses while it runs."""
    from musiceval.protocols.mir.metrics.tasks import TaskError

    with _timeout_paused(request.node):
        try:
            built = musiceval_runs(source)
        except TaskError as exc:
            pytest.skip(f"{NOT_APPLICABLE}{source.id}: {exc}")
    request.node.user_properties.append((ITEMS_PROPERTY, built.accounting.answered))  # the session's progress lines
    return built


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


