"""The musiceval pytest plugin: options, the suite config, parametrization over the declared answers,
the ``gate`` fixture, and one merged report per session.

Registered under the ``pytest11`` entry point (through :mod:`musiceval.evals.plugin`, which also hands
it the release gates to collect), so any project that installs musiceval gets it. Every
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

The parts, each a module of this package: :mod:`.options` (options and session state),
:mod:`.session` (start of a session), :mod:`.collection` (the release gates, parametrization, each
test's subject), :mod:`.outcomes` (what a test's outcome means; a known error as one line),
:mod:`.fixtures`, :mod:`.progress` (a line per finished answer source), :mod:`.finish` (merge,
artefacts, the verdict), :mod:`.junit` (the JUnit file written whole or not at all) and
:mod:`.redaction` (no credential in a test report). This module is what pytest registers: it names
every hook and fixture of the parts.
"""
from __future__ import annotations

from musiceval.pytest_plugin.collection import (  # noqa: F401
    plain_nodeid,
    pytest_collect_file,
    pytest_collection_modifyitems,
    pytest_generate_tests,
)
from musiceval.pytest_plugin.finish import (  # noqa: F401
    pytest_sessionfinish,
    pytest_terminal_summary,
    pytest_unconfigure,
)
from musiceval.pytest_plugin.fixtures import (  # noqa: F401
    data_dir,
    embedding_cache,
    fixtures_dir,
    gate,
    model_spec,
    musiceval_cache_dir,
    musiceval_refuse,
    musiceval_rootdir,
    musiceval_runs,
    musiceval_seed,
    musiceval_suite,
    musiceval_test_id,
    pytest_timeout_set_timer,
    run,
    strict,
    thresholds,
)
from musiceval.pytest_plugin.options import NOT_APPLICABLE, pytest_addoption  # noqa: F401
from musiceval.pytest_plugin.outcomes import (  # noqa: F401
    pytest_collectreport,
    pytest_runtest_call,
    pytest_runtest_logreport,
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_sessionstart,
    pytest_testnodedown,
)
from musiceval.pytest_plugin.session import (  # noqa: F401
    pytest_configure,
    pytest_configure_node,
    pytest_report_header,
    rootpath,
)
