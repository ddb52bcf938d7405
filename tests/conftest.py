"""Unit-test configuration: the quick loop, the order tests start in, pytester for the plugin tests,
and no files left in the checkout.

``pytest tests/ -m quick`` is the loop to run before each commit: the modules in
:data:`QUICK_MODULES` (the core of every package, each module a few seconds at most), minus any
test marked ``slow``. With ``-m quick`` alone the other modules are not even imported, so the loop
does not pay for their imports (torch, transformers). A module belongs in the list when its tests
need no model loads, subprocesses or reference implementations that take seconds.

Tests marked ``slow`` start first, so under ``-n 2`` the long ones do not end up alone at the tail.

Subprocesses (pytester's runs of the plugin, the CLI) import this checkout's ``musiceval``, not
whichever checkout the virtual environment's editable install points at.

The pytest sessions the tests start (scratch projects, ``pytest evals/`` of the docs) skip the
third-party plugins none of them uses (hypothesis, pytest-benchmark, anyio: a quarter of a small
session's start-up) through ``$PYTEST_ADDOPTS``, unless the caller set the variable.

The on-disk caches of the commands (``$MUSICEVAL_CACHE``: embeddings, responses) go to a folder
under pytest's temporary directory, one per worker and session, unless the caller set the variable:
a test run never fills the user's own cache, and a second run is as cold as the first.

Hypothesis keeps its example database (the failing examples it replays first) in
``$HYPOTHESIS_STORAGE_DIRECTORY``, by default the user's cache folder, not ``.hypothesis/`` in the
working directory, so ``pytest tests/`` writes only under pytest's temporary directories.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
# PyYAML's C extension is loaded once per process: a test using pytester drops from sys.modules every
# module first imported during it (yaml, through transformers or vcrpy), and the next cassette write
# then pairs a fresh yaml with the old extension ("expected SCALAR, SEQUENCE-START, ..."). Imported
# here, before any test, yaml stays one module for the whole session.
import yaml  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
if os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] != str(ROOT):
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY",
                      str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "musiceval" / "hypothesis"))

pytest_plugins = ["pytester"]

#: the quick loop (``-m quick``): modules relative to tests/
QUICK_MODULES = frozenset({
    "catalogue/test_sources.py", "catalogue/test_prepare.py", "catalogue/test_fma.py", "catalogue/test_musicnet.py",
    "data/test_cmibench_fast_paths.py",
    "data/test_mmau_rul.py", "data/test_muchomusic.py", "data/test_musicqa.py",
    "data/test_nsynth.py", "vocab/test_audioset.py", "vocab/test_choice_prompts.py", "vocab/test_factual_prompts.py",
    "encoders/test_length_batches.py",
    "extraction/test_rules.py",
    "llm/test_client.py", "llm/test_extract.py", "llm/test_rewrite.py",
    "metrics/test_agreement.py", "metrics/test_choice.py", "metrics/test_sets.py", "metrics/test_lexical_corpus.py",
    "metrics/test_mir_metrics.py", "metrics/test_mir_tasks.py", "metrics/test_mmau_rul.py", "metrics/test_triplets.py",
    "models/test_model_args.py", "models/test_registry_recorded_textonly.py",
    "parsers/test_guzheng.py", "parsers/test_key.py", "parsers/test_labels.py", "parsers/test_lyrics.py",
    "parsers/test_melody.py", "parsers/test_normalise_cmi_chain.py", "parsers/test_numbers.py", "parsers/test_times.py",
    "protocols/test_answer_reading.py", "protocols/test_formats.py", "protocols/test_triplet_formats.py",
    "protocols/test_protocols.py",
    "protocols/test_score_choice.py", "protocols/test_score_factual.py",
    "protocols/test_checks.py", "suite/test_config.py",
    "test_answer_blind.py", "test_chance_order.py", "test_proportion_intervals.py",
    "test_audio.py", "test_cli.py", "test_compare.py", "test_conditions.py", "test_gates.py", "test_layers.py",
    "test_quick_loop.py", "test_redact.py", "test_report.py", "test_report_security.py", "test_stats.py",
    "test_question_control.py", "test_doctests.py",
})
_TESTS = Path(__file__).resolve().parent


def _quick_only(config: pytest.Config) -> bool:
    return (config.getoption("markexpr", "") or "").strip() == "quick"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``-m quick`` alone, modules outside the quick loop are not imported at all."""
    if _quick_only(config) and collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        try:
            rel = collection_path.resolve().relative_to(_TESTS).as_posix()
        except ValueError:
            return None
        return rel not in QUICK_MODULES or None
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        try:
            rel = Path(item.fspath).resolve().relative_to(_TESTS).as_posix()
        except ValueError:
            continue
        if rel in QUICK_MODULES and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.quick)
    # slow tests first (a stable sort keeps every worker's collection identical, as xdist requires)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


#: the plugins the tests' own pytest sessions do without (see the module docstring)
SUBSESSION_ADDOPTS = "-p no:hypothesispytest -p no:benchmark -p no:anyio"


@pytest.fixture(scope="session")
def wheel_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``bin/`` of a fresh venv with the wheel of this checkout installed (no network), built once per
    worker for every journey taken from outside the checkout (:mod:`tests.wheel_env`)."""
    from tests import wheel_env

    work = tmp_path_factory.mktemp("wheel")
    bin_dir = wheel_env.fresh_venv(work / "venv")
    wheel_env.install(bin_dir, str(wheel_env.build_wheel(work)))
    return bin_dir


@pytest.fixture(scope="session", autouse=True)
def _subprocess_environment(tmp_path_factory: pytest.TempPathFactory):
    """``$PYTEST_ADDOPTS`` and ``$MUSICEVAL_CACHE`` for the processes the tests start, each only
    where the caller did not set it (see the module docstring)."""
    defaults = {"PYTEST_ADDOPTS": SUBSESSION_ADDOPTS, "MUSICEVAL_CACHE": str(tmp_path_factory.mktemp("musiceval-cache"))}
    added = {name: value for name, value in defaults.items() if not os.environ.get(name)}
    os.environ.update(added)
    yield
    for name in added:
        os.environ.pop(name, None)
