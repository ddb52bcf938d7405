"""Options and the session state every other part reads: the ``--musiceval-*`` options, the state of
this process's sessions, the constants of skip and finding reasons.
"""
from __future__ import annotations

import os
from typing import Any

import pytest

from musiceval.skip_reasons import NOT_APPLICABLE  # noqa: F401  (the plugin's parts import it from here)

DATASET_HINTS = {
    "fma": "download fma_metadata.zip and fma_small.zip from https://github.com/mdeff/fma and unzip into <data-dir>/fma",
    "musicnet": "download MusicNet from https://zenodo.org/records/5120004 and unpack into <data-dir>/musicnet",
    "musicqa": "download MusicQA (MTG eval split) from https://huggingface.co/datasets/mu-llama/MusicQA into <data-dir>/musicqa",
    "muchomusic": "download muchomusic.csv and the audio from https://github.com/mulab-mir/muchomusic into <data-dir>/muchomusic",
    "nsynth": "download nsynth-test.jsonwav.tar.gz from https://magenta.tensorflow.org/datasets/nsynth into <data-dir>/nsynth",
    "cmi-bench": "clone https://github.com/nicolaus625/CMI-bench and follow its data instructions into <data-dir>/cmi-bench",
}
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
    add("--musiceval-model", default=None, metavar="MODEL_SPEC",
        help="override the config's model under test: recorded:FILE (an answer file, protocol detected from its "
             "content), recorded:DIR (CMI-Bench outputs), or a live spec hf:ID_OR_DIR, openai-compatible:URL#MODEL, "
             "text-only:MODEL_SPEC")
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
             "INCONCLUSIVE exits 1 (whatever --musiceval-inconclusive says), and a PASS that does not survive "
             "Holm correction fails the session; a skipped self-check never decides the word; pytest's own "
             "--strict does the same")
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
    add("--musiceval-repeats", type=int, default=None, metavar="K",
        help="with --musiceval-benchmarks: ask the live model every item K times at its temperature (set one with "
             "--musiceval-model-args temperature=0.7), each repeat with its own seed; every gate uses all K answers, "
             "the interval resampling clips (also repeats = K in the config's [[model]]; default 1)")
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


