"""Collection: the release gates shipped in the package, parametrization over the declared answer
sources, and what each test is about (its subject).
"""
from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import pytest

from musiceval.pytest_plugin.options import NOT_APPLICABLE, NOT_GIVEN, _is_worker, _state
from musiceval.suite.config import AnswerSource, SuiteConfig
from musiceval.verdict import MODEL, SELF_CHECK

# ----------------------------------------------------------------------------- the gates of the package


#: loads the module of the release gates (:mod:`musiceval.evals.release_gates`); given by the module
#: pytest registers (:mod:`musiceval.evals.plugin`), which sits above both the plugin and the gates
_release_gates: Callable[[], ModuleType] | None = None


def provide_release_gates(loader: Callable[[], ModuleType]) -> None:
    """Name how to load the release gates a suite config file is collected as."""
    global _release_gates
    _release_gates = loader


class ReleaseGates(pytest.Module):
    """The suite config file collected as the module of musiceval's release gates
    (:mod:`musiceval.evals.release_gates`): in a repository that holds only a ``musiceval.toml`` and
    its answer files, ``pytest`` runs every gate on the model the config declares. A repository that
    also has an entry module (``evals/test_musiceval.py``, which ``musiceval init`` writes) runs them
    once: the entry module's wins."""

    def _getobj(self):
        if _release_gates is None:
            raise pytest.UsageError("musiceval's release gates are not registered: load the plugin through its "
                                    "entry point (-p musiceval.evals.plugin), not -p musiceval.pytest_plugin")
        return _release_gates()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = getattr(parent.config, "_musiceval", None)
    suite = state["suite"] if state else None
    if suite is None or suite.path is None or not suite.models:
        return None
    if file_path.resolve() != Path(suite.path).resolve():
        return None
    return ReleaseGates.from_parent(parent, path=file_path)


def _from_package(item: pytest.Item) -> bool:
    """A release gate: a test defined in the package (:mod:`musiceval.evals` or a protocol's home)."""
    return str(getattr(getattr(item, "function", None), "__module__", "")).startswith("musiceval.")


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
    self-checks are on; a check of the scorer of a declared source (``musiceval_scorer_check``: an
    LLM judge's own gates) always runs with it."""
    state = _state(config)
    items[:] = _dedupe_release_gates(items)
    keep, dropped = [], []
    for item in items:
        _inherit_module_marks(item)
        subject, _ = _subject_of(item, state["suite"])
        source = getattr(getattr(item, "callspec", None), "params", {}).get("source")
        kept = isinstance(source, AnswerSource) and is_scorer_check(item)  # a judged source's own judge gates
        if subject in (SELF_CHECK, NOT_GIVEN) and not state["self_checks"] and state["suite"].models and not kept:
            dropped.append(item)
            continue
        keep.append(item)
        if isinstance(source, AnswerSource):
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
        return (MODEL, source.model) if isinstance(source, AnswerSource) else (NOT_GIVEN, "")
    live = suite.live_models()
    names = set(getattr(item, "fixturenames", ()))
    if "live_music_lm" in names:
        return (MODEL, live[0].name) if live else (SELF_CHECK, "")
    if ("music_lm" in names or item.get_closest_marker("musiceval_live_model") is not None) and not live:
        return NOT_GIVEN, ""
    return MODEL, live[0].name if live else suite.models[0].name if len(suite.models) == 1 else ""


def is_scorer_check(item: pytest.Item) -> bool:
    """Whether ``item`` checks the scorer of a declared source (marked ``musiceval_scorer_check``: an
    LLM judge's own gates), which runs with that source and is reported above the model's gates."""
    return item.get_closest_marker("musiceval_scorer_check") is not None


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


